/* The YAML and CLI spellings of the config enums: one table each, used by the loaders to
 * parse and by every report to print. Order matches the enums in config.h. */
#include "config/config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const config_strategy_names[4] = {"ulysses", "basp", "ring", "usp"};
const char *const config_cp_split_names[2] = {"zigzag", "naive"};
const char *const config_cp_comm_names[2] = {"p2p", "all_gather"};
const char *const config_cp_comm_type_names[4] = {"p2p", "all_gather", "a2a", "a2a+p2p"};
const char *const config_recompute_names[CONFIG_RECOMPUTES] = {"none", "full", "selective"};
const char *const config_a2a_names[3] = {"direct", "pairwise", "hierarchical"};
const char *const config_basp_uneven_names[3] = {"error", "unequal", "extra-step"};
const char *const config_fabric_names[3] = {"nvswitch", "nvlink-mesh", "pcie"};
const char *const config_topology_names[3] = {"single-switch", "fat-tree", "rail-optimized"};
const char *const config_gpu_arch_names[2] = {"ampere", "hopper"};
const char *const config_attn_kernel_names[CONFIG_ATTN_KERNELS] = {"flash-attn-2", "flash-attn-3", "cudnn",
								     "flash-attn-triton"};
const char *const config_impl_names[CONFIG_IMPLS] = {"hf", "megatron", "hf-trainer"};
const char *const config_zero3_prefetch_names[2] = {"deepspeed", "layer"};
const char *const config_offload_optimizer_names[2] = {"none", "cpu"};

bool config_job_usp(const config_job *job)
{
	return job->strategy == CONFIG_STRATEGY_USP ||
	       (job->strategy == CONFIG_STRATEGY_BASP && job->basp_inner == CONFIG_STRATEGY_USP);
}

bool config_job_ring(const config_job *job)
{
	return job->strategy == CONFIG_STRATEGY_RING || config_job_usp(job) ||
	       (job->strategy == CONFIG_STRATEGY_BASP && job->basp_inner == CONFIG_STRATEGY_RING);
}

bool config_job_all_gather(const config_job *job)
{
	config_strategy inner = job->strategy == CONFIG_STRATEGY_BASP ? job->basp_inner : job->strategy;
	return inner == CONFIG_STRATEGY_RING && job->cp_comm == CONFIG_CP_COMM_ALL_GATHER;
}

/* The index of name in a spelling table, -1 when absent. */
static int index_of(const char *name, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (strcmp(name, names[i]) == 0)
			return i;
	return -1;
}

int config_cp_comm_type_parse(const char *name) { return index_of(name, config_cp_comm_type_names, 4); }

bool config_job_apply_cp_comm_type(config_job *job, config_cp_comm_type type, bool strategy_given, config_error *err)
{
	static const config_strategy of_type[4] = {CONFIG_STRATEGY_RING, CONFIG_STRATEGY_RING, CONFIG_STRATEGY_ULYSSES,
						   CONFIG_STRATEGY_USP};
	static const char *const spelled[4] = {"ring", "ring:comm=all_gather", "ulysses", "usp"};
	config_strategy s = of_type[type];
	config_cp_comm comm = type == CONFIG_CP_TYPE_ALL_GATHER ? CONFIG_CP_COMM_ALL_GATHER : CONFIG_CP_COMM_P2P;
	if (job->strategy == CONFIG_STRATEGY_BASP) {
		job->basp_inner = s;
	} else {
		if (strategy_given && (job->strategy != s || (s == CONFIG_STRATEGY_RING && job->cp_comm != comm))) {
			char have[64];
			return config_fail(err,
					   "cp_comm_type %s is strategy %s, but the strategy given is %s; give one of them, or basp with cp_comm_type %s for BASP over it",
					   config_cp_comm_type_names[type], spelled[type],
					   config_strategy_label(job, have, sizeof have), config_cp_comm_type_names[type]);
		}
		job->strategy = s;
	}
	job->cp_comm = comm;
	return true;
}

