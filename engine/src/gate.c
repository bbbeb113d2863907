// SPDX-License-Identifier: MIT
/*
 * gate.c - the start barrier shared by every mode.
 */
#include "gate.h"
#include "timing.h"

void gate_init(struct gate *g, unsigned nthreads)
{
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->arrived, NULL);
	pthread_cond_init(&g->released, NULL);
	g->nthreads = nthreads;
	g->ready = 0;
	g->generation = 0;
}

void gate_destroy(struct gate *g)
{
	pthread_cond_destroy(&g->released);
	pthread_cond_destroy(&g->arrived);
	pthread_mutex_destroy(&g->lock);
}

void gate_wait(struct gate *g)
{
	unsigned long gen;

	pthread_mutex_lock(&g->lock);
	gen = g->generation;
	if (++g->ready == g->nthreads)
		pthread_cond_signal(&g->arrived);
	while (g->generation == gen)
		pthread_cond_wait(&g->released, &g->lock);
	pthread_mutex_unlock(&g->lock);
}

void gate_await(struct gate *g)
{
	pthread_mutex_lock(&g->lock);
	while (g->ready < g->nthreads)
		pthread_cond_wait(&g->arrived, &g->lock);
	pthread_mutex_unlock(&g->lock);
}

double gate_release(struct gate *g)
{
	double t0;

	pthread_mutex_lock(&g->lock);
	g->ready = 0;
	g->generation++;
	t0 = now_s();
	pthread_cond_broadcast(&g->released);
	pthread_mutex_unlock(&g->lock);
	return t0;
}

double gate_open(struct gate *g)
{
	gate_await(g);
	return gate_release(g);
}
