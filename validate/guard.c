/* Never hang (transport.h): named steps, agreed status across processes, fault injection
 * for the tests, and a watchdog thread that ends the job when a step stalls. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "validate.h"

double validate_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The current step: two name buffers written alternately, the index and the start time
 * published atomically, so the watchdog thread always reads a whole name. */
static char step_names[2][160];
static atomic_int step_slot;
static _Atomic double step_began;

void validate_step_begin(const char *fmt, ...)
{
	const int next = 1 - atomic_load(&step_slot);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(step_names[next], sizeof step_names[next], fmt, ap);
	va_end(ap);
	atomic_store(&step_began, validate_now());
	atomic_store(&step_slot, next);
}

const char *validate_step_current(double *began)
{
	const int slot = atomic_load(&step_slot);
	if (began)
		*began = atomic_load(&step_began);
	return step_names[slot][0] ? step_names[slot] : "start-up";
}

static const char *host_name(void)
{
	static char host[64];
	if (!host[0] && gethostname(host, sizeof host - 1) != 0)
		snprintf(host, sizeof host, "localhost");
	return host;
}

/* ------------------------------------------------------------ fault injection --- */
enum { INJECT_NONE, INJECT_ERROR, INJECT_HANG };
static int inject_proc = -1, inject_mode = INJECT_NONE;
static long inject_at = 1; /* the agreed step (1-based) that fails */

bool validate_inject_from_env(char *err, size_t errlen)
{
	const char *v = getenv("SPSIM_VALIDATE_INJECT");
	if (!v || !*v)
		return true;
	char *end;
	errno = 0;
	long p = strtol(v, &end, 10);
	bool ok = !errno && end != v && p >= 0 && p <= 1 << 20 && *end == ':';
	const char *mode = ok ? end + 1 : "";
	const size_t mlen = strcspn(mode, ":");
	long at = 1;
	ok = ok && ((mlen == 5 && !strncmp(mode, "error", 5)) || (mlen == 4 && !strncmp(mode, "hang", 4)));
	if (ok && mode[mlen] == ':') {
		char *e2;
		errno = 0;
		at = strtol(mode + mlen + 1, &e2, 10);
		ok = !errno && e2 != mode + mlen + 1 && !*e2 && at >= 1;
	}
	if (!ok) {
		snprintf(err, errlen,
			 "SPSIM_VALIDATE_INJECT='%s': want PROC:error or PROC:hang, optionally :STEP (PROC a process index "
			 ">= 0, STEP the agreed step that fails, >= 1, default 1)",
			 v);
		return false;
	}
	inject_proc = (int)p;
	inject_mode = mode[0] == 'e' ? INJECT_ERROR : INJECT_HANG;
	inject_at = at;
	return true;
}

static int injected(const validate_launch *l, int rc)
{
	if (inject_mode == INJECT_NONE || l->proc != inject_proc || --inject_at > 0)
		return rc;
	const int mode = inject_mode;
	inject_mode = INJECT_NONE; /* once */
	fprintf(stderr, "[rank %d on %s] injected %s at step '%s' (SPSIM_VALIDATE_INJECT)\n", l->proc, host_name(),
		mode == INJECT_ERROR ? "failure" : "hang", validate_step_current(NULL));
	if (mode == INJECT_ERROR)
		return VALIDATE_EDEVICE;
	for (;;)
		pause();
}

/* ------------------------------------------------------------------ agreement --- */
int validate_agree(validate_launch *l, int rc)
{
	rc = injected(l, rc);
	if (l->procs <= 1)
		return rc;
	char what[160];
	snprintf(what, sizeof what, "%s", validate_step_current(NULL));
	validate_step_begin("waiting for every process to finish '%s'", what);
	/* worst status, and the highest process index that had it */
	double v[2] = {-(double)rc, rc ? (double)l->proc : -1};
	int arc = l->allreduce_max(l, v, 2);
	if (arc)
		return arc;
	const int worst = -(int)v[0];
	if (worst != VALIDATE_OK && rc == VALIDATE_OK)
		fprintf(stderr, "[rank %d on %s] stopping after '%s': process %d failed there (%s)\n", l->proc, host_name(),
			what, (int)v[1], validate_strerror(worst));
	return worst;
}

/* ------------------------------------------------------------------- watchdog --- */
static pthread_t dog;
static atomic_bool dog_running, dog_stop;
static validate_launch *dog_launch;
static double dog_step, dog_run, dog_start;

double validate_watchdog_grace(double step_timeout_s) { return 0.1 * step_timeout_s + 2.0; }

static void *watch(void *arg)
{
	(void)arg;
	const struct timespec nap = {0, 100 * 1000 * 1000};
	while (!atomic_load(&dog_stop)) {
		nanosleep(&nap, NULL);
		double began;
		const char *step = validate_step_current(&began);
		const double now = validate_now();
		const char *why = NULL;
		double limit = 0;
		if (dog_step > 0 && now - began > dog_step + validate_watchdog_grace(dog_step)) {
			why = "--timeout, per step";
			limit = dog_step;
		} else if (dog_run > 0 && now - dog_start > dog_run) {
			why = "--run-timeout, whole run";
			limit = dog_run;
		}
		if (!why)
			continue;
		fprintf(stderr,
			"[rank %d on %s] watchdog: '%s' still running after %.1f s (limit %.0f s, %s); ending every process\n",
			dog_launch->proc, host_name(), step, now - began, limit, why);
		fflush(stderr);
		dog_launch->abort(dog_launch, 2);
		_exit(2);
	}
	return NULL;
}

int validate_watchdog_start(validate_launch *l, double step_timeout_s, double run_timeout_s)
{
	if (atomic_load(&dog_running) || (!(step_timeout_s > 0) && !(run_timeout_s > 0)))
		return VALIDATE_OK;
	dog_launch = l;
	dog_step = step_timeout_s;
	dog_run = run_timeout_s;
	dog_start = validate_now();
	atomic_store(&dog_stop, false);
	if (pthread_create(&dog, NULL, watch, NULL) != 0) {
		fprintf(stderr, "spsim-validate: cannot start the watchdog thread\n");
		return VALIDATE_ENOMEM;
	}
	atomic_store(&dog_running, true);
	return VALIDATE_OK;
}

void validate_watchdog_stop(void)
{
	if (!atomic_load(&dog_running))
		return;
	atomic_store(&dog_stop, true);
	pthread_join(dog, NULL);
	atomic_store(&dog_running, false);
}
