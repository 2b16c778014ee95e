/* Progress of a sweep: a bar with rate and ETA on a terminal, plain lines in logs. */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "plan/plan.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static const char *hms(double s, char *buf, size_t len)
{
	if (s < 0 || s > 1e8) {
		snprintf(buf, len, "--:--");
		return buf;
	}
	long t = (long)(s + 0.5);
	if (t >= 3600)
		snprintf(buf, len, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
	else
		snprintf(buf, len, "%ld:%02ld", t / 60, t % 60);
	return buf;
}

void plan_progress_start(plan_progress *p, FILE *f, long total, bool quiet)
{
	memset(p, 0, sizeof *p);
	p->f = f;
	p->quiet = quiet || !f;
	p->tty = f && isatty(fileno(f));
	p->total = total;
	p->t0 = now();
	p->last_print = -1;
	p->width = 30;
}

static void draw(plan_progress *p, bool final)
{
	double t = now(), el = t - p->t0;
	double rate = el > 0 ? p->done / el : 0;
	double eta = rate > 0 ? (p->total - p->done) / rate : -1;
	char a[32], b[32], r[32] = "--";
	/* a rate over less than a tenth of a second is the start-up burst, not a rate */
	if (el >= 0.1 || final)
		snprintf(r, sizeof r, "%.2g", rate);
	int pct = p->total ? (int)(100.0 * p->done / p->total) : 100;
	if (p->tty) {
		int fill = p->total ? (int)((double)p->width * p->done / p->total) : p->width;
		char bar[128];
		for (int i = 0; i < p->width; i++)
			bar[i] = i < fill ? '#' : '.';
		bar[p->width] = '\0';
		fprintf(p->f, "\r[%s] %ld/%ld%s%s %3d%%  %s/s  %s %s", bar, p->done, p->total, p->unit ? " " : "",
			p->unit ? p->unit : "", pct, r, final ? "elapsed" : "ETA",
			final ? hms(el, a, sizeof a) : hms(eta, b, sizeof b));
		if (p->failed)
			fprintf(p->f, "  %ld failed", p->failed);
		fputs("\033[K", p->f); /* clear what a longer previous line left */
		if (final)
			fputc('\n', p->f);
	} else {
		const char *unit = p->unit ? p->unit : "points";
		char failed[48] = "";
		if (!p->no_failures)
			snprintf(failed, sizeof failed, ", %ld failed", p->failed);
		fprintf(p->f, "progress: %ld/%ld %s (%d%%)%s, %s %s/s, %s %s\n", p->done, p->total, unit, pct,
			failed, r, unit, final ? "elapsed" : "ETA", final ? hms(el, a, sizeof a) : hms(eta, b, sizeof b));
	}
	fflush(p->f);
	p->last_print = t;
}

void plan_progress_update(plan_progress *p, long done, long failed)
{
	p->done = done;
	p->failed = failed;
	if (p->quiet)
		return;
	double t = now();
	if (p->tty) {
		if (p->last_print < 0 || t - p->last_print >= 0.1 || done == p->total)
			draw(p, false);
		return;
	}
	/* Logs: a line per new tenth, at most one per 2 s (short sweeps print only their
	 * last line), and at least one per 30 s. The final line comes from _end. */
	if (done >= p->total)
		return;
	int decile = p->total ? (int)(10 * done / p->total) : 10;
	double since = t - (p->last_print < 0 ? p->t0 : p->last_print);
	/* a handful of long tasks (plan's re-runs, compare's runs): a line each */
	bool each = p->total <= 20 && done > p->done_printed;
	if (each || (decile > p->last_decile && since >= 2) || since >= 30) {
		p->done_printed = done;
		p->last_decile = decile;
		draw(p, false);
	}
}

void plan_progress_end(plan_progress *p)
{
	if (!p->quiet)
		draw(p, true);
}
