/* The planner: enumerate, filter by memory, evaluate with the analytic engine, rank,
 * explain; re-run the leaders on a second engine.
 *
 * Every configuration trains the same global batch per optimizer step, so step times
 * compare directly and tokens/s = global_tokens / step_time. For W GPUs, SP degree N and
 * micro-batch B there are R = W/N data-parallel replicas, and the gradient accumulation is
 * fixed by the batch: G = global_sequences / (R x B) (config.h: B sequences per SP domain
 * per micro-step). BASP's group size is then K = N / B. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "config/ranges.h"
#include "plan/plan.h"

static int variant_index(const plan_variant *v) { return (int)(v - plan_variants); }

static bool push(plan_candidate **v, long *n, long *cap, const plan_candidate *c)
{
	if (*n == *cap) {
		long nc = *cap ? *cap * 2 : 256;
		plan_candidate *p = realloc(*v, (size_t)nc * sizeof *p);
		if (!p)
			return false;
		*v = p;
		*cap = nc;
	}
	(*v)[(*n)++] = *c;
	return true;
}

static double cost_of(const plan_query *q, const plan_candidate *c)
{
	double price = q->price ? q->price[c->platform] : 0;
	if (price <= 0 || c->tokens_per_s <= 0)
		return 0;
	/* $ per GPU-hour x GPUs / 3600 = $ per second; / tokens per second x 1e6. */
	return price * c->job.gpus / 3600.0 / c->tokens_per_s * 1e6;
}

/* One platform and budget of a search. */
typedef struct search {
	const plan_query *q;
	const config_model *m;
	config_platform p;
	int pi;
	plan_search_stats *st;
	const engine_ops *e;
	unsigned zmask, rmask, amask;
	plan_candidate *v;
	long n, cap, order;
} search;

/* The all-to-all group a job's ranks exchange within (the larger one for unequal BASP). */
static int a2a_group(const config_job *job)
{
	if (config_job_usp(job))
		return job->ulysses_degree;
	if (job->strategy != CONFIG_STRATEGY_BASP)
		return job->sp;
	return (job->sp + job->micro_batch - 1) / job->micro_batch;
}

/* Counts n configurations the job check rejects, keeping the first reason. */
static void reject(plan_search_stats *st, long n, const config_error *why)
{
	if (!st->invalid)
		snprintf(st->invalid_why, sizeof st->invalid_why, "%s", why->msg);
	st->invalid += n;
}

/* Every ZeRO stage x recompute x all-to-all algorithm of one job: the job check, the
 * memory filter, the engine, and the fitting ones into the list. False only on a hard
 * error (out of memory, an engine failure). */
