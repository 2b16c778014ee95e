/* Strategy variants (the table sweeps and the planner iterate) and strategy labels. */
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

/* Planner rows that are a run spelling with a setting: a sweep may name either. */
static const char *const row_spelling[][2] = {
	{"basp-ring", "basp:inner=ring"},
	{"basp-usp", "basp:inner=usp"},
	{"ring-allgather", "ring:comm=all_gather"},
	{"basp-ring-allgather", "basp:inner=ring:comm=all_gather"},
	{"basp-unequal", "basp"},
	{"basp-extra-step", "basp"},
};

/* The row of plan_variants a parsed run spelling is. */
static const char *row_of(const config_job *j)
{
	bool basp = j->strategy == CONFIG_STRATEGY_BASP;
	config_strategy inner = basp ? j->basp_inner : j->strategy;
	bool ag = j->cp_comm == CONFIG_CP_COMM_ALL_GATHER;
	switch (inner) {
	case CONFIG_STRATEGY_RING: return basp ? (ag ? "basp-ring-allgather" : "basp-ring") : ag ? "ring-allgather" : "ring";
	case CONFIG_STRATEGY_USP: return basp ? "basp-usp" : "usp";
	default: return basp ? "basp" : "ulysses";
	}
}

bool plan_strategy_parse(const char *text, plan_strategy *out, config_error *err)
{
	plan_strategy s = {0};
	if (strlen(text) >= sizeof s.label)
		return config_fail(err, "strategy '%.80s...' is too long", text);
	const char *colon = strchr(text, ':');
	size_t n = colon ? (size_t)(colon - text) : strlen(text);
	char name[CONFIG_NAME_MAX], spelled[2 * CONFIG_NAME_MAX];
	snprintf(name, sizeof name, "%.*s", (int)n, text);
	const char *row = NULL;
	for (size_t i = 0; i < sizeof row_spelling / sizeof row_spelling[0]; i++)
		if (strcmp(name, row_spelling[i][0]) == 0)
			row = row_spelling[i][0], snprintf(name, sizeof name, "%s", row_spelling[i][1]);
	bool known = row != NULL;
	for (int i = 0; i < 4; i++)
		known |= strcmp(name, config_strategy_names[i]) == 0;
	if (!known)
		return config_fail(err, "unknown strategy '%s', expected %s, optionally with :sp=N or :sp=N/B", name,
				   plan_variant_names());
	/* :sp=N/B follows the micro-batch (sweeps only); the rest is run's --strategy syntax,
	 * read by run's parser */
	size_t used = (size_t)snprintf(spelled, sizeof spelled, "%s", name);
	s.sp_mode = PLAN_SP_ALL;
	while (colon) {
		const char *next = strchr(colon + 1, ':');
		size_t on = next ? (size_t)(next - colon) : strlen(colon);
		if (on == 7 && strncmp(colon, ":sp=N/B", 7) == 0)
			s.sp_mode = PLAN_SP_PER_BATCH;
		else if (used < sizeof spelled)
			used += (size_t)snprintf(spelled + used, sizeof spelled - used, "%.*s", (int)on, colon);
		colon = next;
	}
	config_job j;
	config_job_defaults(&j);
	int sp = 0;
	if (!config_strategy_parse(spelled, &j, &sp, err))
		return false;
	if (sp) {
		if (s.sp_mode == PLAN_SP_PER_BATCH)
			return config_fail(err, "strategy '%s': sp=N and sp=N/B contradict each other; give one", text);
		s.sp_mode = PLAN_SP_FIXED;
		s.sp = sp;
	}
	s.variant = plan_variant_find(row ? row : row_of(&j));
	s.split = j.cp_split;
	s.u = j.ulysses_degree;
	s.r = j.ring_degree;
	strcpy(s.label, text);
	*out = s;
	return true;
}

bool plan_strategy_apply(const plan_strategy *s, config_job *job, config_error *err)
{
	job->strategy = s->variant->strategy;
	if (s->variant->expand)
		s->variant->expand(job, 0);
	job->cp_split = s->split;
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
