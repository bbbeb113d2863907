// SPDX-License-Identifier: MIT
/*
 * iowall-engine - the native workloads of iowall that fio does not cover:
 * the memory-copy ceiling, the metadata phases with per-thread trees and a
 * start barrier, the small-file stream, and the sequential stream of
 * uncached (RWF_DONTCACHE) buffered I/O that fio cannot always generate.  JSON objects on stdout, one per
 * line; errors as {"error", "errno", "errno_name", "path"} and a non-zero
 * exit; bad arguments: one line on stderr and exit status 2.
 */
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "json.h"
#include "modes.h"

#define ENGINE_VERSION "1"

static const char usage[] =
	"usage: iowall-engine MODE [options]   (JSON on stdout, one object per line)\n"
	"  memcopy    --threads N --bytes B [--passes P] [--loops L] [--method movsb|memcpy|best]\n"
	"  meta       --dir D --threads T --files-per-thread F [--dirs-per-thread N] [--size B]\n"
	"             [--shared-dir] [--chmod-mode OCTAL] --phases create,walk,chmod,unlink\n"
	"  smallfiles --dir D --threads T [--size B] [--seconds S] [--files N]\n"
	"             [--fsync none|close] [--files-per-dir N]\n"
	"  stream     --rw read|write --mode buffered|uncached|direct --bs B --file-size B\n"
	"             --files-from LIST [--end-fsync] [--log-ms MS] [--runtime-ms MS]\n"
	"             [--buf-offset B]   (LIST: 'JOB PATH' lines)\n"
	"  version\n";

int main(int argc, char **argv)
{
	struct json j;

	if (argc < 2) {
		fputs("iowall-engine: missing MODE (memcopy, meta, smallfiles, stream, version); "
		      "see iowall-engine --help\n", stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		fputs(usage, stdout);
		return 0;
	}
	if (!strcmp(argv[1], "memcopy"))
		return mode_memcopy(argc - 1, argv + 1);
	if (!strcmp(argv[1], "meta"))
		return mode_meta(argc - 1, argv + 1);
	if (!strcmp(argv[1], "smallfiles"))
		return mode_smallfiles(argc - 1, argv + 1);
	if (!strcmp(argv[1], "stream"))
		return mode_stream(argc - 1, argv + 1);
	if (!strcmp(argv[1], "version") || !strcmp(argv[1], "--version")) {
		json_begin(&j);
		json_str(&j, "engine", "iowall-engine");
		json_str(&j, "version", ENGINE_VERSION);
		json_emit(&j);
		return 0;
	}
	fprintf(stderr, "iowall-engine: unknown mode '%s' "
		"(memcopy, meta, smallfiles, stream, version)\n", argv[1]);
	return EXIT_USAGE;
}