static bool try_job(search *x, const plan_variant *var, config_job job, config_error *err)
{
	plan_search_stats *st = x->st;
	int vi = (int)(var - plan_variants);
	/* The algorithm matters only for groups that leave the node; elsewhere the first
	 * one asked for stands for all. */
	bool spans = a2a_group(&job) > x->p.gpus_per_node;
	int algs[3], na = 0;
	for (int a = 0; a < 3; a++)
		if (((x->amask >> a) & 1) && (spans || na == 0))
			algs[na++] = a;
	if (config_job_ring(&job) && !config_job_usp(&job)) { /* no all-to-all: one run, direct */
		algs[0] = CONFIG_A2A_DIRECT;
		na = 1;
		job.a2a = CONFIG_A2A_DIRECT;
	}
	int zr = 0;
	for (int z = 0; z < 4; z++)
		for (int r = 0; r < CONFIG_RECOMPUTES; r++)
			zr += ((x->zmask >> z) & 1) && ((x->rmask >> r) & 1);
	st->searched += (long)zr * na;
	if (var->same_as_other && var->same_as_other(&job)) {
		st->duplicate += (long)zr * na;
		return true;
	}
	config_error sub;
	/* Offloaded activations need full recompute (workload_check_techniques): the base
	 * job is checked as a full-recompute one and each recompute of the loop below on
	 * its own. */
	if (job.offload_activations)
		job.recompute = CONFIG_RECOMPUTE_FULL;
	if (job.offload_optimizer == CONFIG_OFFLOAD_OPT_CPU && job.zero_stage < 1) /* likewise ZeRO >= 1 */
		job.zero_stage = 1;
	if (!workload_check(x->m, &x->p, &job, &sub)) {
		reject(st, (long)zr * na, &sub);
		return true;
	}
	/* The memory model first, where one layout describes the job (every divisible one):
	 * it is cheap, and most of a long-context space does not fit. */
	bool single = !(job.strategy == CONFIG_STRATEGY_BASP && job.sp % job.micro_batch != 0);
	workload_layout layout;
	if (single && !workload_layout_make(x->m, &job, &layout, &sub)) {
		reject(st, (long)zr * na, &sub);
		return true;
	}
	plan_sim *sim = malloc(sizeof *sim);
	if (!sim)
		return config_fail(err, "out of memory");
	bool ok = true;
	for (int z = 0; ok && z < 4; z++) {
		if (!((x->zmask >> z) & 1))
			continue;
		for (int r = 0; ok && r < CONFIG_RECOMPUTES; r++) {
			if (!((x->rmask >> r) & 1))
				continue;
			job.zero_stage = z;
			job.recompute = (config_recompute)r; /* bit r: none, full, selective */
			if ((job.offload_activations || job.offload_optimizer == CONFIG_OFFLOAD_OPT_CPU) &&
			    !workload_check_techniques(&x->p, &job, &sub)) {
				reject(st, na, &sub);
				continue;
			}
			st->variant_valid[vi] += na;
			if (single) {
				workload_memory mem;
				workload_memory_compute(x->m, &x->p, &job, &layout, &mem);
				if (!mem.fits) {
					st->no_fit += na;
					continue;
				}
			}
			for (int a = 0; ok && a < na; a++) {
				job.a2a = (config_a2a)algs[a];
				if (!plan_simulate(x->m, &x->p, &job, x->e, (engine_options){0}, sim, err)) {
					ok = false;
					break;
				}
				plan_candidate c = {.order = x->order++, .platform = x->pi, .nodes = x->p.nodes, .variant = var,
						    .job = job, .layout = sim->primary->layout, .memory = sim->memory,
						    .analytic = sim->res};
				plan_sim_finish(sim);
				if (!c.memory.fits) {
					st->no_fit++;
					continue;
				}
				c.analytic.engine = x->e->name;
				c.tokens_per_s = c.analytic.tokens_per_s;
				c.step_time = c.analytic.step_time;
				c.cost_per_mtok = cost_of(x->q, &c);
				st->fit++;
				st->variant_fit[vi]++;
				if (!push(&x->v, &x->n, &x->cap, &c))
					ok = config_fail(err, "out of memory");
			}
		}
	}
	free(sim);
	return ok;
}

/* Every (platform, budget, SP degree, micro-batch, variant) job of the query in search
 * order, each a layout whose ZeRO stages, recomputes and all-to-all algorithms try_job
 * evaluates: counted into st->layouts_total (count), or tried, with progress after each and
 * a stop between two (q->stop set: st->interrupted, what was evaluated kept). */
