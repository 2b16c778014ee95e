/* libFuzzer targets, one per loader: model, platform, job, calibration, sweep spec and
 * nccl-tests log (FUZZ_TARGET selects which; tests/fuzz/meson.build builds each). An
 * input the loader accepts is then simulated (analytic engine) on the reference model
 * and cluster, so that numbers the loaders let through are exercised too: every result
 * must be finite (engine_result_check) and nothing may trip AddressSanitizer or
 * UndefinedBehaviorSanitizer. Seeds: the shipped files (scripts/fuzz). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "engine/analytic.h"
#include "engine/engine.h"
#include "nccltests/nccltests.h"
#include "plan/plan.h"
#include "workload/workload.h"

enum { FUZZ_MODEL, FUZZ_PLATFORM, FUZZ_JOB, FUZZ_CALIBRATION, FUZZ_SWEEP, FUZZ_NCCLTESTS };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input as a file the loaders can open (they take paths). */
static const char *as_file(const uint8_t *data, size_t size)
{
	static char path[64];
	if (!path[0])
		snprintf(path, sizeof path, "%s/spsim-fuzz-%d.yaml", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp",
			 (int)getpid());
	FILE *f = fopen(path, "wb");
	if (!f)
		abort();
	if (size && fwrite(data, 1, size, f) != size)
		abort();
	fclose(f);
	return path;
}

/* Simulates a small job of the given model, platform and job; a result that is not
 * finite is a bug (abort, so the fuzzer keeps the input). */
static void simulate(const config_model *m, const config_platform *p, config_job job)
{
	config_error err;
	if (!workload_check(m, p, &job, &err))
		return;
	workload_composite c;
	if (!workload_compose(m, p, &job, &c, &err))
		return;
	engine_result r;
	const workload_plan *primary;
	if (!engine_run_composite(&engine_analytic, m, p, &job, &c, (engine_options){0}, &r, NULL, &primary, &err) &&
	    strstr(err.msg, "internal:")) {
		fprintf(stderr, "%s\n", err.msg);
		abort();
	}
	workload_compose_finish(&c);
}

/* The reference model, cluster and job, loaded once. */
static void reference(config_model *m, config_platform *p, config_job *j)
{
	static config_model rm;
	static config_platform rp;
	static bool loaded;
	config_error err;
	if (!loaded) {
		if (!config_load_model("llama-3.1-8b", &rm, &err) || !config_load_platform("a100-2x4-ib400", &rp, &err)) {
			fprintf(stderr, "%s (set SPSIM_DATA_DIR to the source tree)\n", err.msg);
			abort();
		}
		loaded = true;
	}
	*m = rm;
	*p = rp;
	config_job_defaults(j);
	j->seq_len = 4096;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	config_model m;
	config_platform p;
	config_job j;
	config_error err;
	reference(&m, &p, &j);
	switch (FUZZ_TARGET) {
	case FUZZ_MODEL:
		if (config_load_model(as_file(data, size), &m, &err)) {
			(void)config_model_params(&m);
			simulate(&m, &p, j);
		}
		break;
	case FUZZ_PLATFORM:
		if (config_load_platform(as_file(data, size), &p, &err))
			simulate(&m, &p, j);
		break;
	case FUZZ_JOB: {
		int nodes = 0;
		if (config_load_job(as_file(data, size), &j, NULL, NULL, NULL, &nodes, &err)) {
			if (nodes)
				p.nodes = nodes;
			simulate(&m, &p, j);
		}
		break;
	}
	case FUZZ_CALIBRATION: {
		config_calibration c;
		if (config_load_calibration(as_file(data, size), &c, &err)) {
			config_apply_calibration(&p, &c);
			simulate(&m, &p, j);
		}
		break;
	}
	case FUZZ_SWEEP: {
		plan_spec s;
		if (plan_spec_load(as_file(data, size), &s, &err)) {
			/* the first and last points, on whatever engine they name (analytic here) */
			json_t *a = plan_point_eval(&s, 0), *b = plan_point_eval(&s, s.n_points - 1);
			json_t *f = plan_point_failed(&s, s.n_points - 1, "fuzz");
			json_decref(a);
			json_decref(b);
			json_decref(f);
			plan_spec_finish(&s);
		}
		break;
	}
	case FUZZ_NCCLTESTS: {
		char *text = malloc(size + 1);
		if (!text)
			return 0;
		memcpy(text, data, size);
		text[size] = '\0';
		nccltests_log log;
		if (nccltests_parse_text("fuzz.log", text, NULL, &log, &err))
			nccltests_log_finish(&log);
		free(text);
		break;
	}
	}
	return 0;
}
