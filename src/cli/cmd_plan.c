/* spsim plan: which configuration for a model, GPU budget(s), sequence length and global
 * batch? Searches with the analytic engine, re-runs the leaders on a second engine,
 * ranks, explains, and says whether BASP wins. */
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "plan/plan.h"

#define MAX_PLATFORMS 16
#define MAX_BUDGETS 32
#define MAX_PLACEMENTS 8

enum {
	OPT_MODEL = 256, OPT_PLATFORM, OPT_GPUS, OPT_SEQ, OPT_BATCH, OPT_PRICE, OPT_TOP, OPT_ZERO, OPT_RECOMPUTE,
	OPT_MAXB, OPT_VERIFY, OPT_PLACEMENT, OPT_CAL, OPT_FORMAT, OPT_TIMEOUT, OPT_A2A, OPT_HELP, OPT_PROGRESS,
	OPT_QUIET, OPT_IMPL, OPT_RESERVE, OPT_STRATEGIES, OPT_JOB_SETTING,
};

/* Job settings every configuration of the plan shares, each read by `spsim run`'s own flag
 * parser (cli_job_option): option OPT_JOB_SETTING + i is run's job_setting_ids[i] (the
 * names in the option table below are run's). */
static const int job_setting_ids[] = {
	CLI_OPT_ATTENTION_KERNEL, CLI_OPT_OFFLOAD_ACTIVATIONS, CLI_OPT_TILE_MLP,	      CLI_OPT_TILE_LOGITS,
	CLI_OPT_ZERO_OVERLAP,	  CLI_OPT_FP32_GRAD_COMM,      CLI_OPT_REDUCE_BUCKET, CLI_OPT_ALLGATHER_BUCKET,
	CLI_OPT_PREFETCH_BUCKET,  CLI_OPT_DTYPE,	       CLI_OPT_ZERO3_PREFETCH, CLI_OPT_OFFLOAD_OPTIMIZER,
	CLI_OPT_CONTIGUOUS_GRADIENTS,
};
#define N_JOB_SETTINGS ((int)(sizeof job_setting_ids / sizeof job_setting_ids[0]))

/* Set by the first SIGINT of the analytic search or of the re-runs: the search stops and the
 * ranking of what it evaluated is printed, without re-runs; the re-runs stop (those in flight
 * are killed, see src/plan/pool.c) and the ranking is printed with the re-runs that finished
 * (exit 130 either way). The handler resets itself, so a second one ends the process. */
static volatile sig_atomic_t plan_stop;

static void on_sigint(int sig)
{
	(void)sig;
	plan_stop = 1;
}

static void plan_help(FILE *f)
{
	fputs("usage: spsim plan --model NAME --platform NAME[,NAME...] --gpus N[,N...] --seq-len S\n"
	      "                  --global-batch T [options]\n"
	      "Searches strategy (ulysses, basp, BASP beyond divisibility: basp-unequal, basp-extra-step, ring\n"
	      "attention, BASP over it and USP when asked with --strategies) x\n"
	      "SP degree x micro-batch (hence BASP group size K and gradient accumulation) x ZeRO stage x\n"
	      "recompute x all-to-all algorithm for every platform and GPU budget, drops what does not fit in GPU\n"
	      "memory, ranks the rest by tokens/s (and by cost per million tokens with --price), and prints the\n"
	      "top K with, for each, the breakdown term that puts it behind #1. Every configuration trains the\n"
	      "same global batch per optimizer step. The analytic engine searches; the top K are re-run on\n"
	      "--verify (each in its own process) and re-ranked.\n\n"
	      "  --model NAME|FILE        the model (spsim models)\n"
	      "  --platform LIST          one or more clusters to compare (what-if); repeat or separate by commas;\n"
	      "                           node counts follow the budget\n"
	      "  --gpus LIST              GPU budgets, e.g. 8,16,32 (each a whole number of nodes, or one node's part)\n"
	      "  --seq-len S              tokens per sequence (K and M suffixes)\n"
	      "  --global-batch T         tokens per optimizer step (K and M suffixes; a multiple of S)\n"
	      "  --price P | LIST         price per GPU-hour: one number for all platforms, or NAME=P,... per platform\n"
	      "  --top K                  how many to print (default 5)\n"
	      "  --zero LIST              ZeRO stages to try (default 0,1,2,3)\n"
	      "  --recompute LIST         none, selective, full, or a list (default none,full)\n"
	      "  --max-micro-batch B      largest micro-batch to try (default: no limit)\n"
	      "  --impl hf|hf-trainer|megatron  what each layer saves for backward (default hf; see spsim\n"
	      "                           run --help)\n"
	      "  --memory-reserve SIZE    memory lost to CUDA context, NCCL and fragmentation, or 0 (default derived)\n"
	      "  --attention-kernel K, --offload-activations, --tile-mlp N, --tile-logits N, --zero-overlap V,\n"
	      "  --fp32-grad-comm V, --reduce-bucket E|auto, --allgather-bucket E, --prefetch-bucket E|auto,\n"
	      "  --dtype bf16,\n"
	      "  --zero3-prefetch deepspeed|layer, --offload-optimizer none|cpu, --contiguous-gradients on|off\n"
	      "                           settings every configuration shares, as spsim run takes them (see\n"
	      "                           spsim run --help; activation offload needs recompute full: --recompute\n"
	      "                           full; optimizer offload skips ZeRO-0)\n"
	      "  --strategies LIST        the strategies to search (default ulysses, basp, basp-unequal,\n"
	      "                           basp-extra-step); also ring (ring attention, zigzag), basp-ring\n"
	      "                           (alias basp:inner=ring), usp (every Ulysses degree), basp-usp\n"
	      "                           (basp:inner=usp) with rings of at most 16 GPUs, and ring-allgather,\n"
	      "                           basp-ring-allgather (ring:comm=all_gather: Megatron-Core's\n"
	      "                           all_gather context parallelism)\n"
	      "  --a2a LIST               SP all-to-all algorithms to try for groups that span nodes: direct,\n"
	      "                           pairwise, hierarchical (default all; groups inside a node use the first)\n"
	      "  --verify ENGINE|none     re-run the top K on ENGINE (default: simgrid when built in, else none)\n"
	      "  --placement LIST         rank placements the verify runs try, keeping the best for each\n"
	      "                           configuration: contiguous, strided, random:SEED (default contiguous)\n"
	      "  --calibration FILE       measured link rates and efficiencies (only with a single platform)\n"
	      "  -j, --jobs N             processes for the verify runs (default: every CPU)\n"
	      "  --timeout S              give up on one verify run after S seconds\n"
	      "  --format table|json      output format (default table)\n"
	      "  --progress               progress of the search and of the re-runs on stderr (count, rate, ETA)\n"
	      "                           even when stderr is not a terminal (on a terminal it is shown by\n"
	      "                           default)\n"
	      "  --quiet                  no progress (not with --progress)\n"
	      "Ctrl-C (SIGINT) during the search stops it and prints the ranking of the configurations searched\n"
	      "so far, without re-runs, and exits 130. Ctrl-C during the re-runs starts no more, kills those\n"
	      "running, and prints the ranking with the re-runs that finished, the rest marked analytic only,\n"
	      "and exits 130. A second Ctrl-C ends it at once.\n",
	      f);
}

