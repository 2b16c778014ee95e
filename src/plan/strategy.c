/* Strategy variants (the table sweeps and the planner iterate) and strategy labels. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"

/* basp.md "Edge cases": B = 1 gives K = N, identical to Ulysses. */
static bool basp_is_ulysses(const config_job *job) { return job->micro_batch == 1; }

/* BASP beyond divisibility (workload_compose) is only itself when B does not divide N. */
static bool divides(const config_job *job) { return job->micro_batch == 1 || job->sp % job->micro_batch == 0; }
static bool set_unequal(config_job *job, int alt)
{
	job->basp_uneven = CONFIG_BASP_UNEVEN_UNEQUAL;
	return alt == 0;
}
static bool set_extra_step(config_job *job, int alt)
{
	job->basp_uneven = CONFIG_BASP_UNEVEN_EXTRA_STEP;
	return alt == 0;
}

/* Ring attention: the zigzag split (balanced; the naive one is never faster). The
 * planner searches rings of at most PLAN_MAX_RING ranks: a ring's op program holds three
 * ops per step and layer, and a longer ring splits a sequence into blocks too short to
 * keep the attention kernel efficient (docs/model.md §7a); `run`, `compare` and sweeps
 * take any degree. */
static bool set_ring(config_job *job, int alt)
{
	job->basp_inner = CONFIG_STRATEGY_ULYSSES;
	job->cp_split = CONFIG_CP_SPLIT_ZIGZAG;
	job->cp_comm = CONFIG_CP_COMM_P2P;
	return alt == 0 && job->sp <= PLAN_MAX_RING;
}
static bool set_inner_ring(config_job *job, int alt)
{
	job->basp_inner = CONFIG_STRATEGY_RING;
	job->cp_split = CONFIG_CP_SPLIT_ZIGZAG;
	job->cp_comm = CONFIG_CP_COMM_P2P;
	return alt == 0 && job->micro_batch > 0 && job->sp / job->micro_batch <= PLAN_MAX_RING;
}
/* All-gather context parallelism (Megatron-Core cp_comm_type all_gather): a fixed
 * handful of ops per layer whatever R, so no ring-length cap. */
static bool set_ring_allgather(config_job *job, int alt)
{
	set_ring(job, 0);
	job->cp_comm = CONFIG_CP_COMM_ALL_GATHER;
	return alt == 0;
}
static bool set_inner_ring_allgather(config_job *job, int alt)
{
	set_inner_ring(job, 0);
	job->cp_comm = CONFIG_CP_COMM_ALL_GATHER;
	return alt == 0;
}

/* USP over P ranks: alternative alt of every Ulysses degree strictly between 1 and P (its
 * edges are Ulysses and ring); the job check drops those that do not split the heads. */
static bool usp_degrees(config_job *job, int P, int alt)
{
	job->cp_split = CONFIG_CP_SPLIT_ZIGZAG;
	job->cp_comm = CONFIG_CP_COMM_P2P;
	for (int u = 2, k = 0; u < P; u++)
		if (P % u == 0 && P / u <= PLAN_MAX_RING && k++ == alt) {
			job->ulysses_degree = u;
			job->ring_degree = P / u;
			return true;
		}
	return false;
}
static bool set_usp(config_job *job, int alt)
{
	job->basp_inner = CONFIG_STRATEGY_ULYSSES;
	return usp_degrees(job, job->sp, alt);
}
/* BASP over USP: USP inside each group of K = N/B ranks (B | N). */
static bool set_inner_usp(config_job *job, int alt)
{
	job->basp_inner = CONFIG_STRATEGY_USP;
	int B = job->micro_batch;
	return B > 0 && job->sp % B == 0 && usp_degrees(job, job->sp / B, alt);
}

const plan_variant plan_variants[] = {
	{"ulysses", CONFIG_STRATEGY_ULYSSES, NULL, NULL, "DeepSpeed-Ulysses: N-way all-to-alls over the SP domain"},
	{"basp", CONFIG_STRATEGY_BASP, basp_is_ulysses, NULL, "BASP: B groups of K = N/B GPUs, one sequence each"},
	{"basp-unequal", CONFIG_STRATEGY_BASP, divides, set_unequal,
	 "BASP with B not dividing N: groups of floor(N/B) and ceil(N/B) GPUs side by side"},
	{"basp-extra-step", CONFIG_STRATEGY_BASP, divides, set_extra_step,
	 "BASP with B not dividing N: the sequences left over in further micro-steps"},
	{"ring", CONFIG_STRATEGY_RING, NULL, set_ring,
	 "ring attention (context parallelism, zigzag): KV blocks passed around N GPUs", true},
	{"basp-ring", CONFIG_STRATEGY_BASP, basp_is_ulysses, set_inner_ring,
	 "BASP over ring attention (basp:inner=ring): B rings of K = N/B GPUs, one sequence each", true},
	{"ring-allgather", CONFIG_STRATEGY_RING, NULL, set_ring_allgather,
	 "ring attention with all-gathered KV (ring:comm=all_gather, Megatron-Core cp_comm_type all_gather)", true},
	{"basp-ring-allgather", CONFIG_STRATEGY_BASP, basp_is_ulysses, set_inner_ring_allgather,
	 "BASP over all-gather context parallelism (basp:inner=ring:comm=all_gather)", true},
	{"usp", CONFIG_STRATEGY_USP, NULL, set_usp,
	 "USP: Ulysses over U GPUs inside rings of R = N/U, every U strictly between 1 and N", true},
	{"basp-usp", CONFIG_STRATEGY_BASP, basp_is_ulysses, set_inner_usp,
	 "BASP over USP (basp:inner=usp): USP inside each group of K = N/B GPUs, every U strictly between 1 and K",
	 true},
	{NULL, 0, NULL, NULL, NULL},
};

