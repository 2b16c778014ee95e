/* The analytic engine: closed-form op costs (collectives.c) scheduled by the op program's
 * rules (schedule.c). Concurrent streams share the links they both load (linkload.c: what
 * each op puts on the NIC, NVLink, PCIe and leaf uplinks; docs/model.md §5): with all
 * communication on one stream the schedule is the max-plus recurrence, otherwise a fluid
 * simulation with max-min sharing. */
#include <stdlib.h>
#include <string.h>

#include "engine/analytic.h"
#include "engine/schedule.h"

/* A collective op's time on a given group shape (all chunks), timed by `time`. */
static double comm_time_by(double (*time)(const config_platform *, workload_coll, workload_alg, engine_group_shape,
					  double),
			   const config_platform *p, const workload_op *op, engine_group_shape s)
{
	int chunks = op->chunks > 1 ? op->chunks : 1;
	return chunks * time(p, op->coll, op->alg, s, op->bytes / chunks);
}

/* ---- collective times across plans ----
 * A sweep or a plan search times the same few collectives on the same platform, plan
 * after plan: engine_analytic_durations keeps engine_collective_time's answers in a
 * per-thread cache. It holds one platform, byte for byte: any other byte (another node
 * count, a calibration, a what-if, another file) empties it, so the cost model may read
 * any field of the platform. Within it an entry is keyed by every other argument:
 * collective, algorithm, every field of the shape, bytes. */
enum { COLL_CACHE = 256 }; /* a power of two */
typedef struct coll_entry {
	unsigned epoch; /* the cache's epoch when filled; 0: empty */
	workload_coll coll;
	workload_alg alg;
	engine_group_shape s;
	double bytes, time;
} coll_entry;
/* The key compares the shape field by field: a field added to engine_group_shape must be
 * added to coll_hit too (this fails to compile until the size is updated here). */
_Static_assert(sizeof(engine_group_shape) == 3 * sizeof(int) + 4 + sizeof(double),
	       "engine_group_shape changed: update the collective cache's key (coll_hit)");
static _Thread_local struct {
	config_platform p;
	unsigned epoch;
	coll_entry e[COLL_CACHE];
} coll_cache;

/* Makes the cache hold platform p's times (emptied when p differs from its platform). */
static void coll_cache_use(const config_platform *p)
{
	if (coll_cache.epoch && !memcmp(&coll_cache.p, p, sizeof *p))
		return;
	memcpy(&coll_cache.p, p, sizeof *p);
	if (++coll_cache.epoch == 0) { /* wrapped: old epochs would match again */
		memset(coll_cache.e, 0, sizeof coll_cache.e);
		coll_cache.epoch = 1;
	}
}

static bool coll_hit(const coll_entry *e, workload_coll c, workload_alg a, engine_group_shape s, double bytes)
{
	return e->epoch == coll_cache.epoch && e->coll == c && e->alg == a && e->s.size == s.size &&
	       e->s.per_node == s.per_node && e->s.active_per_node == s.active_per_node &&
	       e->s.leaf_pairs == s.leaf_pairs && e->bytes == bytes;
}

/* engine_collective_time on the cache's platform (coll_cache_use(p) first). */
static double cached_collective_time(const config_platform *p, workload_coll c, workload_alg a, engine_group_shape s,
				     double bytes)
{
	unsigned long long bits;
	memcpy(&bits, &bytes, sizeof bits);
	unsigned long long h = (((unsigned long long)c * 31 + (unsigned long long)a) * 131 + (unsigned)s.size) * 131 +
			       (unsigned)s.per_node;
	h = ((h * 131 + (unsigned)s.active_per_node) * 0x9e3779b97f4a7c15ULL) ^ (bits * 0xc2b2ae3d27d4eb4fULL);
	coll_entry *e = &coll_cache.e[(h ^ (h >> 32)) & (COLL_CACHE - 1)];
	if (coll_hit(e, c, a, s, bytes))
		return e->time;
	double t = engine_collective_time(p, c, a, s, bytes);
	*e = (coll_entry){.epoch = coll_cache.epoch, .coll = c, .alg = a, .s = s, .bytes = bytes, .time = t};
	return t;
}