typedef struct plan_args {
	char model[CONFIG_PATH_MAX];
	char *platforms[MAX_PLATFORMS];
	int n_platforms;
	int budgets[MAX_BUDGETS];
	int n_budgets;
	long seq, batch;
	char *price;
	/* "\n--flag item\n" for each list item taken so far: a value given twice (in one list or
	 * in repeated flags) is refused; it would search and print its layouts twice */
	char seen[16384];
	int top;
	unsigned zmask, rmask, amask, vmask;
	int maxb;
	const char *verify;
	bool verify_set;
	engine_options placements[MAX_PLACEMENTS];
	const char *placement_names[MAX_PLACEMENTS];
	int n_placements;
	const char *calibration;
	int jobs;
	double timeout;
	report_format format;
	int progress; /* 1 --progress, 0 --quiet, -1 when stderr is a terminal */
	plan_progress prog;
	config_job base; /* --impl, --memory-reserve over DeepSpeed's defaults */
} plan_args;

/* False (said) when flag already took item. */
static bool once(plan_args *a, const char *flag, const char *item)
{
	char key[CONFIG_PATH_MAX + 64];
	int n = snprintf(key, sizeof key, "\n%s %s\n", flag, item);
	if (n < 0 || n >= (int)sizeof key)
		return true; /* too long to be anything the item parsers take; they say so */
	if (strstr(a->seen, key)) {
		fprintf(stderr, "spsim plan: %s lists '%s' twice, expected each value once\n", flag, item);
		return false;
	}
	size_t used = strlen(a->seen);
	if (used + (size_t)n < sizeof a->seen) /* past 16 KiB of items, repeats go unnoticed */
		memcpy(a->seen + used, key, (size_t)n + 1);
	return true;
}

/* Splits a comma list in place; calls fn on each item; false on the first failure and on
 * an empty list or item (flag names it). */
static bool each_item(const char *flag, char *list, bool (*fn)(plan_args *, char *), plan_args *a)
{
	if (!cli_check_list("plan", flag, list, ',', CONFIG_PATH_MAX))
		return false;
	char *save = NULL;
	for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save))
		if (!once(a, flag, t) || !fn(a, t))
			return false;
	return true;
}

static bool add_platform(plan_args *a, char *s)
{
	if (a->n_platforms == MAX_PLATFORMS) {
		fprintf(stderr, "spsim plan: at most %d platforms\n", MAX_PLATFORMS);
		return false;
	}
	a->platforms[a->n_platforms++] = s;
	return true;
}

static bool add_budget(plan_args *a, char *s)
{
	long v;
	if (a->n_budgets == MAX_BUDGETS) {
		fprintf(stderr, "spsim plan: at most %d GPU budgets\n", MAX_BUDGETS);
		return false;
	}
	if (!cli_parse_range_long(CONFIG_R_GPUS, s, &v))
		return false;
	a->budgets[a->n_budgets++] = (int)v;
	return true;
}

static bool add_zero(plan_args *a, char *s)
{
	long v;
	if (!cli_parse_int("--zero", s, 0, 3, &v))
		return false;
	a->zmask |= 1u << v;
	return true;
}

static bool add_recompute(plan_args *a, char *s)
{
	if (strcmp(s, "none") == 0)
		a->rmask |= 1;
	else if (strcmp(s, "full") == 0)
		a->rmask |= 2;
	else if (strcmp(s, "selective") == 0)
		a->rmask |= 4;
	else {
		fprintf(stderr, "spsim plan: --recompute expects none, selective or full (comma-separated), got '%s'\n",
			s);
		return false;
	}
	return true;
}

static bool add_a2a(plan_args *a, char *s)
{
	for (int k = 0; k < 3; k++)
		if (strcmp(s, plan_a2a_name((config_a2a)k)) == 0) {
			a->amask |= 1u << k;
			return true;
		}
	fprintf(stderr, "spsim plan: --a2a expects direct, pairwise or hierarchical (comma-separated), got '%s'\n", s);
	return false;
}

/* A strategy row to search, as sweep specs write it (basp:inner=ring is basp-ring). */
static bool add_strategy(plan_args *a, char *s)
{
	plan_strategy st;
	config_error e;
	if (!plan_strategy_parse(s, &st, &e)) {
		fprintf(stderr, "spsim plan: --strategies: %s\n", e.msg);
		return false;
	}
	a->vmask |= 1u << (unsigned)(st.variant - plan_variants);
	return true;
}

