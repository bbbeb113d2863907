/* SPDX-License-Identifier: MIT */
/*
 * gate.h - the start barrier: workers arrive and wait, the main thread waits
 * until all have arrived, stamps the release time and lets them go at once.
 * Reusable: a worker that arrives again waits for the next opening.
 */
#ifndef IOWALL_GATE_H
#define IOWALL_GATE_H

#include <pthread.h>

struct gate {
	pthread_mutex_t lock;
	pthread_cond_t arrived;
	pthread_cond_t released;
	unsigned nthreads;
	unsigned ready;
	unsigned long generation;
};

void gate_init(struct gate *g, unsigned nthreads);
void gate_destroy(struct gate *g);
/* Worker: arrive and block until the main thread opens the gate. */
void gate_wait(struct gate *g);
/* Main: block until every worker waits at the gate. */
void gate_await(struct gate *g);
/* Main: after gate_await, let them all go; returns the release time (now_s()). */
double gate_release(struct gate *g);
/* Main: gate_await, then gate_release. */
double gate_open(struct gate *g);

#endif
