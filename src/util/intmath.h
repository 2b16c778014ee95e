/* Small integer helpers shared by the modules. */
#ifndef SPSIM_UTIL_INTMATH_H
#define SPSIM_UTIL_INTMATH_H

#include <stdbool.h>

static inline long util_gcd(long a, long b)
{
	while (b) {
		long t = a % b;
		a = b;
		b = t;
	}
	return a;
}

/* ceil(a / b) for a >= 0, b > 0, without forming a + b - 1 (which overflows near INT_MAX). */
static inline int util_ceil_div(int a, int b) { return a / b + (a % b != 0); }

/* Overflow-checked products of inputs: false when the exact product does not fit. */
static inline bool util_mul_int(int a, int b, int *out) { return !__builtin_mul_overflow(a, b, out); }
static inline bool util_mul_long(long a, long b, long *out) { return !__builtin_mul_overflow(a, b, out); }

/* The smallest power of two >= n (1 for n <= 1). */
static inline int util_pow2_up(int n)
{
	int x = 1;
	while (x < n)
		x *= 2;
	return x;
}

/* A non-negative double as an int, saturating at INT_MAX instead of undefined behaviour
 * (counts derived from doubles, e.g. ceil(elements / bucket)). */
static inline int util_int_of(double x) { return !(x > 0) ? 0 : x >= 2147483647.0 ? 2147483647 : (int)x; }

#endif
