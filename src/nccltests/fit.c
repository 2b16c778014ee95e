/* nccltests: least squares for alpha-beta link parameters.
 *
 * Every analytic collective cost in spsim has the form (engine/collectives.c)
 *     time(bytes) = r + s * latency + k(bytes) * (1 / bandwidth)
 * for the link class being fitted, with s the latency-bound steps, k = bytes x a
 * coefficient of the algorithm and group layout, and r what the other link class
 * contributes. With g = 1 / bandwidth the model is linear in (latency, g), so least
 * squares on (time vs bytes) gives both. Residuals are relative, ((model - t) / t)^2:
 * nccl-tests sizes span nine decades and a fit on absolute time would ignore every
 * latency-bound point. */
#include <math.h>
#include <stdlib.h>

#include "nccltests/nccltests.h"

bool nccltests_linfit(const nccltests_point *pts, int n, double *latency, double *bandwidth, config_error *err)
{
	/* normal equations of sum w (s L + k g - y)^2, w = 1/t^2, y = t - r */
	double ss = 0, sk = 0, kk = 0, sy = 0, ky = 0;
	int used = 0;
	for (int i = 0; i < n; i++) {
		const nccltests_point *p = &pts[i];
		if (!(p->time > 0) || !isfinite(p->time))
			continue;
		double w = 1.0 / (p->time * p->time), y = p->time - p->r;
		ss += w * p->s * p->s;
		sk += w * p->s * p->k;
		kk += w * p->k * p->k;
		sy += w * p->s * y;
		ky += w * p->k * y;
		used++;
	}
	if (used < 2)
		return config_fail(err, "%d usable point%s, a latency and a bandwidth need at least two sizes", used,
				   used == 1 ? "" : "s");
	if (!(kk > 0))
		return config_fail(err, "the modelled time does not depend on this bandwidth, so the points cannot "
				   "determine it");
	double L, g;
	double det = ss * kk - sk * sk;
	if (ss > 0 && det > 1e-12 * ss * kk) {
		L = (sy * kk - ky * sk) / det;
		g = (ss * ky - sk * sy) / det;
	} else if (ss > 0) {
		return config_fail(err, "the sizes cannot separate latency from bandwidth (every point has the same "
				   "bytes per latency step); give at least two different sizes");
	} else {
		L = 0; /* the model has no latency term here */
		g = ky / kk;
	}
	if (L < 0) {
		/* physically a latency is >= 0: pin it and refit the slope */
		L = 0;
		g = ky / kk;
	}
	if (!(g > 0) || !isfinite(g))
		return config_fail(err, "the times do not grow with the message size (only latency-bound sizes?); give "
				   "sizes up to several MiB");
	*latency = L;
	*bandwidth = 1.0 / g;
	return true;
}

static void residuals(nccltests_model_fn fn, void *ctx, const double *times, int n, double L, double B,
		      nccltests_fit *out)
{
	double sum = 0, mx = 0;
	int used = 0;
	for (int i = 0; i < n; i++) {
		if (!(times[i] > 0))
			continue;
		double e = (fn(ctx, i, L, B) - times[i]) / times[i];
		sum += e * e;
		mx = fmax(mx, fabs(e));
		used++;
	}
	out->n_points = used;
	out->rms_rel = used ? sqrt(sum / used) : 0;
	out->max_rel = mx;
}

/* A fit's outcome at (L, B) after `it` Gauss-Newton steps. */
static void fit_result(nccltests_model_fn fn, void *ctx, const double *times, int n, double L, double B, int it,
		       nccltests_fit *out)
{
	out->latency = L;
	out->bandwidth = B;
	out->iterations = it > 50 ? 50 : it;
	out->latency_at_bound = L <= 0;
	residuals(fn, ctx, times, n, L, B, out);
}