const char *plan_a2a_name(config_a2a a)
{
	return a == CONFIG_A2A_PAIRWISE ? "pairwise" : a == CONFIG_A2A_HIERARCHICAL ? "hierarchical" : "direct";
}

const plan_variant *plan_variant_find(const char *name)
{
	for (const plan_variant *v = plan_variants; v->name; v++)
		if (strcmp(v->name, name) == 0)
			return v;
	return NULL;
}

const plan_variant *plan_variant_of(config_strategy s)
{
	for (const plan_variant *v = plan_variants; v->name; v++)
		if (v->strategy == s)
			return v;
	return NULL;
}

const char *plan_variant_names(void)
{
	static char buf[256];
	if (!buf[0]) {
		size_t used = 0;
		for (const plan_variant *v = plan_variants; v->name && used < sizeof buf; v++)
			used += (size_t)snprintf(buf + used, sizeof buf - used, "%s%s", used ? "|" : "", v->name);
	}
	return buf;
}

static bool parse_pos(const char *s, int *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v <= 0 || v > INT_MAX)
		return false;
	*out = (int)v;
	return true;
}

bool plan_strategy_parse(const char *text, plan_strategy *out, config_error *err)
{
	plan_strategy s = {0};
	if (strlen(text) >= sizeof s.label)
		return config_fail(err, "strategy '%.80s...' is too long", text);
	const char *colon = strchr(text, ':');
	size_t n = colon ? (size_t)(colon - text) : strlen(text);
	char name[CONFIG_NAME_MAX];
	snprintf(name, sizeof name, "%.*s", (int)n, text);
	/* basp:inner=ring is the basp-ring row (compare's and --strategy's spelling) */
	if (strcmp(name, "basp") == 0 && colon && strncmp(colon + 1, "inner=", 6) == 0) {
		const char *v = colon + 7, *next = strchr(v, ':');
		size_t vn = next ? (size_t)(next - v) : strlen(v);
		if (vn == 4 && strncmp(v, "ring", 4) == 0)
			snprintf(name, sizeof name, "basp-ring");
		else if (vn == 3 && strncmp(v, "usp", 3) == 0)
			snprintf(name, sizeof name, "basp-usp");
		else if (!(vn == 7 && strncmp(v, "ulysses", 7) == 0))
			return config_fail(err, "strategy '%s': expected basp:inner=ulysses, basp:inner=ring or basp:inner=usp",
					   text);
		colon = next;
	}
	/* ring:comm=p2p|all_gather (and basp:inner=ring:comm=...): the ring rows */
	if ((strcmp(name, "ring") == 0 || strcmp(name, "basp-ring") == 0) && colon &&
	    strncmp(colon + 1, "comm=", 5) == 0) {
		const char *v = colon + 6, *next = strchr(v, ':');
		size_t vn = next ? (size_t)(next - v) : strlen(v);
		if (vn == 10 && strncmp(v, "all_gather", 10) == 0)
			strcat(name, "-allgather");
		else if (!(vn == 3 && strncmp(v, "p2p", 3) == 0))
			return config_fail(err, "strategy '%s': expected comm=p2p or comm=all_gather", text);
		colon = next;
	}
	s.variant = plan_variant_find(name);
	if (!s.variant)
		return config_fail(err, "unknown strategy '%s', expected %s, optionally with :sp=N or :sp=N/B", name,
				   plan_variant_names());
	s.sp_mode = PLAN_SP_ALL;
	const bool usp = s.variant->strategy == CONFIG_STRATEGY_USP || strcmp(s.variant->name, "basp-usp") == 0;
	while (colon) {
		char o[CONFIG_NAME_MAX];
		const char *next = strchr(colon + 1, ':');
		snprintf(o, sizeof o, "%.*s", (int)(next ? (size_t)(next - colon - 1) : strlen(colon + 1)), colon + 1);
		colon = next;
		if (strcmp(o, "sp=N/B") == 0)
			s.sp_mode = PLAN_SP_PER_BATCH;
		else if (strncmp(o, "sp=", 3) == 0 && parse_pos(o + 3, &s.sp))
			s.sp_mode = PLAN_SP_FIXED;
		else if (usp && (o[0] == 'u' || o[0] == 'r') && o[1] == '=' && parse_pos(o + 2, o[0] == 'u' ? &s.u : &s.r))
			;
		else
			return config_fail(err, "strategy '%s': expected %s:sp=N (a positive SP size) or %s:sp=N/B%s", text,
					   name, name, usp ? ", and u=U, r=R (USP's degrees)" : "");
	}
	strcpy(s.label, text);
	*out = s;
	return true;
}

bool plan_strategy_apply(const plan_strategy *s, config_job *job, config_error *err)
{
	job->strategy = s->variant->strategy;
	if (s->variant->expand)
		s->variant->expand(job, 0);
	if (config_job_usp(job)) { /* the spec's degrees, else derived by the job check */
		job->ulysses_degree = s->u;
		job->ring_degree = s->r;
	}
	switch (s->sp_mode) {
	case PLAN_SP_ALL: job->sp = job->gpus; break;
	case PLAN_SP_FIXED: job->sp = s->sp; break;
	case PLAN_SP_PER_BATCH:
		if (job->micro_batch <= 0 || job->gpus % job->micro_batch != 0)
			return config_fail(err, "%s: %d GPUs are not divisible by micro-batch %d, so SP = N/B is not whole",
					   s->label, job->gpus, job->micro_batch);
		job->sp = job->gpus / job->micro_batch;
		break;
	}
	return true;
}
