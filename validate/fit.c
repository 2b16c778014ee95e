/* Alpha-beta fits of collective time against bytes (validate.h). */
#include <math.h>

#include <stdlib.h>

#include "validate.h"

int validate_fit_alpha_beta(const double *x, const double *time, int n, validate_fit *out)
{
	/* Weighted least squares of time = a + b·x with weights 1/time², i.e. on relative
	 * error; bandwidth = 1/b. Normal equations of the 2-parameter linear model. */
	double S = 0, Sx = 0, Sy = 0, Sxx = 0, Sxy = 0;
	int used = 0;
	for (int i = 0; i < n; i++) {
		if (!(time[i] > 0) || !(x[i] >= 0))
			continue;
		double w = 1.0 / (time[i] * time[i]);
		S += w;
		Sx += w * x[i];
		Sy += w * time[i];
		Sxx += w * x[i] * x[i];
		Sxy += w * x[i] * time[i];
		used++;
	}
	if (used < 2)
		return VALIDATE_EINVAL;
	double det = S * Sxx - Sx * Sx, a, b;
	if (!(fabs(det) > 0))
		return VALIDATE_EINVAL;
	b = (S * Sxy - Sx * Sy) / det;
	a = (Sy - b * Sx) / S;
	if (a < 0) {
		/* Latency pinned at 0: the through-origin fit. */
		a = 0;
		b = Sxy / Sxx;
	}
	if (!(b > 0))
		return VALIDATE_EINVAL;
	out->latency = a;
	out->bandwidth = 1.0 / b;
	out->n = used;
	out->max_rel = 0;
	for (int i = 0; i < n; i++) {
		if (!(time[i] > 0) || !(x[i] >= 0))
			continue;
		double rel = fabs(a + b * x[i] - time[i]) / time[i];
		if (rel > out->max_rel)
			out->max_rel = rel;
	}
	return VALIDATE_OK;
}

static int cmp_double(const void *a, const void *b)
{
	const double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double validate_quantile(double *x, int n, double q)
{
	qsort(x, (size_t)n, sizeof *x, cmp_double);
	const double h = (n - 1) * (q < 0 ? 0 : q > 1 ? 1 : q);
	const int lo = (int)h;
	return lo + 1 < n ? x[lo] + (h - lo) * (x[lo + 1] - x[lo]) : x[n - 1];
}