static bool add_placement(plan_args *a, char *s)
{
	if (a->n_placements == MAX_PLACEMENTS) {
		fprintf(stderr, "spsim plan: at most %d placements\n", MAX_PLACEMENTS);
		return false;
	}
	engine_options *o = &a->placements[a->n_placements];
	memset(o, 0, sizeof *o);
	if (strcmp(s, "contiguous") == 0)
		o->placement = ENGINE_PLACE_CONTIGUOUS;
	else if (strcmp(s, "strided") == 0)
		o->placement = ENGINE_PLACE_STRIDED;
	else if (strncmp(s, "random:", 7) == 0) {
		long seed;
		if (!cli_parse_int("--placement random:SEED", s + 7, 0, LONG_MAX, &seed))
			return false;
		o->placement = ENGINE_PLACE_RANDOM;
		o->placement_seed = (unsigned long)seed;
	} else {
		fprintf(stderr, "spsim plan: --placement expects contiguous, strided or random:SEED, got '%s'\n", s);
		return false;
	}
	a->placement_names[a->n_placements++] = s;
	return true;
}

/* "2.5" for every platform, or "NAME=2.5,NAME=4" per platform. */
static bool parse_prices(const char *text, const config_platform *p, int n, double *price)
{
	char *copy = strdup(text), *save = NULL;
	if (!copy)
		return false;
	bool ok = true;
	if (!strchr(copy, '=')) {
		double v;
		ok = cli_parse_range(CONFIG_R_PRICE, copy, &v);
		for (int i = 0; ok && i < n; i++)
			price[i] = v;
	} else {
		for (char *t = strtok_r(copy, ",", &save); ok && t; t = strtok_r(NULL, ",", &save)) {
			char *eq = strchr(t, '=');
			if (!eq) {
				fprintf(stderr, "spsim plan: --price: '%s': expected NAME=PRICE\n", t);
				ok = false;
				break;
			}
			*eq = '\0';
			int k = -1;
			for (int i = 0; i < n; i++)
				if (strcmp(p[i].name, t) == 0)
					k = i;
			if (k < 0) {
				fprintf(stderr, "spsim plan: --price: '%s' is not one of the --platform names\n", t);
				ok = false;
			} else if (price[k] > 0) {
				fprintf(stderr, "spsim plan: --price prices '%s' twice, expected one price per platform\n", t);
				ok = false;
			} else {
				ok = cli_parse_range(CONFIG_R_PRICE, eq + 1, &price[k]);
			}
		}
		for (int i = 0; ok && i < n; i++)
			if (price[i] <= 0) {
				fprintf(stderr, "spsim plan: --price gives no price for platform '%s'\n", p[i].name);
				ok = false;
			}
	}
	free(copy);
	return ok;
}

static const char *rc_name(const config_job *j) { return config_recompute_names[j->recompute]; }
static const char *a2a_short(config_a2a a) { return a == CONFIG_A2A_PAIRWISE ? "pair" : a == CONFIG_A2A_HIERARCHICAL ? "hier" : "dir"; }

static void table(const plan_query *q, const plan_candidate *c, long n, plan_rank_by by, bool verified,
		  const char *vname, bool price)
{
	char t[32], m[32], why[512];
	printf("  #  %-16s %5s  %-15s %4s %4s %3s %4s %4s  %-6s %-5s %10s %10s %11s", "platform", "GPUs", "strategy", "SP",
	       "K", "B", "GA", "ZeRO", "recomp", "a2a", "mem/GPU", "step", "tokens/s");
	if (verified)
		printf(" %11s", "analytic");
	if (price)
		printf(" %8s", "$/Mtok");
	printf("  vs #1\n");
	for (long i = 0; i < n; i++) {
		const plan_candidate *x = &c[i];
		plan_explain(q, x, &c[0], by, why, sizeof why);
		printf("%3ld  %-16s %5d  %-15s %4d %4d %3d %4d %4d  %-6s %-5s %10s %10s %11.0f", i + 1,
		       q->platforms[x->platform].name, x->job.gpus, x->variant->name, x->job.sp, x->layout.group_size,
		       x->job.micro_batch, x->job.grad_accum, x->job.zero_stage, rc_name(&x->job), a2a_short(x->job.a2a),
		       report_bytes(x->memory.peak, m, sizeof m), report_time(x->step_time, t, sizeof t), x->tokens_per_s);
		if (verified)
			printf(" %11.0f", x->analytic.tokens_per_s);
		if (price)
			printf(" %8.3f", x->cost_per_mtok);
		printf("  %s", why);
		if (x->also[0])
			printf(" [same layout: %s]", x->also);
		if (verified && !x->has_verified)
			printf(" [%s: %s]", vname, x->verify_error[0] ? x->verify_error : "not run");
		else if (x->placement && strcmp(x->placement, "contiguous") != 0)
			printf(" [placement %s]", x->placement);
		printf("\n");
	}
}

/* Where each variant's best configuration stands, in words. The displayed head (verified)
 * decides when the variant is in it, the rest of the merged analytic list otherwise; a
 * layout counts for every variant that reaches it (plan_merge). all is the unmerged list,
 * for the comparison with the reference variant over the whole job (basp.md's baseline). */
