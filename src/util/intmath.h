/* Small integer helpers shared by the modules. */
#ifndef SPSIM_UTIL_INTMATH_H
#define SPSIM_UTIL_INTMATH_H

static inline long util_gcd(long a, long b)
{
	while (b) {
		long t = a % b;
		a = b;
		b = t;
	}
	return a;
}

static inline int util_ceil_div(int a, int b) { return (a + b - 1) / b; }

#endif