const char *config_strategy_label(const config_job *job, char *buf, size_t len)
{
	const char *split = job->cp_split == CONFIG_CP_SPLIT_NAIVE	 ? ":split=naive"
			    : config_job_all_gather(job) ? ":comm=all_gather"
							   : "";
	char deg[48] = "";
	if (config_job_usp(job) && (job->ulysses_degree > 0 || job->ring_degree > 0))
		snprintf(deg, sizeof deg, ":u=%d:r=%d", job->ulysses_degree, job->ring_degree);
	bool basp = job->strategy == CONFIG_STRATEGY_BASP;
	config_strategy inner = basp ? job->basp_inner : job->strategy;
	if (basp && inner == CONFIG_STRATEGY_ULYSSES)
		snprintf(buf, len, "basp");
	else if (inner == CONFIG_STRATEGY_ULYSSES)
		snprintf(buf, len, "ulysses");
	else
		snprintf(buf, len, "%s%s%s%s", basp ? "basp:inner=" : "", config_strategy_names[inner], deg, split);
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

static bool parse_pos(const char *v, int *out)
{
	char *end;
	errno = 0;
	long x = strtol(v, &end, 10);
	if (errno || end == v || *end || x < 1 || x > INT_MAX)
		return false;
	*out = (int)x;
	return true;
}

static bool strategy_of(const char *name, config_strategy *s)
{
	for (int i = 0; i < 4; i++)
		if (strcmp(name, config_strategy_names[i]) == 0) {
			*s = (config_strategy)i;
			return true;
		}
	return false;
}

bool config_strategy_parse(const char *spec, config_job *job, int *sp, config_error *err)
{
	char name[32];
	const char *colon = strchr(spec, ':');
	take(name, sizeof name, spec, colon ? (size_t)(colon - spec) : strlen(spec));
	config_strategy s;
	if (!strategy_of(name, &s))
		return config_fail(err,
				   "unknown strategy '%s', expected ulysses, basp, ring or usp (options: basp:inner=ring|usp, ring:split=naive, ring:comm=all_gather, usp:u=U:r=R%s)",
				   name, sp ? ", NAME:sp=N" : "");
	config_strategy inner = CONFIG_STRATEGY_ULYSSES;
	config_cp_split split = CONFIG_CP_SPLIT_ZIGZAG;
	config_cp_comm comm = CONFIG_CP_COMM_P2P;
	bool comm_given = false;
	int n_sp = 0, u = 0, r = 0;
	unsigned seen = 0;
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
		/* an option twice: the last one won without a word (ring:split=naive:split=zigzag ran zigzag) */
		static const char *const keys[] = {"inner", "split", "comm", "u", "r", "sp"};
		for (unsigned k = 0; k < sizeof keys / sizeof keys[0]; k++)
			if (strcmp(kv, keys[k]) == 0) {
				if (seen & (1u << k))
					return config_fail(err, "strategy '%s': %s= given twice, expected each option once", spec, kv);
				seen |= 1u << k;
			}
		if (strcmp(kv, "inner") == 0 && s == CONFIG_STRATEGY_BASP) {
			if (!strategy_of(v, &inner) || inner == CONFIG_STRATEGY_BASP)
				return config_fail(err, "strategy '%s': inner=%s, expected inner=ulysses, inner=ring or inner=usp", spec, v);
		} else if (strcmp(kv, "split") == 0) {
			int i = index_of(v, config_cp_split_names, 2);
			if (i < 0)
				return config_fail(err, "strategy '%s': split=%s, expected split=zigzag or split=naive", spec, v);
			split = (config_cp_split)i;
		} else if (strcmp(kv, "comm") == 0) {
			int i = index_of(v, config_cp_comm_names, 2);
			if (i < 0)
				return config_fail(err,
						   "strategy '%s': comm=%s, expected comm=p2p or comm=all_gather (Megatron-Core's a2a is ulysses, a2a+p2p is usp)",
						   spec, v);
			comm = (config_cp_comm)i;
			comm_given = true;
		} else if (strcmp(kv, "u") == 0 || strcmp(kv, "r") == 0) {
			if (!parse_pos(v, kv[0] == 'u' ? &u : &r))
				return config_fail(err, "strategy '%s': %s=%s, expected a positive degree", spec, kv, v);
		} else if (strcmp(kv, "sp") == 0 && sp) {
			if (!parse_pos(v, &n_sp))
				return config_fail(err, "strategy '%s': sp=%s, expected a positive number of GPUs", spec, v);
		} else {
			return config_fail(err,
					   "strategy '%s': unknown option '%s'; valid: inner=ulysses|ring|usp (basp), split=zigzag|naive (ring attention), comm=p2p|all_gather (ring), u=U and r=R (usp)%s",
					   spec, kv, sp ? ", sp=N" : "");
		}
	}
	config_strategy eff = s == CONFIG_STRATEGY_BASP ? inner : s;
	if (split != CONFIG_CP_SPLIT_ZIGZAG && eff != CONFIG_STRATEGY_RING && eff != CONFIG_STRATEGY_USP)
		return config_fail(err, "strategy '%s': split= applies only to ring attention (ring, usp, basp:inner=ring|usp)", spec);
	if ((u || r) && eff != CONFIG_STRATEGY_USP)
		return config_fail(err, "strategy '%s': u= and r= apply only to usp (usp:u=U:r=R, basp:inner=usp:u=U:r=R)", spec);
	/* TransformerEngine pairs its all-to-all only with the p2p ring (a2a+p2p): USP's ring
	 * has no all_gather form */
	if (comm_given && eff != CONFIG_STRATEGY_RING)
		return config_fail(err,
				   "strategy '%s': comm= applies only to ring attention over a plain group (ring:comm=p2p|all_gather, basp:inner=ring:comm=p2p|all_gather)",
				   spec);
	job->strategy = s;
	job->basp_inner = inner;
	job->cp_split = split;
	job->cp_comm = comm;
	if (eff == CONFIG_STRATEGY_USP && (u || r)) { /* else --ulysses-degree / --ring-degree stand */
		job->ulysses_degree = u;
		job->ring_degree = r;
	}
	if (sp && n_sp)
		*sp = n_sp;
	return true;
}