static double comm_time(const config_platform *p, const workload_op *op, engine_group_shape s)
{
	return comm_time_by(engine_collective_time, p, op, s);
}

double engine_op_time(const config_platform *p, const workload_layout *l, const workload_op *op)
{
	if (op->kind == WL_OP_COMPUTE)
		return engine_compute_time(p, op);
	return comm_time(p, op, engine_op_shape(p, l, op));
}

bool engine_analytic_durations(const config_platform *p, const workload_plan *plan, double ***out, config_error *err)
{
	const workload_program *prog = &plan->program;
	int nb = prog->n_micro + prog->n_step;
	size_t nops = 0;
	for (int b = 0; b < nb; b++)
		nops += (size_t)(b < prog->n_micro ? prog->micro[b].n_ops : prog->step[b - prog->n_micro].n_ops);
	/* one allocation: the row pointers, then every row */
	double **dur = malloc((size_t)nb * sizeof *dur + (nops + 1) * sizeof **dur);
	if (!dur)
		return config_fail(err, "out of memory");
	double *row = (double *)(dur + nb);
	/* The two group shapes every op of the layout uses, computed once (on an
	 * oversubscribed fat-tree a shape sums leaf loads). */
	const workload_layout *l = &plan->layout;
	engine_group_shape sp = engine_group_shape_of(p, l, WL_GROUP_SP), world = engine_group_shape_of(p, l, WL_GROUP_WORLD);
	/* A plan repeats the same few collectives (every layer's all-to-alls, every bucket):
	 * their times on the two shapes are memoised per plan (comm_time is a function of the
	 * shape and the op's collective, algorithm, bytes and chunks). */
	enum { MEMO = 32 };
	struct {
		bool world;
		workload_coll coll;
		workload_alg alg;
		int chunks;
		double bytes, time;
	} memo[MEMO];
	int n_memo = 0;
	coll_cache_use(p);
	for (int b = 0; b < nb; b++) {
		const workload_block *blk = b < prog->n_micro ? &prog->micro[b] : &prog->step[b - prog->n_micro];
		dur[b] = row;
		for (int j = 0; j < blk->n_ops; j++) {
			const workload_op *op = &blk->ops[j];
			if (op->kind == WL_OP_COMPUTE) {
				row[j] = engine_compute_time(p, op);
				continue;
			}
			bool w = op->group == WL_GROUP_WORLD;
			if (engine_op_own_shape(l, op)) {
				row[j] = comm_time_by(cached_collective_time, p, op, engine_op_shape(p, l, op));
				continue;
			}
			int i = 0;
			while (i < n_memo && !(memo[i].world == w && memo[i].coll == op->coll && memo[i].alg == op->alg &&
					       memo[i].chunks == op->chunks && memo[i].bytes == op->bytes))
				i++;
			if (i < n_memo) {
				row[j] = memo[i].time;
				continue;
			}
			row[j] = comm_time_by(cached_collective_time, p, op, w ? world : sp);
			if (n_memo < MEMO) {
				memo[n_memo].world = w;
				memo[n_memo].coll = op->coll;
				memo[n_memo].alg = op->alg;
				memo[n_memo].chunks = op->chunks;
				memo[n_memo].bytes = op->bytes;
				memo[n_memo++].time = row[j];
			}
		}
		row += blk->n_ops;
	}
	*out = dur;
	return true;
}

void engine_durations_free(double **dur, int n)
{
	(void)n;
	free(dur);
}