/* Linearises the model around (L, B) by probing it: s = dT/dL, k = dT/dg. */
static void linearise(nccltests_model_fn fn, void *ctx, const double *times, int n, double L, double B,
		      nccltests_point *pts)
{
	double g = 1.0 / B;
	double dL = fmax(L * 1e-3, 1e-9);
	double dg = g * 1e-3;
	for (int i = 0; i < n; i++) {
		double f0 = fn(ctx, i, L, B);
		double s = (fn(ctx, i, L + dL, B) - f0) / dL;
		double k = (fn(ctx, i, L, 1.0 / (g + dg)) - f0) / dg;
		/* round-off of an affine model: treat tiny slopes as none */
		if (fabs(s * dL) <= 1e-12 * fabs(f0))
			s = 0;
		if (fabs(k * dg) <= 1e-12 * fabs(f0))
			k = 0;
		pts[i] = (nccltests_point){.time = times[i], .r = f0 - s * L - k * g, .s = s, .k = k};
	}
}

static bool any_k(const nccltests_point *pts, int n)
{
	for (int i = 0; i < n; i++)
		if (pts[i].k != 0 && pts[i].time > 0)
			return true;
	return false;
}

/* The points of a fit of n sizes from (latency0, bandwidth0); NULL (err set) when the
 * start or n is out of range, or out of memory. */
static nccltests_point *fit_points(int n, double latency0, double bandwidth0, config_error *err)
{
	if (n <= 0) {
		config_fail(err, "no points to fit");
		return NULL;
	}
	if (!(bandwidth0 > 0) || !(latency0 >= 0)) {
		config_fail(err, "the starting point needs latency >= 0 and bandwidth > 0");
		return NULL;
	}
	nccltests_point *pts = malloc((size_t)n * sizeof *pts);
	if (!pts)
		config_fail(err, "out of memory");
	return pts;
}

bool nccltests_fit_model(nccltests_model_fn fn, void *ctx, const double *times, int n, double latency0, double bandwidth0,
			 nccltests_fit *out, config_error *err)
{
	nccltests_point *pts = fit_points(n, latency0, bandwidth0, err);
	if (!pts)
		return false;
	double L = latency0, B = bandwidth0;
	linearise(fn, ctx, times, n, L, B, pts);
	if (!any_k(pts, n)) {
		/* At the start another link is the bottleneck (a min() of bandwidths in the model):
		 * restart from a bandwidth low enough to be the bottleneck and let the fit climb. */
		B = bandwidth0 * 1e-2;
		linearise(fn, ctx, times, n, L, B, pts);
	}
	bool ok = true;
	int it;
	for (it = 1; it <= 50; it++) {
		double L1, B1;
		if (!(ok = nccltests_linfit(pts, n, &L1, &B1, err)))
			break;
		bool done = fabs(L1 - L) <= 1e-9 * fmax(L1, 1e-9) && fabs(B1 - B) <= 1e-9 * B1;
		L = L1;
		B = B1;
		if (done)
			break;
		linearise(fn, ctx, times, n, L, B, pts);
		/* the step took the bandwidth past the point where this class is any size's
		 * bottleneck (another link's min() binds everywhere above it): the points cannot
		 * move it further, so the fit ends at that step */
		if (!any_k(pts, n))
			break;
	}
	free(pts);
	if (!ok)
		return false;
	fit_result(fn, ctx, times, n, L, B, it, out);
	return true;
}

bool nccltests_fit_latency(nccltests_model_fn fn, void *ctx, const double *times, int n, double latency0,
			   double bandwidth, nccltests_fit *out, config_error *err)
{
	nccltests_point *pts = fit_points(n, latency0, bandwidth, err);
	if (!pts)
		return false;
	double L = latency0;
	int it;
	for (it = 1; it <= 50; it++) {
		/* sum w (s L - y)^2 with y = t - r - k g, w = 1/t^2, L >= 0 */
		linearise(fn, ctx, times, n, L, bandwidth, pts);
		double ss = 0, sy = 0;
		for (int i = 0; i < n; i++) {
			const nccltests_point *p = &pts[i];
			if (!(p->time > 0) || !isfinite(p->time))
				continue;
			double w = 1.0 / (p->time * p->time);
			ss += w * p->s * p->s;
			sy += w * p->s * (p->time - p->r - p->k / bandwidth);
		}
		double L1 = ss > 0 ? fmax(sy / ss, 0) : 0;
		bool done = ss == 0 || fabs(L1 - L) <= 1e-9 * fmax(L1, 1e-9);
		L = L1;
		if (done)
			break;
	}
	free(pts);
	fit_result(fn, ctx, times, n, L, bandwidth, it, out);
	return true;
}