static bool walk(search *x, const config_job *base, long seqs, bool count, config_error *err)
{
	const plan_query *q = x->q;
	plan_search_stats *st = x->st;
	for (int pi = 0; pi < q->n_platforms; pi++) {
		for (int bi = 0; bi < q->n_budgets; bi++) {
			const int W = q->budgets[bi];
			x->p = q->platforms[pi];
			x->pi = pi;
			if (W <= 0 || (W > x->p.gpus_per_node && W % x->p.gpus_per_node != 0)) {
				st->skipped_budgets++;
				continue;
			}
			x->p.nodes = (W + x->p.gpus_per_node - 1) / x->p.gpus_per_node;
			for (int N = 1; N <= W; N++) {
				if (W % N)
					continue;
				const int R = W / N;
				if (seqs % R) {
					st->no_batch++;
					continue;
				}
				const long per = seqs / R; /* sequences per replica per step */
				/* B and per / B within the micro-batch and gradient-accumulation rows
				 * (the job check refuses the rest): walking B from 1 to per hung on a
				 * 2^52-token batch (2^40 sequences) and cast B and per / B past int */
				const long mb_max = (long)config_range_get(CONFIG_R_MICRO_BATCH)->hi,
					   ga_max = (long)config_range_get(CONFIG_R_GRAD_ACCUM)->hi;
				for (long B = (per + ga_max - 1) / ga_max; B <= per && B <= mb_max; B++) {
					if (per % B || (q->max_micro_batch > 0 && B > q->max_micro_batch))
						continue;
					for (const plan_variant *var = plan_variants; var->name; var++)
						for (int alt = 0; alt == 0 || var->expand; alt++) {
							if (q->variant_mask ? !((q->variant_mask >> variant_index(var)) & 1)
									    : var->opt_in)
								break;
							config_job job = *base;
							job.strategy = var->strategy;
							job.gpus = W;
							job.sp = N;
							job.micro_batch = (int)B;
							job.grad_accum = (int)(per / B);
							job.seq_len = q->seq_len;
							if (var->expand && !var->expand(&job, alt))
								break;
							if (count) {
								st->layouts_total++;
								continue;
							}
							if (q->stop && *q->stop) {
								st->interrupted = true;
								return true;
							}
							if (!try_job(x, var, job, err))
								return false;
							st->layouts++;
							if (q->progress)
								plan_progress_update(q->progress, st->layouts, 0);
						}
				}
			}
		}
	}
	return true;
}

bool plan_search(const plan_query *q, plan_candidate **out, long *n_out, plan_search_stats *st, config_error *err)
{
	*out = NULL;
	*n_out = 0;
	memset(st, 0, sizeof *st);
	if (!q->model || q->n_platforms <= 0 || q->n_budgets <= 0)
		return config_fail(err, "a plan needs a model, at least one platform and at least one GPU budget");
	if (q->seq_len <= 0 || q->global_tokens <= 0)
		return config_fail(err, "a plan needs a sequence length and a global batch in tokens");
	if (q->global_tokens % q->seq_len != 0)
		return config_fail(err,
				   "the global batch of %ld tokens is not a whole number of %ld-token sequences; use a "
				   "multiple of the sequence length",
				   q->global_tokens, q->seq_len);
	const long seqs = q->global_tokens / q->seq_len;
	config_job base;
	if (q->base)
		base = *q->base;
	else
		config_job_defaults(&base);
	search x = {.q = q, .m = q->model, .st = st, .e = engine_find("analytic"),
		    .zmask = q->zero_mask ? q->zero_mask : 0xF, .rmask = q->recompute_mask ? q->recompute_mask : 3,
		    .amask = q->a2a_mask ? q->a2a_mask : 7};
	if (q->progress) { /* the total first: a cheap pass that evaluates nothing */
		plan_search_stats counted = {0};
		x.st = &counted;
		walk(&x, &base, seqs, true, err);
		x.st = st;
		st->layouts_total = counted.layouts_total;
		q->progress->total = st->layouts_total;
	}
	if (!walk(&x, &base, seqs, false, err)) {
		free(x.v);
		return false;
	}
	plan_rank(x.v, x.n, PLAN_RANK_THROUGHPUT);
	*out = x.v;
	*n_out = x.n;
	return true;
}