static json_t *verdict(const plan_query *q, const plan_candidate *head, long nh, const plan_candidate *merged, long nm,
		       const plan_candidate *all, long n, const plan_search_stats *st, bool print)
{
	json_t *out = json_array();
	const plan_variant *ref = &plan_variants[0];
	for (const plan_variant *v = plan_variants + 1; v->name; v++) {
		int vi = (int)(v - plan_variants);
		unsigned bit = 1u << vi;
		long rank = -1;
		const plan_candidate *best = NULL;
		for (long i = 0; i < nh && !best; i++)
			if (head[i].variant_mask & bit)
				rank = i, best = &head[i];
		for (long i = nh; i < nm && !best; i++)
			if (merged[i].variant_mask & bit)
				rank = i, best = &merged[i];
		/* The same job with the reference variant over every GPU (SP = W). */
		const plan_candidate *whole = NULL;
		for (long i = 0; best && i < n && !whole; i++)
			if (all[i].variant == ref && all[i].job.sp == all[i].job.gpus && all[i].platform == best->platform &&
			    all[i].job.gpus == best->job.gpus)
				whole = &all[i];
		const plan_candidate *top = nh ? &head[0] : NULL;
		char text[1024], why[512], vs[256] = "", as[200] = "";
		bool wins = false;
		if (best && whole && whole->tokens_per_s > 0)
			snprintf(vs, sizeof vs, "; against %s over all %d GPUs (its best: B=%d, ZeRO-%d, recompute %s) it is %+.1f%% (analytic)",
				 ref->name, whole->job.gpus, whole->job.micro_batch, whole->job.zero_stage, rc_name(&whole->job),
				 100 * (best->analytic.tokens_per_s / whole->analytic.tokens_per_s - 1));
		if (best && best->variant != v) {
			/* Name the layout as this variant writes it (the first such alias). */
			const char *al = strstr(best->also, v->name);
			const char *end = al ? strchr(al, ',') : NULL;
			snprintf(as, sizeof as, " (%.*s, listed as %s SP %d B=%d)", al ? (int)(end ? end - al : (long)strlen(al)) : 0,
				 al ? al : "", best->variant->name, best->job.sp, best->job.micro_batch);
		}
		if (!top) {
			snprintf(text, sizeof text, "%s: no configuration fits, so there is nothing to compare", v->name);
		} else if (!best) {
			if (st->variant_valid[vi] == 0)
				snprintf(text, sizeof text,
					 "%s: no configuration applies here: it needs a micro-batch B > 1 that divides the SP "
					 "size, with whole heads per group of K = SP/B GPUs (B = 1 is %s itself)",
					 v->name, ref->name);
			else
				snprintf(text, sizeof text, "%s: none of its %ld valid configurations fits in GPU memory", v->name,
					 st->variant_valid[vi]);
		} else if (rank == 0) {
			wins = true;
			int K = workload_layout_seq_ranks(&best->layout);
			if (K < best->job.sp) /* BASP: B groups of K, one sequence each */
				snprintf(text, sizeof text,
					 "%s wins: #1 is a %s layout, groups of K=%d GPUs with one sequence each%s%s", v->name,
					 v->name, K, as, vs);
			else /* one group spans the SP domain (Ulysses, plain ring, all-gather, USP) */
				snprintf(text, sizeof text, "%s wins: #1 is a %s layout, one group of %d GPUs per sequence%s%s",
					 v->name, v->name, K, as, vs);
		} else {
			plan_explain(q, best, top, PLAN_RANK_THROUGHPUT, why, sizeof why);
			snprintf(text, sizeof text, "%s does not win here: its best layout (#%ld, K=%d)%s is behind #1 (%s): %s%s",
				 v->name, rank + 1, best->layout.group_size, as, top->variant->name, why, vs);
		}
		if (print && (v == plan_variants + 1 || st->variant_valid[vi] > 0))
			printf("%s.\n", text);
		json_t *o = json_pack("{s:s, s:b, s:s}", "variant", v->name, "wins", wins, "text", text);
		if (best)
			json_object_set_new(o, "best_rank", json_integer(rank + 1));
		json_array_append_new(out, o);
	}
	return out;
}

/* Re-runs c[0..n) on the verify engine under each placement, keeping the best. */
static bool verify(plan_args *a, const plan_query *q, plan_candidate *c, long n, config_error *err)
{
	plan_candidate *tmp = malloc((size_t)(n ? n : 1) * sizeof *tmp);
	if (!tmp)
		return config_fail(err, "out of memory");
	for (int p = 0; p < a->n_placements; p++) {
		memcpy(tmp, c, (size_t)n * sizeof *tmp);
		if (!plan_verify_progress(q, tmp, n, a->verify, &a->placements[p], a->jobs, a->timeout,
					  &a->prog, err)) {
			free(tmp);
			return false;
		}
		for (long i = 0; i < n; i++)
			if (tmp[i].has_verified && (!c[i].has_verified || tmp[i].tokens_per_s > c[i].verified.tokens_per_s)) {
				c[i] = tmp[i];
				c[i].placement = a->placement_names[p];
			} else if (!c[i].has_verified && !tmp[i].has_verified) {
				memcpy(c[i].verify_error, tmp[i].verify_error, sizeof c[i].verify_error);
			}
	}
	free(tmp);
	return true;
}

/* The job settings the flags set (config_job_setting_copy: the job file's table); the
 * planner searches recompute and a2a itself (--recompute, --a2a). */
static void take_settings(config_job *base, const config_job *flags)
{
	for (int k = 0; config_job_setting_key(k); k++)
		config_job_setting_copy(k, base, flags);
}

