/* Shared by the benchmarks: a monotonic wall clock in seconds. */
#ifndef SPSIM_BENCH_BENCH_H
#define SPSIM_BENCH_BENCH_H

#include <time.h>

static inline double bench_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

#endif