/* ---------------------------------------------------------- equivalence --- */
bool plan_same_layout(const plan_candidate *a, const plan_candidate *b)
{
	return a->platform == b->platform && a->job.gpus == b->job.gpus && a->job.seq_len == b->job.seq_len &&
	       a->layout.group_size == b->layout.group_size && a->layout.seqs_per_group == b->layout.seqs_per_group &&
	       a->layout.tokens_per_rank == b->layout.tokens_per_rank && a->layout.ring == b->layout.ring &&
	       a->job.grad_accum == b->job.grad_accum &&
	       a->job.zero_stage == b->job.zero_stage && a->job.recompute == b->job.recompute &&
	       a->memory.peak == b->memory.peak && a->analytic.step_time == b->analytic.step_time;
}

long plan_merge(plan_candidate *c, long n)
{
	long m = 0;
	for (long i = 0; i < n; i++) {
		/* One layout has one tokens/s and one cost: in a list ranked by either, its
		 * names sit in the run of equal values just before. */
		long j = m - 1;
		while (j >= 0 &&
		       (c[j].tokens_per_s == c[i].tokens_per_s ||
			(c[j].cost_per_mtok > 0 && c[j].cost_per_mtok == c[i].cost_per_mtok)) &&
		       !plan_same_layout(&c[j], &c[i]))
			j--;
		if (j >= 0 && plan_same_layout(&c[j], &c[i])) {
			plan_candidate *k = &c[j];
			const plan_candidate *alias = &c[i];
			plan_candidate former;
			/* A row is named the way a user configures the layout: a BASP layout (groups
			 * of K GPUs, one sequence each) reached as Ulysses SP K over replicas is
			 * listed as basp, with the Ulysses spelling among the other names. */
			if (variant_index(k->variant) == 0 && variant_index(c[i].variant) > 0) {
				former = *k;
				*k = c[i];
				k->order = former.order;
				k->variant_mask = former.variant_mask;
				memcpy(k->also, former.also, sizeof k->also);
				alias = &former;
			}
			k->variant_mask |= 1u << variant_index(alias->variant) | 1u << variant_index(c[i].variant);
			size_t u = strlen(k->also);
			if (u + 48 < sizeof k->also)
				snprintf(k->also + u, sizeof k->also - u, "%s%s SP %d B=%d%s%s", u ? ", " : "",
					 alias->variant->name, alias->job.sp, alias->job.micro_batch,
					 alias->job.a2a != k->job.a2a ? " a2a " : "",
					 alias->job.a2a != k->job.a2a ? plan_a2a_name(alias->job.a2a) : "");
			continue;
		}
		c[m] = c[i];
		c[m].variant_mask |= 1u << variant_index(c[i].variant);
		m++;
	}
	return m;
}

/* ---------------------------------------------------------------- ranking --- */
static int tie_break(const plan_candidate *a, const plan_candidate *b)
{
	if (a->job.gpus != b->job.gpus)
		return a->job.gpus < b->job.gpus ? -1 : 1;
	if (a->memory.peak != b->memory.peak)
		return a->memory.peak < b->memory.peak ? -1 : 1;
	return a->order < b->order ? -1 : a->order > b->order;
}

static int by_throughput(const void *x, const void *y)
{
	const plan_candidate *a = x, *b = y;
	if (a->tokens_per_s != b->tokens_per_s)
		return a->tokens_per_s > b->tokens_per_s ? -1 : 1;
	return tie_break(a, b);
}

static int by_cost(const void *x, const void *y)
{
	const plan_candidate *a = x, *b = y;
	if (a->cost_per_mtok != b->cost_per_mtok)
		return a->cost_per_mtok < b->cost_per_mtok ? -1 : 1;
	return tie_break(a, b);
}

void plan_rank(plan_candidate *c, long n, plan_rank_by by)
{
	if (n > 1)
		qsort(c, (size_t)n, sizeof *c, by == PLAN_RANK_COST ? by_cost : by_throughput);
}

/* ------------------------------------------------------------ explanation --- */
static const engine_result *result_of(const plan_candidate *c) { return c->has_verified ? &c->verified : &c->analytic; }