const struct option cli_plan_options[] = {
	{"model", required_argument, NULL, OPT_MODEL},
	{"platform", required_argument, NULL, OPT_PLATFORM},
	{"gpus", required_argument, NULL, OPT_GPUS},
	{"seq-len", required_argument, NULL, OPT_SEQ},
	{"global-batch", required_argument, NULL, OPT_BATCH},
	{"price", required_argument, NULL, OPT_PRICE},
	{"top", required_argument, NULL, OPT_TOP},
	{"zero", required_argument, NULL, OPT_ZERO},
	{"recompute", required_argument, NULL, OPT_RECOMPUTE},
	{"max-micro-batch", required_argument, NULL, OPT_MAXB},
	{"impl", required_argument, NULL, OPT_IMPL},
	{"memory-reserve", required_argument, NULL, OPT_RESERVE},
	{"a2a", required_argument, NULL, OPT_A2A},
	{"strategies", required_argument, NULL, OPT_STRATEGIES},
	{"verify", required_argument, NULL, OPT_VERIFY},
	{"placement", required_argument, NULL, OPT_PLACEMENT},
	{"calibration", required_argument, NULL, OPT_CAL},
	{"jobs", required_argument, NULL, 'j'},
	{"timeout", required_argument, NULL, OPT_TIMEOUT},
	{"format", required_argument, NULL, OPT_FORMAT},
	{"help", no_argument, NULL, OPT_HELP},
	{"progress", no_argument, NULL, OPT_PROGRESS},
	{"quiet", no_argument, NULL, OPT_QUIET},
	{"attention-kernel", required_argument, NULL, OPT_JOB_SETTING + 0},
	{"offload-activations", no_argument, NULL, OPT_JOB_SETTING + 1},
	{"tile-mlp", required_argument, NULL, OPT_JOB_SETTING + 2},
	{"tile-logits", required_argument, NULL, OPT_JOB_SETTING + 3},
	{"zero-overlap", required_argument, NULL, OPT_JOB_SETTING + 4},
	{"fp32-grad-comm", required_argument, NULL, OPT_JOB_SETTING + 5},
	{"reduce-bucket", required_argument, NULL, OPT_JOB_SETTING + 6},
	{"allgather-bucket", required_argument, NULL, OPT_JOB_SETTING + 7},
	{"prefetch-bucket", required_argument, NULL, OPT_JOB_SETTING + 8},
	{"dtype", required_argument, NULL, OPT_JOB_SETTING + 9},
	{"zero3-prefetch", required_argument, NULL, OPT_JOB_SETTING + 10},
	{"offload-optimizer", required_argument, NULL, OPT_JOB_SETTING + 11},
	{"contiguous-gradients", required_argument, NULL, OPT_JOB_SETTING + 12},
	{NULL, 0, NULL, 0},
};

