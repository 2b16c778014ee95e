/* The YAML and CLI spellings of the config enums: one table each, used by the loaders to
 * parse and by every report to print. Order matches the enums in config.h. */
#include "config/config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const config_strategy_names[3] = {"ulysses", "basp", "ring"};
const char *const config_cp_split_names[2] = {"zigzag", "naive"};
const char *const config_recompute_names[2] = {"none", "full"};
const char *const config_a2a_names[3] = {"direct", "pairwise", "hierarchical"};
const char *const config_basp_uneven_names[3] = {"error", "unequal", "extra-step"};
const char *const config_fabric_names[3] = {"nvswitch", "nvlink-mesh", "pcie"};
const char *const config_topology_names[3] = {"single-switch", "fat-tree", "rail-optimized"};
const char *const config_gpu_arch_names[2] = {"ampere", "hopper"};
const char *const config_attn_kernel_names[CONFIG_ATTN_KERNELS] = {"flash-attn-2", "flash-attn-3", "cudnn"};
const char *const config_impl_names[2] = {"hf", "megatron"};

bool config_job_ring(const config_job *job)
{
	return job->strategy == CONFIG_STRATEGY_RING ||
	       (job->strategy == CONFIG_STRATEGY_BASP && job->basp_inner == CONFIG_STRATEGY_RING);
}

const char *config_strategy_label(const config_job *job, char *buf, size_t len)
{
	const char *split = job->cp_split == CONFIG_CP_SPLIT_NAIVE ? ":split=naive" : "";
	if (job->strategy == CONFIG_STRATEGY_BASP && job->basp_inner == CONFIG_STRATEGY_RING)
		snprintf(buf, len, "basp:inner=ring%s", split);
	else if (job->strategy == CONFIG_STRATEGY_RING)
		snprintf(buf, len, "ring%s", split);
	else
		snprintf(buf, len, "%s", config_strategy_names[job->strategy]);
	return buf;
}

/* Copies the n characters at s into a NUL-terminated buffer. */
static void take(char *dst, size_t cap, const char *s, size_t n)
{
	if (n >= cap)
		n = cap - 1;
	memcpy(dst, s, n);
	dst[n] = '\0';
}

bool config_strategy_parse(const char *spec, config_job *job, int *sp, config_error *err)
{
	char name[32];
	const char *colon = strchr(spec, ':');
	take(name, sizeof name, spec, colon ? (size_t)(colon - spec) : strlen(spec));
	config_strategy s;
	if (strcmp(name, "ulysses") == 0)
		s = CONFIG_STRATEGY_ULYSSES;
	else if (strcmp(name, "basp") == 0)
		s = CONFIG_STRATEGY_BASP;
	else if (strcmp(name, "ring") == 0)
		s = CONFIG_STRATEGY_RING;
	else
		return config_fail(err, "unknown strategy '%s', expected ulysses, basp or ring (options: basp:inner=ring, ring:split=naive%s)",
				   name, sp ? ", NAME:sp=N" : "");
	config_strategy inner = CONFIG_STRATEGY_ULYSSES;
	config_cp_split split = CONFIG_CP_SPLIT_ZIGZAG;
	int n_sp = 0;
	while (colon) {
		const char *opt = colon + 1;
		colon = strchr(opt, ':');
		char kv[64];
		take(kv, sizeof kv, opt, colon ? (size_t)(colon - opt) : strlen(opt));
		char *eq = strchr(kv, '=');
		if (!eq)
			return config_fail(err, "strategy '%s': option '%s' is not key=value", spec, kv);
		*eq = '\0';
		const char *v = eq + 1;
		if (strcmp(kv, "inner") == 0 && s == CONFIG_STRATEGY_BASP) {
			if (strcmp(v, "ulysses") == 0)
				inner = CONFIG_STRATEGY_ULYSSES;
			else if (strcmp(v, "ring") == 0)
				inner = CONFIG_STRATEGY_RING;
			else
				return config_fail(err, "strategy '%s': inner=%s, expected inner=ulysses or inner=ring", spec, v);
		} else if (strcmp(kv, "split") == 0) {
			if (strcmp(v, "zigzag") == 0)
				split = CONFIG_CP_SPLIT_ZIGZAG;
			else if (strcmp(v, "naive") == 0)
				split = CONFIG_CP_SPLIT_NAIVE;
			else
				return config_fail(err, "strategy '%s': split=%s, expected split=zigzag or split=naive", spec, v);
		} else if (strcmp(kv, "sp") == 0 && sp) {
			char *end;
			errno = 0;
			long x = strtol(v, &end, 10);
			if (errno || end == v || *end || x < 1 || x > INT_MAX)
				return config_fail(err, "strategy '%s': sp=%s, expected a positive number of GPUs", spec, v);
			n_sp = (int)x;
		} else {
			return config_fail(err,
					   "strategy '%s': unknown option '%s'; valid: inner=ulysses|ring (basp), split=zigzag|naive (ring, basp:inner=ring)%s",
					   spec, kv, sp ? ", sp=N" : "");
		}
	}
	bool ring = s == CONFIG_STRATEGY_RING || inner == CONFIG_STRATEGY_RING;
	if (split != CONFIG_CP_SPLIT_ZIGZAG && !ring)
		return config_fail(err, "strategy '%s': split= applies only to ring attention (ring, basp:inner=ring)", spec);
	job->strategy = s;
	job->basp_inner = inner;
	job->cp_split = split;
	if (sp && n_sp)
		*sp = n_sp;
	return true;
}