/* The settings that differ between c and best and bear on one breakdown term (term < 0:
 * every term, for a tie). */
static void setting(const plan_query *q, const plan_candidate *c, const plan_candidate *b, int term, char *buf,
		    size_t len)
{
	size_t used = 0;
	buf[0] = '\0';
#define ADD(...)                                                                                              \
	do {                                                                                                  \
		if (used < len)                                                                               \
			used += (size_t)snprintf(buf + used, len - used, "%s", used ? ", " : "");             \
		if (used < len)                                                                               \
			used += (size_t)snprintf(buf + used, len - used, __VA_ARGS__);                        \
	} while (0)
	if (c->platform != b->platform)
		ADD("%s vs %s", q->platforms[c->platform].name, q->platforms[b->platform].name);
	if (c->job.gpus != b->job.gpus)
		ADD("%d GPUs vs %d", c->job.gpus, b->job.gpus);
	if ((term < 0 || term == 0) && c->job.recompute != b->job.recompute)
		ADD("recompute %s vs %s", config_recompute_names[c->job.recompute],
		    config_recompute_names[b->job.recompute]);
	if ((term < 0 || term == 1) && c->layout.group_size != b->layout.group_size)
		ADD("all-to-all over %d GPUs vs %d", c->layout.group_size, b->layout.group_size);
	if ((term < 0 || term == 1) && c->job.a2a != b->job.a2a)
		ADD("%s all-to-all vs %s", plan_a2a_name(c->job.a2a), plan_a2a_name(b->job.a2a));
	if ((term < 0 || term == 2) && c->job.zero_stage != b->job.zero_stage)
		ADD("ZeRO-%d vs ZeRO-%d", c->job.zero_stage, b->job.zero_stage);
	if (term != 0 && c->job.grad_accum != b->job.grad_accum)
		ADD("%d micro-steps vs %d", c->job.grad_accum, b->job.grad_accum);
	if (!used && c->job.micro_batch != b->job.micro_batch)
		ADD("micro-batch %d vs %d", c->job.micro_batch, b->job.micro_batch);
#undef ADD
}

void plan_explain(const plan_query *q, const plan_candidate *c, const plan_candidate *best, plan_rank_by by,
		  char *buf, size_t len)
{
	if (c == best) {
		snprintf(buf, len, "best");
		return;
	}
	const engine_result *rc = result_of(c), *rb = result_of(best);
	static const char *const names[] = {"compute", "SP all-to-all", "exposed ZeRO comm"};
	double d[3] = {rc->breakdown.compute - rb->breakdown.compute, rc->breakdown.sp_comm_exposed - rb->breakdown.sp_comm_exposed,
		       rc->breakdown.zero_comm_exposed - rb->breakdown.zero_comm_exposed};
	int worst = 0;
	for (int i = 1; i < 3; i++)
		if (d[i] > d[worst])
			worst = i;
	char why[256], term[320], ts[32];
	setting(q, c, best, worst, why, sizeof why);
	snprintf(term, sizeof term, "%s +%s%s%s%s", names[worst], report_time(d[worst], ts, sizeof ts), why[0] ? " (" : "",
		 why, why[0] ? ")" : "");
	if (by == PLAN_RANK_COST && best->cost_per_mtok > 0) {
		double gap = c->cost_per_mtok / best->cost_per_mtok - 1;
		/* cost = price x GPUs x step time: which factor carries the gap? */
		double pc = q->price[c->platform] * c->job.gpus, pb = q->price[best->platform] * best->job.gpus;
		double hw = pc / pb, t = rc->step_time / rb->step_time;
		if (gap < 5e-4)
			snprintf(buf, len, "ties with #1 on cost");
		else if (hw > t && hw > 1)
			snprintf(buf, len, "+%.1f%% cost: %.2fx the price per hour (%d GPUs at %.2f vs %d at %.2f) for a %.2fx "
				 "shorter step",
				 100 * gap, hw, c->job.gpus, q->price[c->platform], best->job.gpus, q->price[best->platform],
				 1 / t);
		else
			snprintf(buf, len, "+%.1f%% cost: step %.1f%% longer, mostly %s", 100 * gap, 100 * (t - 1), term);
		return;
	}
	double gap = 1 - c->tokens_per_s / best->tokens_per_s;
	if (gap < 5e-4) { /* every setting that differs: no term carries a tie */
		setting(q, c, best, -1, why, sizeof why);
		snprintf(buf, len, "ties with #1 (%s)", why[0] ? why : "same settings");
	}
	else if (d[worst] <= 0)
		snprintf(buf, len, "-%.1f%% tokens/s", 100 * gap);
	else
		snprintf(buf, len, "-%.1f%% tokens/s: %s", 100 * gap, term);
}

