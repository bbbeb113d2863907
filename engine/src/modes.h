/* SPDX-License-Identifier: MIT */
/*
 * modes.h - the engine's subcommands; each returns the process exit status.
 */
#ifndef IOWALL_MODES_H
#define IOWALL_MODES_H

int mode_memcopy(int argc, char **argv);
int mode_meta(int argc, char **argv);
int mode_smallfiles(int argc, char **argv);
int mode_stream(int argc, char **argv);

#endif