static bool analytic_run(const engine_input *in, engine_result *out, config_error *err)
{
	if (!engine_whatif_supported("analytic", &in->opt, err))
		return false;
	if (config_platform_heterogeneous(in->platform))
		return config_fail(err, "the analytic engine times one kind of node; platform '%s' mixes node groups "
					"of different GPUs or NIC counts: use --engine simgrid",
				   in->platform->name);
	if (!engine_placement_supported("analytic", &in->opt, err) || !engine_whatif_fail_check(&in->opt, in->platform, err))
		return false;
	/* --degrade of a NIC or a GPU port: every rank at the slowest link's pace, as for a slow
	 * GPU below (in the SimGrid engine one NIC or port slowed gives the same step as every
	 * one of its kind slowed alike: docs/simgrid.md "What-ifs") */
	config_platform *degraded = NULL;
	const config_platform *plat = in->platform;
	if (engine_whatif_active(&in->opt)) {
		degraded = malloc(sizeof *degraded);
		if (!degraded)
			return config_fail(err, "out of memory");
		if (engine_whatif_degraded(&in->opt, in->platform, in->plan->layout.world, degraded))
			plat = degraded;
	}
	double **dur;
	if (!engine_analytic_durations(plat, in->plan, &dur, err)) {
		free(degraded);
		return false;
	}
	/* --slow-gpu / --slow-node: every rank at the slowest one's pace. Each SP group meets at
	 * every layer's collectives and every data-parallel collective holds every replica, so
	 * no rank gets past a collective before the slowest arrives: its GPU's kernels set the
	 * schedule (host-side copies and CPU work are not the GPU's, as in the SimGrid engine). */
	const double pace = engine_whatif_pace(&in->opt, in->platform, in->plan->layout.world);
	const workload_program *prog = &in->plan->program;
	for (int b = 0; pace > 1 && b < prog->n_micro + prog->n_step; b++) {
		const workload_block *blk = b < prog->n_micro ? &prog->micro[b] : &prog->step[b - prog->n_micro];
		for (int j = 0; j < blk->n_ops; j++)
			if (blk->ops[j].kind == WL_OP_COMPUTE && !workload_kernel_on_host(blk->ops[j].kernel))
				dur[b][j] *= pace;
	}
	/* Link loads only where two streams carry communication: otherwise nothing shares. */
	engine_op_load **load = NULL;
	if (engine_schedule_streams_share(&in->plan->program) && !engine_analytic_loads(plat, in->plan, &load, err)) {
		engine_durations_free(dur, in->plan->program.n_micro + in->plan->program.n_step);
		free(degraded);
		return false;
	}
	bool ok;
	*out = (engine_result){.engine = "analytic"};
	if (in->opt.trace_path)
		ok = engine_trace_schedule_shared(in, dur, load, out, err);
	else
		ok = engine_schedule_run_shared(&in->plan->program, dur, load, out, NULL, NULL, err);
	free(load);
	free(degraded);
	engine_durations_free(dur, in->plan->program.n_micro + in->plan->program.n_step);
	if (ok)
		engine_result_finish(in, out);
	return ok;
}

const engine_ops engine_analytic = {
	.name = "analytic",
	.summary = "closed-form alpha-beta costs, streams share links (microseconds per configuration)",
	.run = analytic_run,
};

/* ---- trace: rank 0's streams (all ranks of a class run the same schedule) ---- */
#include <stdio.h>

#include "report/trace.h"

typedef struct trace_ctx {
	report_trace *t;
} trace_ctx;

static void trace_visit(void *ctx, const workload_block *blk, int it, int micro, const workload_op *op, double start,
			double end)
{
	trace_ctx *c = ctx;
	int layer = blk->layer_first >= 0 ? blk->layer_first + it * blk->layer_step : -1;
	report_trace_op(c->t, 0, report_trace_tid(0, op), op, layer, micro, start, end);
}

bool engine_trace_schedule(const engine_input *in, double *const *dur, engine_result *out, config_error *err)
{
	return engine_trace_schedule_shared(in, dur, NULL, out, err);
}

bool engine_trace_schedule_shared(const engine_input *in, double *const *dur, engine_op_load *const *load,
				  engine_result *out, config_error *err)
{
	trace_ctx c = {.t = report_trace_create()};
	if (!c.t)
		return config_fail(err, "out of memory");
	report_trace_process(c.t, 0, "node 0 (analytic: every rank runs this schedule)");
	for (int k = 0; k < REPORT_TRACE_TIDS_PER_GPU; k++) {
		char name[64];
		snprintf(name, sizeof name, "gpu 0 %s", report_trace_tid_name(k));
		report_trace_thread(c.t, 0, k, name);
	}
	bool ok = engine_schedule_run_shared(&in->plan->program, dur, load, out, trace_visit, &c, err) &&
		  report_trace_write(c.t, in->opt.trace_path, err);
	report_trace_destroy(c.t);
	return ok;
}