/* ---------------------------------------------------------------- verify --- */
typedef struct verify_ctx {
	const plan_query *q;
	plan_candidate *c;
	const char *engine;
	const engine_options *opt;
	plan_progress *prog; /* NULL: none */
} verify_ctx;

static json_t *verify_eval(void *ctx, long i)
{
	verify_ctx *v = ctx;
	plan_candidate *c = &v->c[i];
	config_platform p = v->q->platforms[c->platform];
	p.nodes = c->nodes;
	json_t *row = plan_row_new(i, "");
	config_error err = {""};
	engine_options opt = v->opt ? *v->opt : (engine_options){0};
	opt.trace_path = NULL;
	plan_sim *sim = malloc(sizeof *sim);
	if (!sim) {
		plan_row_set_status(row, "error", "out of memory");
	} else if (plan_simulate(v->q->model, &p, &c->job, engine_find(v->engine), opt, sim, &err)) {
		plan_row_set_sim(row, sim);
		plan_sim_finish(sim);
	} else {
		plan_row_set_status(row, "error", err.msg);
	}
	free(sim);
	return row;
}

static json_t *verify_failed(void *ctx, long i, const char *why)
{
	(void)ctx;
	json_t *row = plan_row_new(i, "");
	plan_row_set_status(row, "error", why);
	return row;
}

static void verify_tick(void *ctx)
{
	verify_ctx *v = ctx;
	if (v->prog)
		plan_progress_update(v->prog, v->prog->done, v->prog->failed);
}

static void verify_done(void *ctx, long i, const json_t *row)
{
	verify_ctx *v = ctx;
	plan_candidate *c = &v->c[i];
	bool ok = strcmp(plan_row_str(row, "status"), "ok") == 0;
	if (v->prog)
		plan_progress_update(v->prog, v->prog->done + 1, v->prog->failed + !ok);
	if (!ok) {
		snprintf(c->verify_error, sizeof c->verify_error, "%s", plan_row_str(row, "error"));
		return;
	}
	engine_result *r = &c->verified;
	memset(r, 0, sizeof *r);
	r->engine = v->engine;
	r->step_time = plan_row_num(row, "step_time_s");
	r->breakdown.compute = plan_row_num(row, "compute_s");
	r->breakdown.gemm = plan_row_num(row, "gemm_s");
	r->breakdown.attention = plan_row_num(row, "attention_s");
	r->breakdown.memory_bound = plan_row_num(row, "memory_bound_s");
	r->breakdown.optimizer = plan_row_num(row, "optimizer_s");
	r->breakdown.sp_comm = plan_row_num(row, "sp_comm_s");
	r->breakdown.sp_comm_exposed = plan_row_num(row, "sp_comm_exposed_s");
	r->breakdown.zero_comm = plan_row_num(row, "zero_comm_s");
	r->breakdown.zero_comm_exposed = plan_row_num(row, "zero_comm_exposed_s");
	r->tokens_per_s = plan_row_num(row, "tokens_per_s");
	r->mfu = plan_row_num(row, "mfu");
	c->has_verified = true;
	c->tokens_per_s = r->tokens_per_s;
	c->step_time = r->step_time;
	c->cost_per_mtok = cost_of(v->q, c);
}