int cli_cmd_plan(int argc, char **argv)
{
	plan_args a = {.top = 5, .format = REPORT_TABLE, .progress = -1};
	config_job_defaults(&a.base);
	cli_job_args jargs;
	cli_job_init(&jargs);
	char *lists[64];
	int n_lists = 0;
	cli_seen *seen = NULL;
	long v;
	int c;
	int rc = CLI_USAGE;
	optind = 1;
	opterr = 0;
	/* list flags append (each_item); every other value-taking option is given once */
	static const int repeatable[] = {OPT_PLATFORM, OPT_GPUS, OPT_ZERO,       OPT_RECOMPUTE,
					 OPT_A2A,      OPT_STRATEGIES, OPT_PLACEMENT, 0};
	seen = calloc(1, sizeof *seen);
	if (!seen) {
		rc = CLI_FAIL;
		goto out;
	}
	while ((c = getopt_long(argc, argv, ":j:", cli_plan_options, NULL)) != -1) {
		if (!cli_option_once(seen, cli_plan_options, c, optarg, "plan", repeatable))
			goto out;
		char *copy = optarg ? strdup(optarg) : NULL;
		if (copy && n_lists < 64)
			lists[n_lists++] = copy;
		else if (copy) {
			free(copy);
			fprintf(stderr, "spsim plan: too many options\n");
			goto out;
		}
		bool ok = true;
		switch (c) {
		case OPT_MODEL:
			if (!optarg[0]) {
				fprintf(stderr, "spsim plan: --model expects a name or a file path, got an empty value\n");
				ok = false;
			} else if (strlen(optarg) >= sizeof a.model) {
				fprintf(stderr, "spsim plan: --model: too long\n");
				ok = false;
			} else
				strcpy(a.model, optarg);
			break;
		case OPT_PLATFORM: ok = each_item("--platform", copy, add_platform, &a); break;
		case OPT_GPUS: ok = each_item("--gpus", copy, add_budget, &a); break;
		case OPT_SEQ: ok = cli_parse_range_long(CONFIG_R_SEQ_LEN, optarg, &a.seq); break;
		case OPT_BATCH: ok = cli_parse_range_long(CONFIG_R_GLOBAL_BATCH, optarg, &a.batch); break;
		case OPT_PRICE:
			ok = cli_check_list("plan", "--price", copy, ',', CONFIG_PATH_MAX);
			a.price = copy;
			break;
		case OPT_TOP:
			ok = cli_parse_range_long(CONFIG_R_PLAN_TOP, optarg, &v);
			a.top = (int)v;
			break;
		case OPT_ZERO: ok = each_item("--zero", copy, add_zero, &a); break;
		case OPT_RECOMPUTE: ok = each_item("--recompute", copy, add_recompute, &a); break;
		case OPT_A2A: ok = each_item("--a2a", copy, add_a2a, &a); break;
		case OPT_STRATEGIES: ok = each_item("--strategies", copy, add_strategy, &a); break;
		case OPT_IMPL:
		case OPT_RESERVE:
			/* the job flags' own parsing and messages */
			ok = cli_job_option(&jargs, c == OPT_IMPL ? CLI_OPT_IMPL : CLI_OPT_MEMORY_RESERVE, optarg) > 0;
			take_settings(&a.base, &jargs.job);
			break;
		case OPT_MAXB:
			ok = cli_parse_int("--max-micro-batch", optarg, 1, 1 << 20, &v);
			a.maxb = (int)v;
			break;
		case OPT_VERIFY:
			a.verify = copy;
			a.verify_set = true;
			if (strcmp(copy, "none") != 0 && !engine_find(copy)) {
				fprintf(stderr, "spsim plan: --verify: engine '%s' is not built into this spsim; expected one of:",
					copy);
				for (int i = 0; engine_registry[i]; i++)
					fprintf(stderr, " %s", engine_registry[i]->name);
				fprintf(stderr, " or none\n");
				ok = false;
			}
			break;
		case OPT_PLACEMENT: ok = each_item("--placement", copy, add_placement, &a); break;
		case OPT_CAL:
			ok = copy[0] != '\0';
			if (!ok)
				fprintf(stderr, "spsim plan: --calibration expects a file path, got an empty value\n");
			a.calibration = copy;
			break;
		case 'j':
			ok = cli_parse_range_long(CONFIG_R_JOBS, optarg, &v);
			a.jobs = (int)v;
			break;
		case OPT_TIMEOUT: ok = cli_parse_range(CONFIG_R_TIMEOUT, optarg, &a.timeout); break;
		case OPT_FORMAT:
			ok = report_format_parse(optarg, &a.format) && a.format != REPORT_CSV;
			if (!ok)
				fprintf(stderr, "spsim plan: --format expects table or json, got '%s'\n", optarg);
			break;
		case OPT_HELP: plan_help(stdout); rc = CLI_OK; goto out;
		case OPT_PROGRESS:
		case OPT_QUIET: ok = cli_progress_flag(&a.progress, c == OPT_PROGRESS); break;
		case ':': cli_getopt_refused(c, argv); goto out;
		default:
			if (c >= OPT_JOB_SETTING && c < OPT_JOB_SETTING + N_JOB_SETTINGS) {
				ok = cli_job_option(&jargs, job_setting_ids[c - OPT_JOB_SETTING], optarg) > 0;
				take_settings(&a.base, &jargs.job);
				break;
			}
			cli_getopt_refused(c, argv);
			goto out;
		}
		if (!ok)
			goto out;
	}
	if (optind < argc) {
		fprintf(stderr, "spsim plan: unexpected argument '%s' (see spsim plan --help)\n", argv[optind]);
		goto out;
	}
	const char *missing = !a.model[0] ? "--model" : !a.n_platforms ? "--platform" : !a.n_budgets ? "--gpus"
			      : !a.seq ? "--seq-len" : !a.batch ? "--global-batch" : NULL;
	if (missing) {
		fprintf(stderr, "spsim plan: %s is required (see spsim plan --help)\n", missing);
		goto out;
	}
	if (a.calibration && a.n_platforms > 1) {
		fprintf(stderr, "spsim plan: --calibration describes one cluster; give a single --platform with it\n");
		goto out;
	}
	if (a.base.offload_activations && a.rmask && !(a.rmask & 2u)) {
		fprintf(stderr, "spsim plan: --offload-activations moves the activation checkpoints, which exist only "
				"with full recompute; add full to --recompute (e.g. --recompute full)\n");
		goto out;
	}
	if (a.base.offload_optimizer == CONFIG_OFFLOAD_OPT_CPU && a.zmask == 1u) {
		fprintf(stderr, "spsim plan: --offload-optimizer cpu needs ZeRO stage 1, 2 or 3 (DeepSpeed offloads the "
				"optimizer of its ZeRO optimizers only); add one to --zero (e.g. --zero 1,2,3)\n");
		goto out;
	}
	if (a.zmask) { /* the settings every searched stage leaves unused: the highest stage uses the most */
		config_job top = a.base;
		char unused[256];
		for (top.zero_stage = 3; !((a.zmask >> top.zero_stage) & 1u); top.zero_stage--)
			;
		if (config_job_unused_zero(&top, unused, sizeof unused))
			fprintf(stderr, "spsim plan: warning: no ZeRO stage searched (--zero) uses %s; ignored\n", unused);
	}
	const bool placement_set = a.n_placements > 0;
	if (!a.n_placements) {
		char contiguous[] = "contiguous";
		add_placement(&a, contiguous);
		a.placement_names[0] = "contiguous";
	}
	if (!a.verify_set)
		a.verify = engine_find("simgrid") ? "simgrid" : "none";
	if (strcmp(a.verify, "none") == 0 && (placement_set || a.timeout > 0 || a.jobs > 0)) {
		/* these shape the re-runs only: said, not silently dropped */
		fprintf(stderr, "spsim plan: warning: --verify none re-runs nothing; ignored: %s%s%s%s%s (settings of the "
				"re-runs)\n",
			placement_set ? "--placement" : "", placement_set && (a.timeout > 0 || a.jobs > 0) ? ", " : "",
			a.timeout > 0 ? "--timeout" : "", a.timeout > 0 && a.jobs > 0 ? ", " : "", a.jobs > 0 ? "-j" : "");
	} else if (strcmp(a.verify, "analytic") == 0) {
		for (int i = 0; i < a.n_placements; i++)
			if (a.placements[i].placement != ENGINE_PLACE_CONTIGUOUS) {
				fprintf(stderr, "spsim plan: --placement %s: the analytic engine (--verify analytic) models "
						"contiguous placement only; use --verify simgrid, or --placement contiguous\n",
					a.placement_names[i]);
				goto out;
			}
	}

	config_error err = {""};
	config_model m;
	config_platform plats[MAX_PLATFORMS];
	double prices[MAX_PLATFORMS] = {0};
	if (!config_load_model(a.model, &m, &err)) {
		cli_errorf("--model: %s\n", err.msg);
		goto out;
	}
	for (int i = 0; i < a.n_platforms; i++)
		if (!config_load_platform(a.platforms[i], &plats[i], &err)) {
			cli_errorf("--platform: %s\n", err.msg);
			goto out;
		}
	if (a.calibration) {
		if (!config_calibrate_platform(a.calibration, &plats[0], NULL, &err)) {
			cli_errorf("--calibration: %s\n", err.msg);
			goto out;
		}
	}
	if (a.price && !parse_prices(a.price, plats, a.n_platforms, prices))
		goto out;
	for (int z = 0; z < 4; z++) { /* the verify engine runs the buckets at every stage searched */
		config_job at = a.base;
		at.zero_stage = z;
		if ((!a.zmask || ((a.zmask >> z) & 1u)) && !engine_buckets_supported(a.verify, &m, &at, &err)) {
			fprintf(stderr, "spsim plan: --verify %s at ZeRO-%d: %s\n", a.verify, z, err.msg);
			goto out;
		}
	}
	for (int i = 0; i < a.n_platforms; i++) /* the verify engine runs on every platform */
		if (!engine_platform_supported(a.verify, &plats[i], &err)) {
			fprintf(stderr, "spsim plan: --verify %s: %s\n", a.verify, err.msg);
			goto out;
		}
	int usable = 0;
	for (int i = 0; i < a.n_platforms; i++)
		for (int b = 0; b < a.n_budgets; b++)
			if (a.budgets[b] > plats[i].gpus_per_node && a.budgets[b] % plats[i].gpus_per_node)
				fprintf(stderr, "spsim plan: note: %d GPUs is not a whole number of %s's %d-GPU nodes; skipped there\n",
					a.budgets[b], plats[i].name, plats[i].gpus_per_node);
			else
				usable++;
	if (!usable) {
		fprintf(stderr, "spsim plan: nothing to search: no --gpus budget is a whole number of nodes (or at most "
				"one node) on any --platform; use a multiple of %d GPUs%s\n",
			plats[0].gpus_per_node, a.n_platforms > 1 ? " (the first platform's node size)" : "");
		goto out;
	}

	plan_query q = {.model = &m, .platforms = plats, .price = a.price ? prices : NULL, .n_platforms = a.n_platforms,
			.budgets = a.budgets, .n_budgets = a.n_budgets, .seq_len = a.seq, .global_tokens = a.batch,
			.zero_mask = a.zmask, .recompute_mask = a.rmask, .a2a_mask = a.amask, .max_micro_batch = a.maxb,
			.variant_mask = a.vmask,
			.base = &a.base};
	plan_candidate *cands = NULL;
	long n = 0;
	plan_search_stats st;
	/* The search can take minutes over many platforms and budgets: its layouts, rate and
	 * ETA on stderr under the same rule as the re-runs, and Ctrl-C keeps what it found. */
	bool show = a.progress == 1 || (a.progress < 0 && isatty(fileno(stderr)));
	plan_progress_start(&a.prog, stderr, 0, !show);
	a.prog.unit = "layouts";
	a.prog.no_failures = true;
	q.progress = &a.prog;
	q.stop = &plan_stop;
	plan_stop = 0;
	struct sigaction stop = {.sa_handler = on_sigint, .sa_flags = SA_RESETHAND}, old_int;
	sigemptyset(&stop.sa_mask);
	sigaction(SIGINT, &stop, &old_int);
	if (show)
		fprintf(stderr, "plan: searching on the analytic engine (Ctrl-C: stop and rank what was searched)\n");
	bool searched = plan_search(&q, &cands, &n, &st, &err);
	plan_progress_end(&a.prog);
	if (!searched) {
		sigaction(SIGINT, &old_int, NULL);
		fprintf(stderr, "spsim plan: %s\n", err.msg);
		goto out;
	}
	rc = CLI_OK;
	if (st.interrupted) {
		fprintf(stderr, "spsim plan: interrupted after %ld of %ld layouts (%ld configurations); ranking what was "
				"searched, without re-runs\n", st.layouts, st.layouts_total, st.searched);
		a.verify = "none";
		a.verify_set = true;
		rc = CLI_INTERRUPTED;
	}
	/* One row per layout: BASP (N, B) and Ulysses (SP N/B) x replicas are merged. */
	plan_candidate *merged = malloc((size_t)(n ? n : 1) * sizeof *merged), *tput = NULL, *cost = NULL;
	if (!merged) {
		rc = CLI_FAIL;
		goto done;
	}
	if (n) /* cands is NULL when nothing fits */
		memcpy(merged, cands, (size_t)n * sizeof *merged);
	long nm = plan_merge(merged, n);
	long k = nm < a.top ? nm : a.top;
	bool verifying = strcmp(a.verify, "none") != 0 && k > 0;
	long runs = 0, verified = 0; /* re-runs planned; configurations with a re-run result */
	bool rerun_stopped = false; /* Ctrl-C during the re-runs */
	/* The heads of both rankings, verified and re-ranked among themselves. */
	tput = malloc((size_t)(k ? k : 1) * sizeof *tput);
	if (!tput) {
		rc = CLI_FAIL;
		goto done;
	}
	memcpy(tput, merged, (size_t)k * sizeof *tput);
	if (a.price) {
		plan_candidate *byc = malloc((size_t)(n ? n : 1) * sizeof *byc);
		cost = malloc((size_t)(k ? k : 1) * sizeof *cost);
		if (!byc || !cost) {
			free(byc);
			rc = CLI_FAIL;
			goto done;
		}
		if (n)
			memcpy(byc, cands, (size_t)n * sizeof *byc);
		plan_rank(byc, n, PLAN_RANK_COST);
		long nc = plan_merge(byc, n);
		memcpy(cost, byc, (size_t)(nc < k ? nc : k) * sizeof *cost);
		free(byc);
	}
	if (verifying) {
		/* The re-runs are the long phase (SimGrid runs of seconds to minutes each): their
		 * count, rate and ETA go to stderr on a terminal or with --progress, never into a
		 * pipe unasked. */
		runs = k * a.n_placements * (cost ? 2 : 1);
		plan_progress_start(&a.prog, stderr, runs, !show);
		a.prog.unit = a.verify && strcmp(a.verify, "simgrid") == 0 ? "SimGrid runs" : "re-runs";
		if (show)
			fprintf(stderr, "plan: searched %ld configurations in the analytic engine; re-running the top %ld on %s "
					"(%ld runs); Ctrl-C: stop and rank with the re-runs finished\n", st.searched, k,
				a.verify, runs);
		/* After a Ctrl-C the remaining calls start nothing; they mark what has no re-run. */
		bool ok = verify(&a, &q, tput, k, &err) && (!cost || verify(&a, &q, cost, k, &err));
		sigaction(SIGINT, &old_int, NULL);
		plan_progress_end(&a.prog);
		rerun_stopped = plan_stop != 0;
		for (long i = 0; i < k; i++)
			verified += tput[i].has_verified + (cost && cost[i].has_verified);
		if (ok && rerun_stopped) {
			fprintf(stderr, "spsim plan: interrupted during the re-runs after %ld of %ld %s runs; ranking with the "
					"%ld results they gave, the rest on the analytic engine only\n", a.prog.done, runs,
				a.verify, verified);
			rc = CLI_INTERRUPTED;
		}
		if (!ok) {
			fprintf(stderr, "spsim plan: --verify %s: %s\n", a.verify, err.msg);
			rc = CLI_FAIL;
			goto done;
		}
		plan_rank(tput, k, PLAN_RANK_THROUGHPUT);
		if (cost)
			plan_rank(cost, k, PLAN_RANK_COST);
	}

	if (a.format == REPORT_JSON) {
		json_t *ranking = json_array(), *cranking = json_array();
		char why[512];
		for (long i = 0; i < k; i++) {
			json_t *o = plan_candidate_json(&q, &tput[i]);
			plan_explain(&q, &tput[i], &tput[0], PLAN_RANK_THROUGHPUT, why, sizeof why);
			json_object_set_new(o, "rank", json_integer(i + 1));
			json_object_set_new(o, "why", json_string(why));
			json_array_append_new(ranking, o);
			if (cost) {
				o = plan_candidate_json(&q, &cost[i]);
				plan_explain(&q, &cost[i], &cost[0], PLAN_RANK_COST, why, sizeof why);
				json_object_set_new(o, "rank", json_integer(i + 1));
				json_object_set_new(o, "why", json_string(why));
				json_array_append_new(cranking, o);
			}
		}
		json_t *j = json_pack("{s:s, s:I, s:I, s:I, s:{s:I, s:I, s:I, s:I, s:I}, s:s, s:o, s:o}", "model", m.name,
				      "seq_len", (json_int_t)a.seq, "global_batch_tokens", (json_int_t)a.batch, "sequences_per_step",
				      (json_int_t)(a.batch / a.seq), "searched", "configurations", (json_int_t)st.searched, "fit",
				      (json_int_t)st.fit, "no_fit", (json_int_t)st.no_fit, "invalid", (json_int_t)st.invalid,
				      "duplicate", (json_int_t)st.duplicate, "verified_on", a.verify, "ranking", ranking,
				      "verdict", verdict(&q, tput, k, merged, nm, cands, n, &st, false));
		if (n == 0 && st.invalid > 0 && st.no_fit == 0)
			json_object_set_new(j, "rejected_why", json_string(st.invalid_why));
		if (st.interrupted || rerun_stopped)
			json_object_set_new(j, "interrupted",
					    json_pack("{s:s, s:I, s:I, s:I, s:I, s:I}", "phase", st.interrupted ? "search" : "re-runs",
						      "layouts_searched", (json_int_t)st.layouts, "layouts_total",
						      (json_int_t)st.layouts_total, "reruns_finished", (json_int_t)a.prog.done * !st.interrupted,
						      "reruns_total", (json_int_t)runs, "verified", (json_int_t)verified));
		if (cost)
			json_object_set_new(j, "cost_ranking", cranking);
		else
			json_decref(cranking);
		report_json_print(stdout, j);
		json_decref(j);
		goto done;
	}

	printf("plan: %s, sequences of %ld tokens, global batch %ld tokens (%ld sequences per step)\n", m.name, a.seq,
	       a.batch, a.batch / a.seq);
	printf("platforms:");
	for (int i = 0; i < a.n_platforms; i++)
		printf(" %s%s", plats[i].name, i + 1 < a.n_platforms ? "," : "");
	printf("; GPU budgets:");
	for (int b = 0; b < a.n_budgets; b++)
		printf(" %d%s", a.budgets[b], b + 1 < a.n_budgets ? "," : "");
	printf("\nsearched %ld configurations: %ld fit in GPU memory (%ld distinct layouts), %ld do not, %ld rejected by "
	       "the job check, %ld duplicates (another variant's configuration: BASP at B=1 is Ulysses)\n",
	       st.searched, st.fit, nm, st.no_fit, st.invalid, st.duplicate);
	if (st.interrupted)
		printf("interrupted: the search stopped after %ld of %ld layouts; the ranking covers those only\n",
		       st.layouts, st.layouts_total);
	if (rerun_stopped)
		printf("interrupted: the re-runs on %s stopped after %ld of %ld runs; %ld results re-ranked, the rest "
		       "ranked on the analytic engine only (marked)\n",
		       a.verify, a.prog.done, runs, verified);
	if (n == 0 && st.invalid > 0 && st.no_fit == 0) { /* not memory: the settings given rule every one out */
		printf("\nno configuration passes the job check; the first rejected: %s\n", st.invalid_why);
		goto done;
	}
	if (n == 0 && st.interrupted) { /* not memory: the search did not get that far */
		printf("\nnothing to rank: none of the %ld layouts searched before the interrupt fits in GPU memory\n",
		       st.layouts);
		goto done;
	}
	if (n == 0) {
		/* suggest only the settings the search has not tried already */
		bool tried_z3 = !a.zmask || (a.zmask & 8u), tried_full = !a.rmask || (a.rmask & 2u);
		printf("\nno configuration fits in GPU memory: try more GPUs, a shorter sequence%s%s%s.\n",
		       tried_z3 ? "" : ", ZeRO-3 (--zero 3)", tried_full ? "" : ", recompute (--recompute full)",
		       tried_z3 && tried_full ? " (ZeRO-3 and full recompute were searched)" : "");
		goto done;
	}
	if (verifying)
		printf("ranked by tokens/s: the analytic engine searched, the top %ld were re-run on %s%s and re-ranked\n\n", k,
		       a.verify, rerun_stopped ? " until the interrupt" : "");
	else
		printf("ranked by tokens/s on the analytic engine%s\n\n",
		       a.verify_set ? "" : " (the simgrid engine is not built in: no re-run)");
	table(&q, tput, k, PLAN_RANK_THROUGHPUT, verifying, a.verify, cost != NULL);
	if (cost) {
		printf("\nranked by cost per million tokens:\n\n");
		table(&q, cost, k, PLAN_RANK_COST, verifying, a.verify, true);
	}
	printf("\n");
	json_decref(verdict(&q, tput, k, merged, nm, cands, n, &st, true));
done:
	sigaction(SIGINT, &old_int, NULL);
	free(merged);
	free(tput);
	free(cost);
	free(cands);
out:
	for (int i = 0; i < n_lists; i++)
		free(lists[i]);
	free(seen);
	return rc;
}
