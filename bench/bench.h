/* Shared by the benchmarks: a monotonic wall clock in seconds, and strict parsing of their
 * numeric arguments (the whole text a number in its range, or an error naming what was
 * expected: "16k" or "2x" is refused, not read as 16 or 2). */
#ifndef SPSIM_BENCH_BENCH_H
#define SPSIM_BENCH_BENCH_H

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline double bench_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* An integer argument of `what` in [lo, hi]; on error says so on stderr and returns false. */
static inline bool bench_long(const char *prog, const char *what, const char *s, long lo, long hi, long *out)
{
	char *end = NULL;
	errno = 0;
	long v = s ? strtol(s, &end, 10) : 0;
	if (!s || end == s || *end != '\0' || isspace((unsigned char)*s) || errno == ERANGE || v < lo || v > hi) {
		fprintf(stderr, "%s: %s: '%s' is not a whole number from %ld to %ld\n", prog, what, s ? s : "", lo, hi);
		return false;
	}
	*out = v;
	return true;
}

/* A real argument of `what` in [lo, hi], finite. */
static inline bool bench_double(const char *prog, const char *what, const char *s, double lo, double hi, double *out)
{
	char *end = NULL;
	errno = 0;
	double v = s ? strtod(s, &end) : 0;
	if (!s || end == s || *end != '\0' || isspace((unsigned char)*s) || errno == ERANGE || !isfinite(v) || v < lo ||
	    v > hi) {
		fprintf(stderr, "%s: %s: '%s' is not a number from %g to %g\n", prog, what, s ? s : "", lo, hi);
		return false;
	}
	*out = v;
	return true;
}

/* The argument of bench/analytic and bench/plan: [MIN_CONFIGS] (default 10000) or --help.
 * Returns -1 to go on with *min_configs set, else the exit status (0 after --help, 2 after
 * an error). */
static inline int bench_min_configs(const char *prog, const char *what, int argc, char **argv, long *min_configs)
{
	*min_configs = 10000;
	if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		printf("usage: %s [MIN_CONFIGS]\n%s until MIN_CONFIGS configurations were evaluated (default 10000);\n"
		       "the last line is `configs_per_second N`.\n",
		       prog, what);
		return 0;
	}
	if (argc > 2 || (argc == 2 && !bench_long(prog, "MIN_CONFIGS", argv[1], 1, 1000000000L, min_configs))) {
		fprintf(stderr, "usage: %s [MIN_CONFIGS]\n", prog);
		return 2;
	}
	return -1;
}

#endif