static bool always(void *ctx, long i)
{
	(void)ctx, (void)i;
	return true;
}

bool plan_verify(const plan_query *q, plan_candidate *c, long n, const char *engine, const engine_options *opt,
		 int jobs, double timeout_s, config_error *err)
{
	return plan_verify_progress(q, c, n, engine, opt, jobs, timeout_s, NULL, err);
}

bool plan_verify_progress(const plan_query *q, plan_candidate *c, long n, const char *engine,
			  const engine_options *opt, int jobs, double timeout_s, plan_progress *prog, config_error *err)
{
	if (!engine_find(engine))
		return config_fail(err, "engine '%s' is not built into this spsim", engine);
	verify_ctx v = {.q = q, .c = c, .engine = engine_find(engine)->name, .opt = opt, .prog = prog};
	long *tasks = malloc((size_t)(n > 0 ? n : 1) * sizeof *tasks);
	if (!tasks)
		return config_fail(err, "out of memory");
	for (long i = 0; i < n; i++)
		tasks[i] = i;
	plan_pool_ops ops = {.ctx = &v, .eval = verify_eval, .isolated = always, .failed = verify_failed,
			     .done = verify_done, .tick = verify_tick};
	plan_pool_opts po = {.jobs = jobs, .timeout_s = timeout_s, .tick_s = 0.5, .stop = q->stop};
	bool ok = plan_pool_run(tasks, n, &po, &ops, err);
	free(tasks);
	if (ok && q->stop && *q->stop) /* the runs not finished: killed in flight, or never started */
		for (long i = 0; i < n; i++)
			if (!c[i].has_verified && !c[i].verify_error[0])
				snprintf(c[i].verify_error, sizeof c[i].verify_error, "%s", PLAN_VERIFY_INTERRUPTED);
	return ok;
}

/* --------------------------------------------------------------- as JSON --- */
json_t *plan_candidate_json(const plan_query *q, const plan_candidate *c)
{
	config_platform p = q->platforms[c->platform];
	p.nodes = c->nodes;
	json_t *o = json_object();
	plan_row_set_job(o, q->model, &p, &c->job, c->variant->name, "analytic", NULL);
	json_object_del(o, "engine");
	json_object_set_new(o, "group_size", json_integer(c->layout.group_size));
	json_object_set_new(o, "dp_replicas", json_integer(c->layout.world / c->layout.sp));
	json_object_set_new(o, "tokens_per_gpu", json_integer(c->layout.tokens_per_rank));
	json_object_set_new(o, "mem_peak", json_real(c->memory.peak));
	json_object_set_new(o, "mem_capacity", json_real(c->memory.capacity));
	const engine_result *rs[2] = {&c->analytic, c->has_verified ? &c->verified : NULL};
	const char *names[2] = {"analytic", c->has_verified ? c->verified.engine : NULL};
	for (int i = 0; i < 2; i++) {
		if (!rs[i])
			continue;
		const engine_breakdown *b = &rs[i]->breakdown;
		json_object_set_new(o, names[i],
				    json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "step_time_s", rs[i]->step_time,
					      "compute_s", b->compute, "sp_comm_s", b->sp_comm, "sp_comm_exposed_s",
					      b->sp_comm_exposed, "zero_comm_exposed_s", b->zero_comm_exposed,
					      "tokens_per_s", rs[i]->tokens_per_s, "mfu", rs[i]->mfu));
	}
	if (c->verify_error[0])
		json_object_set_new(o, "verify_error", json_string(c->verify_error));
	json_object_set_new(o, "tokens_per_s", json_real(c->tokens_per_s));
	json_object_set_new(o, "step_time_s", json_real(c->step_time));
	if (c->cost_per_mtok > 0)
		json_object_set_new(o, "cost_per_mtok", json_real(c->cost_per_mtok));
	return o;
}
