#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "engine/schedule.h"

#define MAX_LOOKBACK 8

/* fmax and fmin, inline: libm's are calls, and these run per op instance and per event.
 * Same results as glibc's, NaN operands included (the other operand is returned). */
static inline double dmax(double a, double b)
{
	return a > b || isnan(b) ? a : b;
}

static inline double dmin(double a, double b)
{
	return a < b || isnan(b) ? a : b;
}

typedef struct sched {
	double stream_end[WL_STREAM_COUNT];
	engine_schedule_visit visit;
	void *ctx;
} sched;

/* True when every entry of now moved by the same lambda from before (lambda: the first
 * entry's move), to 1e-12 relative. */
static bool uniform_delta(const double *now, const double *before, int n, double *lambda)
{
	double l = *lambda;
	for (int i = 0; i < n; i++) {
		double d = now[i] - before[i];
		double a = fabs(now[i]); /* dmax(1.0, a), NaN taking 1 */
		if (fabs(d - l) > 1e-12 * (a > 1.0 ? a : 1.0))
			return false;
	}
	return true;
}

/* Iteration `it` of a block: op ends into row it % R of ends (R rows kept), visited when
 * `visit` (a constant where inlined: the untraced loop tests nothing per op). */
static inline void run_iteration(sched *s, const workload_block *blk, const double *dur, double *ends, int R, int it,
				 int micro, bool visit)
{
	int n = blk->n_ops;
	double *row = ends + (size_t)(it % R) * n;
	for (int j = 0; j < n; j++) {
		const workload_op *op = &blk->ops[j];
		double start = s->stream_end[op->stream];
		if (op->dep >= 0) {
			int it2 = it + op->dep_iter;
			if (it2 >= 0)
				start = dmax(start, ends[(size_t)(it2 % R) * n + op->dep]);
		}
		double end = start + dur[j];
		row[j] = end;
		s->stream_end[op->stream] = end;
		if (visit)
			s->visit(s->ctx, blk, it, micro, op, start, end);
	}
}

/* Runs one block `repeat` times. Once the whole schedule state (ends of used streams and
 * of the ops later iterations depend on) advances by the same amount lambda in two
 * consecutive iterations, the max-plus recurrence is homogeneous from there on:
 * x(k+1) = A (x) x(k) and x(k) = x(k-1) + lambda imply x(k+n) = x(k) + n·lambda, so the
 * remaining iterations are added in closed form. */
static bool run_block(sched *s, const workload_block *blk, const double *dur, int micro, config_error *err)
{
	int n = blk->n_ops;
	if (n == 0)
		return true;
	if (blk->barrier) {
		double t = 0;
		for (int k = 0; k < WL_STREAM_COUNT; k++)
			t = dmax(t, s->stream_end[k]);
		for (int k = 0; k < WL_STREAM_COUNT; k++)
			s->stream_end[k] = t;
	}
	int D = 1;
	bool used[WL_STREAM_COUNT] = {false};
	for (int j = 0; j < n; j++) {
		const workload_op *op = &blk->ops[j];
		used[op->stream] = true;
		if (op->dep >= 0) {
			if (op->dep >= n || op->dep_iter > 0 || -op->dep_iter >= MAX_LOOKBACK ||
			    (op->dep_iter == 0 && op->dep >= j))
				return config_fail(err, "internal: op %s of block %s has an invalid dependency", op->name,
						   blk->name);
			if (1 - op->dep_iter > D)
				D = 1 - op->dep_iter;
		}
	}
	/* The state is the used stream ends and D rows of op ends (iterations it - D + 1 to
	 * it); R = D + 1 rows are kept, so the previous iteration's state is still there to
	 * compare with (its stream ends in prev_end). Small blocks (every block spsim builds)
	 * use the stack: this runs 10^5 times a second. */
	int R = D + 1;
	enum { SMALL = 1024 };
	double small_ends[SMALL];
	bool heap = (size_t)R * n > SMALL;
	double *ends = heap ? calloc((size_t)R * n, sizeof *ends) : small_ends;
	if (!ends)
		return config_fail(err, "out of memory evaluating the schedule");
	if (!heap)
		memset(ends, 0, (size_t)R * n * sizeof *ends);
	int first_used = 0;
	while (!used[first_used])
		first_used++;
	double prev_end[WL_STREAM_COUNT] = {0};
	bool have_prev = false, was_uniform = false;
	double prev_lambda = 0;
	bool can_skip = s->visit == NULL;

	for (int it = 0; it < blk->repeat; it++) {
		if (!can_skip) {
			run_iteration(s, blk, dur, ends, R, it, micro, true);
			continue;
		}
		run_iteration(s, blk, dur, ends, R, it, micro, false);
		if (it + 1 < D)
			continue;
		/* the state against the previous iteration's: stream ends, then rows it - k
		 * against rows it - 1 - k */
		double lambda = s->stream_end[first_used] - prev_end[first_used];
		bool uni = have_prev;
		for (int k = 0; uni && k < WL_STREAM_COUNT; k++)
			if (used[k])
				uni = uniform_delta(&s->stream_end[k], &prev_end[k], 1, &lambda);
		for (int k = 0; uni && k < D; k++)
			uni = uniform_delta(ends + (size_t)((it - k) % R) * n, ends + (size_t)((it - 1 - k + R) % R) * n, n,
					    &lambda);
		if (uni && was_uniform && fabs(lambda - prev_lambda) <= 1e-12 * dmax(1.0, fabs(lambda))) {
			int left = blk->repeat - 1 - it;
			for (int k = 0; k < WL_STREAM_COUNT; k++)
				if (used[k])
					s->stream_end[k] += left * lambda;
			break;
		}
		was_uniform = uni;
		if (uni)
			prev_lambda = lambda;
		memcpy(prev_end, s->stream_end, sizeof prev_end);
		have_prev = true;
	}
	if (heap)
		free(ends);
	return true;
}

/* Adds one op's total time over the step (every instance) to the breakdown; `main_per_micro`
 * is its main-stream time in one micro-step (0 for step blocks). */
static inline void side_add(const workload_op *op, double t, double *sp_side, double *zero_main)
{
	if (op->cat == WL_CAT_SP_COMM && op->stream != WL_STREAM_MAIN)
		*sp_side += t;
	else if (op->cat == WL_CAT_ZERO_COMM && op->stream == WL_STREAM_MAIN)
		*zero_main += t;
}

static inline void account_op(const workload_op *op, double total, double per_micro, engine_result *r)
{
	engine_breakdown *b = &r->breakdown;
	side_add(op, total, &b->sp_comm_side, &b->zero_comm_main);
	switch (op->cat) {
	case WL_CAT_COMPUTE:
		b->compute += total;
		if (op->phase == WL_PHASE_STEP)
			b->optimizer += total;
		else if (op->kernel == WL_KERNEL_GEMM)
			b->gemm += total;
		else if (op->kernel == WL_KERNEL_ATTENTION)
			b->attention += total;
		else
			b->memory_bound += total;
		break;
	case WL_CAT_SP_COMM: b->sp_comm += total; break;
	case WL_CAT_ZERO_COMM: b->zero_comm += total; break;
	case WL_CAT_HOST_COMM: b->host_comm += total; break;
	case WL_CAT_COUNT: break;
	}
	if (op->stream == WL_STREAM_MAIN) {
		if (op->phase == WL_PHASE_FWD)
			r->fwd_time += per_micro;
		else if (op->phase == WL_PHASE_BWD || op->phase == WL_PHASE_RECOMPUTE)
			r->bwd_time += per_micro;
	}
}

static void account(const workload_block *blk, const double *dur, double times, engine_result *r)
{
	for (int j = 0; j < blk->n_ops; j++)
		account_op(&blk->ops[j], dur[j] * blk->repeat * times, times > 0 ? dur[j] * blk->repeat : 0, r);
}

/* The exposed parts of the breakdown from the step time (both schedules). */
static void finish_breakdown(engine_result *r, double step)
{
	r->step_time = step;
	engine_breakdown_expose(&r->breakdown, step);
}

void engine_side_add(const workload_op *op, double t, double *sp_side, double *zero_main)
{
	side_add(op, t, sp_side, zero_main);
}

void engine_breakdown_expose(engine_breakdown *b, double step)
{
	double main_sp = b->sp_comm - b->sp_comm_side;
	double gap = step - b->compute - main_sp;
	double ring = gap - b->zero_comm_main;
	ring = ring < 0 ? 0 : ring > b->sp_comm_side ? b->sp_comm_side : ring;
	b->sp_comm_exposed = main_sp + ring;
	double host = gap - b->zero_comm_main - ring;
	host = host < 0 ? 0 : host > b->host_comm ? b->host_comm : host;
	b->host_comm_exposed = host;
	double zero = gap - ring - host;
	b->zero_comm_exposed = zero > 0 ? zero : 0;
}

bool engine_schedule_run(const workload_program *prog, double *const *dur, engine_result *r,
			 engine_schedule_visit visit, void *ctx, config_error *err)
{
	sched s = {.visit = visit, .ctx = ctx};
	memset(&r->breakdown, 0, sizeof r->breakdown);
	r->fwd_time = r->bwd_time = 0;
	for (int m = 0; m < prog->grad_accum; m++)
		for (int b = 0; b < prog->n_micro; b++)
			if (!run_block(&s, &prog->micro[b], dur[b], m, err))
				return false;
	for (int b = 0; b < prog->n_step; b++)
		if (!run_block(&s, &prog->step[b], dur[prog->n_micro + b], prog->grad_accum, err))
			return false;
	double step = 0;
	for (int k = 0; k < WL_STREAM_COUNT; k++)
		step = dmax(step, s.stream_end[k]);
	for (int b = 0; b < prog->n_micro; b++)
		account(&prog->micro[b], dur[b], prog->grad_accum, r);
	for (int b = 0; b < prog->n_step; b++)
		account(&prog->step[b], dur[prog->n_micro + b], 1, r);
	finish_breakdown(r, step);
	return true;
}

/* ------------------------------------------------------------ shared links ---
 * A fluid event simulation of the same schedule. Each stream walks the whole program
 * (micro-step blocks grad_accum times, then the step blocks) and runs its own ops in order;
 * an op starts when its stream is free and its dependency has ended, a barrier block when
 * every stream has drained (the rules of workload.h). Compute ops take their duration. A
 * communication op i has work T_i = max(dur_i, busiest link alone) and progresses at rate
 * x_i <= 1; on link k it uses x_i·u_ik of the capacity, u_ik = busy_ik / T_i. The rates are
 * max-min fair over flows, as SimGrid shares a link between the flows that cross it: op i
 * holds f_ik flows on link k, each at x_i·u_ik / f_ik of the capacity, and progressive
 * filling raises a common per-flow level l with x_i = min(1, l·w_i), w_i = min_k f_ik/u_ik
 * (no flow of the op above the level), freezing an op when it reaches its full rate or a
 * link it uses fills. An op alone runs at rate 1 (its closed-form duration); several never
 * load a link above its capacity, so a link's total busy time never fits in less time.
 *
 * Iteration skipping: when the main stream starts an iteration of a repeated block, the
 * state relative to now (every stream's position and remaining work, the end times of the
 * ops later dependencies can reach) is compared with the state at the previous iteration's
 * start. The simulation is deterministic and time-invariant, so equal states (shifted by one
 * iteration and by lambda in time) repeat every iteration until a stream nears the block's
 * end: the remaining iterations are added in closed form, as in the max-plus recurrence. */

enum { FL_IDLE, FL_ACTIVE, FL_BARRIER, FL_DONE };
enum { FL_LOG = 256 };

typedef struct fl_stream {
	int g, it, k; /* next (or current) op: the k-th op of this stream in block instance g, iteration it */
	int state;
	double rem, start, rate;
	double last_end, busy_since; /* its last completion; when it last started after a gap */
	/* of the current op (or run of compute ops), set by fl_bind */
	const workload_block *blk;
	int b, micro, j, len, slot;
	bool comm;            /* loads links */
	double work;          /* its work (T, or the run's summed durations) */
	double *row;          /* its iteration's end times */
	const double *dep;    /* end time of its dependency, NULL when none (or met before the block) */
} fl_stream;

typedef struct fl_slot {
	int g;        /* block instance held, -1 when free */
	int rows;     /* rows initialised */
	int w;        /* row width: the ops of its block */
	int gap_lo, gap_hi; /* rows [gap_lo, gap_hi) were skipped over (fl_try_skip): no end times */
	double *ends; /* [iteration][op], NAN until the op instance has ended */
	size_t cap;   /* doubles ends holds */
} fl_slot;

enum { FL_MEMO = 64 };
typedef struct fl_memo {
	int key[WL_STREAM_COUNT]; /* per stream: 1 + the index of its active communication op, 0 if none */
	double rate[WL_STREAM_COUNT];
} fl_memo;

typedef struct fl {
	const workload_program *prog;
	double *const *dur;
	engine_op_load *const *load;
	int nb, ng, max_ops, max_rep;
	int **idx[WL_STREAM_COUNT]; /* [b] -> the block's op indices on the stream, in order */
	int *cnt[WL_STREAM_COUNT];  /* [b] -> how many */
	int *back[WL_STREAM_COUNT]; /* [b] -> how many iterations back its dependencies reach */
	int *off;                   /* [b]: offset of block b's ops in the per-op arrays */
	int *run;                   /* [op]: ops of its stream merged with it (compute runs) */
	int *target;                /* [op]: some op of its block depends on it */
	int *comm;                  /* [op]: it loads links (its engine_op_load has entries) */
	void *ints;
	double *work; /* [op]: T_i (compute runs: the run's summed duration) */
	size_t ints_cap, work_cap; /* bytes allocated */
	double *wt;   /* [op]: w_i */
	double *acc;  /* [op]: summed durations */
	fl_slot *slots;
	int n_slots, slots_cap; /* in use; allocated (each with its ends) */
	bool pooled;            /* the buffers came from fl_pool and go back to it */
	fl_stream st[WL_STREAM_COUNT];
	int barrier_done; /* the last barrier instance released */
	int at_barrier;   /* streams waiting at it */
	bool dirty;       /* the set of active communication ops changed: recompute the rates */
	double t;
	engine_schedule_visit visit;
	void *ctx;
	/* iteration skipping */
	int snap_g, snap_it, snap_lo, snap_hi, snap_z;
	double snap_t, snap[4 * WL_STREAM_COUNT], *snap_acc, snap_pz;
	/* micro-step skipping: the state when the main stream started micro-step ms_m */
	int ms_m, ms_nops;
	double ms_t, ms_cur[4 * WL_STREAM_COUNT], ms_prev[4 * WL_STREAM_COUNT], *ms_acc;
	double *ms_rows; /* the end times dependencies reach, in the instances in use, relative */
	int ms_len, ms_cap;
	/* (time, work done) of each non-main stream at every event since the last snapshot */
	int nlog[WL_STREAM_COUNT];
	double *logt[WL_STREAM_COUNT], *logp[WL_STREAM_COUNT]; /* FL_LOG each */
	fl_memo memo[FL_MEMO]; /* fl_rates by active set (all-zero keys never match: n >= 2) */
} fl;

static const workload_block *fl_block(const fl *f, int g, int *b, int *micro)
{
	const workload_program *p = f->prog;
	int nm = p->n_micro * p->grad_accum;
	if (g < nm) {
		*b = g % p->n_micro;
		*micro = g / p->n_micro;
		return &p->micro[*b];
	}
	*b = p->n_micro + (g - nm);
	*micro = p->grad_accum;
	return &p->step[g - nm];
}

static const workload_block *fl_blk(const workload_program *p, int b)
{
	return b < p->n_micro ? &p->micro[b] : &p->step[b - p->n_micro];
}

static fl_slot *fl_slot_of(fl *f, int g)
{
	for (int i = 0; i < f->n_slots; i++)
		if (f->slots[i].g == g)
			return &f->slots[i];
	return NULL;
}

/* The slot of block instance g, or a new one in place of an instance no stream needs any
 * more (every cursor is past it); -1 when out of memory. */
static int fl_slot_get(fl *f, int g)
{
	fl_slot *s = fl_slot_of(f, g);
	if (s)
		return (int)(s - f->slots);
	int lo = f->ng;
	for (int k = 0; k < WL_STREAM_COUNT; k++)
		if (f->st[k].state != FL_DONE && f->st[k].g < lo)
			lo = f->st[k].g;
	for (int i = 0; i < f->n_slots && !s; i++)
		if (f->slots[i].g < lo)
			s = &f->slots[i];
	if (!s) {
		if (f->n_slots == f->slots_cap) {
			fl_slot *ns = realloc(f->slots, (size_t)(f->slots_cap + 1) * sizeof *ns);
			if (!ns)
				return -1;
			f->slots = ns;
			f->slots[f->slots_cap++] = (fl_slot){.ends = NULL, .cap = 0};
		}
		s = &f->slots[f->n_slots];
		size_t need = (size_t)f->max_rep * f->max_ops;
		if (s->cap < need) {
			double *e = realloc(s->ends, need * sizeof *e);
			if (!e)
				return -1;
			s->ends = e;
			s->cap = need;
		}
		f->n_slots++;
	}
	int b, m;
	s->g = g;
	s->rows = s->gap_lo = s->gap_hi = 0;
	s->w = fl_block(f, g, &b, &m)->n_ops;
	return (int)(s - f->slots);
}

static inline double *fl_row(fl_slot *s, int it)
{
	for (; s->rows <= it; s->rows++)
		for (int j = 0; j < s->w; j++)
			s->ends[(size_t)s->rows * s->w + j] = NAN;
	return s->ends + (size_t)it * s->w;
}

/* Fills the cached fields of stream k's op from its cursor (g, it, k, b, blk, slot). */
static inline void fl_bind(fl *f, int k)
{
	fl_stream *s = &f->st[k];
	int o = f->off[s->b];
	int j = s->j = f->idx[k][s->b][s->k];
	s->len = f->run[o + j];
	s->work = f->work[o + j];
	s->comm = f->comm[o + j];
	fl_slot *sl = &f->slots[s->slot];
	double *row = s->row = fl_row(sl, s->it);
	const workload_op *op = &s->blk->ops[j];
	if (op->dep < 0) {
		s->dep = NULL;
		return;
	}
	int it2 = s->it + op->dep_iter; /* the same row, or an earlier one (already there) */
	s->dep = it2 < 0 ? NULL : (it2 == s->it ? row : fl_row(sl, it2)) + op->dep;
}

/* Moves stream k's cursor to its next op at or after (g, it, i) in program order, stopping
 * at a barrier not yet released. False when out of memory. */
static bool fl_seek(fl *f, int k, int g, int it, int i)
{
	fl_stream *s = &f->st[k];
	for (;;) {
		if (g >= f->ng) {
			*s = (fl_stream){.g = f->ng, .state = FL_DONE};
			return true;
		}
		int b, m;
		const workload_block *blk = fl_block(f, g, &b, &m);
		if (it == 0 && i == 0 && blk->barrier && blk->n_ops > 0 && f->barrier_done < g) {
			*s = (fl_stream){.g = g, .state = FL_BARRIER};
			f->at_barrier++;
			return true;
		}
		if (i < f->cnt[k][b] && it < blk->repeat) {
			*s = (fl_stream){.g = g, .it = it, .k = i, .state = FL_IDLE, .blk = blk, .b = b, .micro = m};
			s->slot = fl_slot_get(f, g);
			if (s->slot < 0)
				return false;
			fl_bind(f, k);
			return true;
		}
		if (f->cnt[k][b] > 0 && it + 1 < blk->repeat) {
			it++;
			i = 0;
		} else {
			g++;
			it = i = 0;
		}
	}
}

/* Progressive filling over the active communication ops (at most one per stream). */
static void fl_rates(fl *f)
{
	int a[WL_STREAM_COUNT], n = 0;
	for (int k = 0; k < WL_STREAM_COUNT; k++) {
		fl_stream *s = &f->st[k];
		if (s->state != FL_ACTIVE)
			continue;
		s->rate = 1;
		if (s->comm)
			a[n++] = k;
	}
	f->dirty = false;
	if (n < 2)
		return;
	/* The rates depend only on which ops are active: memoised by that set (an iterated
	 * block meets the same few sets again and again). */
	int key[WL_STREAM_COUNT] = {0};
	unsigned h = 0;
	for (int i = 0; i < n; i++) {
		const fl_stream *s = &f->st[a[i]];
		key[a[i]] = f->off[s->b] + s->j + 1;
	}
	for (int k = 0; k < WL_STREAM_COUNT; k++)
		h = h * 2654435761u + (unsigned)key[k];
	fl_memo *me = &f->memo[(h >> 7) % FL_MEMO];
	if (!memcmp(me->key, key, sizeof key)) {
		for (int i = 0; i < n; i++)
			f->st[a[i]].rate = me->rate[a[i]];
		return;
	}
	const engine_op_load *ld[WL_STREAM_COUNT];
	double w[WL_STREAM_COUNT], T[WL_STREAM_COUNT], x[WL_STREAM_COUNT] = {0};
	bool frozen[WL_STREAM_COUNT] = {false};
	double cap[ENGINE_LINK_COUNT], demand[ENGINE_LINK_COUNT];
	int res[WL_STREAM_COUNT * ENGINE_LOAD_MAX], nr = 0;
	for (int i = 0; i < n; i++) {
		const fl_stream *s = &f->st[a[i]];
		ld[i] = &f->load[s->b][s->j];
		w[i] = f->wt[f->off[s->b] + s->j];
		T[i] = f->work[f->off[s->b] + s->j];
		for (int q = 0; q < ld[i]->n; q++) {
			int r = ld[i]->res[q], seen = 0;
			for (int u = 0; u < nr && !seen; u++)
				seen = res[u] == r;
			if (!seen) {
				res[nr++] = r;
				cap[r] = 1;
			}
		}
	}
	for (int left = n; left > 0;) {
		double step = INFINITY;
		for (int u = 0; u < nr; u++)
			demand[res[u]] = 0;
		for (int i = 0; i < n; i++) {
			if (frozen[i])
				continue;
			step = dmin(step, (1 - x[i]) / w[i]);
			for (int q = 0; q < ld[i]->n; q++)
				demand[ld[i]->res[q]] += w[i] * ld[i]->busy[q] / T[i];
		}
		for (int u = 0; u < nr; u++)
			if (demand[res[u]] > 0)
				step = dmin(step, cap[res[u]] / demand[res[u]]);
		for (int u = 0; u < nr; u++)
			cap[res[u]] -= step * demand[res[u]];
		for (int i = 0; i < n; i++) {
			if (frozen[i])
				continue;
			x[i] += step * w[i];
			bool stop = x[i] >= 1 - 1e-12;
			for (int q = 0; q < ld[i]->n && !stop; q++)
				stop = cap[ld[i]->res[q]] <= 1e-12;
			if (stop) {
				frozen[i] = true;
				left--;
			}
		}
	}
	memcpy(me->key, key, sizeof key);
	for (int i = 0; i < n; i++)
		f->st[a[i]].rate = me->rate[a[i]] = dmin(1.0, x[i]);
}

/* Releases a barrier once every stream waits at it. */
static bool fl_barrier(fl *f)
{
	int g = -1;
	for (int k = 0; k < WL_STREAM_COUNT; k++) {
		if (f->st[k].state == FL_DONE)
			continue;
		if (f->st[k].state != FL_BARRIER)
			return true;
		g = f->st[k].g;
	}
	if (g < 0)
		return true;
	f->barrier_done = g;
	f->at_barrier = 0;
	for (int k = 0; k < WL_STREAM_COUNT; k++)
		if (f->st[k].state == FL_BARRIER && !fl_seek(f, k, g, 0, 0))
			return false;
	return true;
}

/* The streams' state relative to the main stream at iteration `it` of block instance g,
 * into cur: every stream's position (relative iteration in this block, or absolute
 * elsewhere) and remaining work; lo and hi the lowest and highest iteration of a cursor in
 * the block. False when a stream is busy in another block. */
static bool fl_cursors(const fl *f, int g, int it, int z, double *cur, int *lo_out, int *hi_out)
{
	int lo = it, hi = it, q = 0;
	for (int k = 0; k < WL_STREAM_COUNT; k++) {
		const fl_stream *s = &f->st[k];
		if (k == z) { /* a saturated queue: compared by its progress instead */
			for (int i = 0; i < 4; i++)
				cur[q++] = 0;
		} else if (s->g == g && s->state != FL_DONE) {
			lo = s->it < lo ? s->it : lo;
			hi = s->it > hi ? s->it : hi;
			cur[q++] = s->it - it;
			cur[q++] = s->k;
			cur[q++] = s->state;
			cur[q++] = s->state == FL_ACTIVE ? s->rem : 0;
		} else {
			if (s->state == FL_ACTIVE)
				return false;
			cur[q++] = 1e9 + s->g;
			cur[q++] = s->it;
			cur[q++] = s->k;
			cur[q++] = s->state;
		}
	}
	*lo_out = lo;
	*hi_out = hi;
	return true;
}

static bool fl_same(const double *a, const double *b, int n, double tol)
{
	for (int i = 0; i < n; i++)
		if (!(fabs(a[i] - b[i]) <= tol) && a[i] != b[i])
			return false;
	return true;
}

/* End time of op j of row i as it stood at time `at`, relative to `at` (NAN: not ended;
 * -inf: an iteration before the first, whose dependencies count as met). */
static double fl_end_at(fl *f, fl_slot *sl, int i, int j, double at)
{
	if (i < 0)
		return -INFINITY;
	if (i >= sl->gap_lo && i < sl->gap_hi)
		return NAN; /* never ended here */
	double v = fl_row(sl, i)[j];
	return v <= at ? v - at : NAN;
}

/* Work stream z has done in block instance g (it runs one op of work W per iteration). */
static double fl_progress(const fl *f, int z)
{
	const fl_stream *s = &f->st[z];
	return s->it * s->work + (s->work - s->rem);
}

/* A non-main stream that is a saturated queue in block instance g: one op per iteration,
 * that nothing waits on, busy without a gap since before time `since`, and two or more
 * iterations behind the main stream at iteration `it` (so its next ops are all ready).
 * Its load never changes while it stays so, whatever instance it runs; -1 if none. */
static int fl_saturated(const fl *f, int g, int b, int it, double since)
{
	for (int k = 0; k < WL_STREAM_COUNT; k++) {
		const fl_stream *s = &f->st[k];
		if (k != WL_STREAM_MAIN && s->g == g && s->state == FL_ACTIVE && f->cnt[k][b] == 1 && s->len == 1 &&
		    !f->target[f->off[b] + s->j] && s->it <= it - 2 && s->busy_since <= since)
			return k;
	}
	return -1;
}

/* The time at which saturated stream z's work reached p, p within the last logged period
 * (work done is piecewise linear in time between events). */
static double fl_time_at(const fl *f, int z, double p)
{
	const double *t = f->logt[z], *w = f->logp[z];
	for (int i = 0; i + 1 < f->nlog[z]; i++)
		if (w[i + 1] >= p)
			return w[i + 1] > w[i] ? t[i] + (p - w[i]) / (w[i + 1] - w[i]) * (t[i + 1] - t[i]) : t[i];
	return t[f->nlog[z] - 1];
}

/* Called when the main stream has just started its first op of iteration `it` of block
 * instance g. The state that decides the future is the streams' positions and remaining
 * work and the end times of the ops later dependencies can reach: the ops depended on, in
 * rows [lo, hi], lo the lowest row a stream's dependencies reach back to from its cursor
 * (later rows are empty). When it equals the state at the previous iteration's start
 * shifted by one iteration and lambda in time, the iterations up to the block's end repeat.
 * A saturated queue (fl_saturated) takes part by its progress: its load is the same all
 * along, so the other streams repeat; it does the same work in every period, and the time
 * its current op started follows from the last period's progress. */
static void fl_try_skip(fl *f, int g, int it)
{
	int b, m;
	const workload_block *blk = fl_block(f, g, &b, &m);
	if (f->visit || blk->repeat < 4)
		return;
	int z = fl_saturated(f, g, b, it, f->snap_g == g ? f->snap_t : f->t);
	int lo, hi;
	double cur[4 * WL_STREAM_COUNT];
	if (!fl_cursors(f, g, it, z, cur, &lo, &hi)) {
		f->snap_g = -1;
		return;
	}
	/* Rows a dependency can still read: a stream's ops reach back D_k iterations at most
	 * from its cursor; of those rows only the ops something depends on matter. */
	int D = 0, reach = hi;
	for (int k = 0; k < WL_STREAM_COUNT; k++) {
		const fl_stream *s = &f->st[k];
		if (k == z || s->g != g || s->state == FL_DONE)
			continue;
		int Dk = f->back[k][b];
		reach = s->it - Dk < reach ? s->it - Dk : reach;
	}
	D = lo - reach; /* rows [lo - D, hi] */
	double tol = 1e-12 * dmax(1.0, f->t);
	bool same = f->snap_g == g && f->snap_it == it - 1 && f->snap_lo == lo - 1 && f->snap_hi == hi - 1 &&
		    f->snap_z == z && fl_same(cur, f->snap, 4 * WL_STREAM_COUNT, tol);
	int jz = z >= 0 ? f->st[z].j : -1;
	double W = z >= 0 ? f->st[z].work : 0, pz = z >= 0 ? fl_progress(f, z) : 0, prog = pz - f->snap_pz;
	if (z >= 0)
		same = same && f->nlog[z] < FL_LOG && prog > 0 && prog < W * (1 - 1e-9);
	fl_slot *sl = fl_slot_of(f, g);
	const int *target = f->target + f->off[b];
	for (int i = lo - D; same && i <= hi; i++)
		for (int j = 0; same && j < blk->n_ops; j++) {
			if (j == jz || !target[j])
				continue;
			double x = fl_end_at(f, sl, i, j, f->t), y = fl_end_at(f, sl, i - 1, j, f->snap_t);
			same = (isnan(x) && isnan(y)) || x == y || fabs(x - y) <= tol;
		}
	/* Every period moves each cursor one iteration on; the leading one must stay inside
	 * the block through the last skipped period (it may reach the last iteration). */
	int skip = blk->repeat - 1 - hi;
	double lambda = f->t - f->snap_t;
	if (same && skip > 0 && lambda >= 0) {
		/* Rows [lo - D, hi] move to [lo - D + skip, hi + skip]; the rows skipped over are
		 * never read again (no dependency reaches back past lo - D). */
		for (int i = hi; i >= lo - D; i--) {
			double *dst = sl->ends + (size_t)(i + skip) * sl->w;
			const double *src = i < 0 ? NULL : fl_row(sl, i);
			for (int j = 0; j < sl->w; j++)
				dst[j] = (src ? src[j] : -INFINITY) + skip * lambda;
		}
		if (sl->rows < hi + skip + 1)
			sl->rows = hi + skip + 1;
		/* the rows between the old window and the moved one are never written (but
		 * for a saturated queue's, below): no end times there */
		sl->gap_lo = hi + 1;
		sl->gap_hi = lo - D + skip;
		for (int k = 0; k < WL_STREAM_COUNT; k++) {
			fl_stream *s = &f->st[k];
			if (k != z && s->g == g && s->state != FL_DONE) {
				s->it += skip;
				s->start += skip * lambda;
				fl_bind(f, k);
			}
		}
		int o = f->off[b];
		for (int j = 0; j < blk->n_ops; j++)
			if (j != jz)
				f->acc[o + j] += skip * (f->acc[o + j] - f->snap_acc[j]);
		if (z >= 0) {
			/* The queue does skip x prog more work; its ops still to run have not ended
			 * (their rows before the moved window hold ended dependencies: -inf). */
			fl_stream *s = &f->st[z];
			double p_end = pz + skip * prog;
			int itz = (int)floor(p_end / W);
			double d = p_end - itz * W;
			if (itz > s->it) {
				int wback = (int)floor(d / prog);
				double t_new = fl_time_at(f, z, pz - (d - wback * prog)) + (skip - wback) * lambda;
				f->acc[o + jz] += t_new - s->start; /* busy without a gap: its ops back to back */
				s->start = t_new;
				s->it = itz;
			}
			s->rem = W - d;
			if (sl->gap_hi > s->it)
				sl->gap_hi = s->it > sl->gap_lo ? s->it : sl->gap_lo;
			for (int i = s->it; i < hi + skip + 1; i++) {
				double *row = sl->ends + (size_t)i * sl->w;
				if (i < lo - D + skip)
					for (int j = 0; j < sl->w; j++)
						row[j] = -INFINITY;
				row[jz] = NAN;
			}
			fl_bind(f, z);
		}
		f->t += skip * lambda;
		f->snap_g = -1;
		return;
	}
	f->snap_g = g;
	f->snap_it = it;
	f->snap_lo = lo;
	f->snap_hi = hi;
	f->snap_z = z;
	f->snap_pz = pz;
	f->snap_t = f->t;
	memcpy(f->snap, cur, sizeof cur);
	memcpy(f->snap_acc, f->acc + f->off[b], (size_t)blk->n_ops * sizeof *f->snap_acc);
	for (int k = 0; k < WL_STREAM_COUNT; k++)
		f->nlog[k] = 0;
	if (z >= 0) {
		f->logt[z][0] = f->t;
		f->logp[z][0] = pz;
		f->nlog[z] = 1;
	}
}

/* Called when the main stream starts micro-step m (its first op of the first micro-step
 * block). Micro-steps run the same blocks: when the state relative to now (every stream's
 * position relative to this micro-step, its remaining work, and the end times dependencies
 * can still reach in the block instances in use) equals the state at the previous
 * micro-step's start, every later micro-step repeats it, and all but the last are added in
 * closed form (time, durations, positions and end times shifted by whole micro-steps). */
static void fl_try_skip_micro(fl *f, int m)
{
	const workload_program *p = f->prog;
	int nm = p->n_micro, g0 = m * nm, q = 0, gmin = g0, gmax = g0;
	if (f->visit || p->grad_accum < 3)
		return;
	for (int k = 0; k < WL_STREAM_COUNT; k++) {
		const fl_stream *s = &f->st[k];
		if (s->state == FL_DONE || s->g >= nm * p->grad_accum) {
			f->ms_m = -1; /* a stream in the step blocks: nothing left to repeat */
			return;
		}
		gmin = s->g < gmin ? s->g : gmin;
		gmax = s->g > gmax ? s->g : gmax;
		f->ms_cur[q++] = s->g - g0;
		f->ms_cur[q++] = s->it;
		f->ms_cur[q++] = s->k * 8 + s->state;
		f->ms_cur[q++] = s->state == FL_ACTIVE ? s->rem : 0;
	}
	double tol = 1e-12 * dmax(1.0, f->t);
	bool same = f->ms_m == m - 1;
	for (int i = 0; same && i < q; i++)
		same = fabs(f->ms_cur[i] - f->ms_prev[i]) <= tol;
	/* end times of the ops depended on, in the instances in use, relative to now: compared
	 * with the same taken at the previous micro-step's start */
	int len = 0;
	for (int g = gmin; g <= gmax; g++) {
		fl_slot *a = fl_slot_of(f, g);
		int b, mm;
		const workload_block *blk = fl_block(f, g, &b, &mm);
		const int *target = f->target + f->off[b];
		/* rows a stream can still read: from its iteration back as far as a dependency
		 * reaches in its own instance, all of them in an instance it has yet to enter */
		int D = 0, first = blk->repeat;
		for (int j = 0; j < blk->n_ops; j++)
			if (blk->ops[j].dep >= 0 && -blk->ops[j].dep_iter > D)
				D = -blk->ops[j].dep_iter;
		for (int k = 0; k < WL_STREAM_COUNT; k++) {
			int lo_k = f->st[k].g == g ? f->st[k].it - D : f->st[k].g < g ? 0 : blk->repeat;
			first = lo_k < first ? lo_k : first;
		}
		first = first < 0 ? 0 : first;
		int rows = a ? a->rows - first : 0;
		rows = rows < 0 ? 0 : rows;
		int need = len + 1 + rows * blk->n_ops;
		if (need > f->ms_cap) {
			int cap = 2 * need;
			double *nb = realloc(f->ms_rows, (size_t)cap * sizeof *nb);
			if (!nb) {
				f->ms_m = -1;
				return;
			}
			f->ms_rows = nb;
			f->ms_cap = cap;
		}
		double v0 = rows;
		if (same && (len >= f->ms_len || f->ms_rows[len] != v0))
			same = false;
		if (!same) {
			f->ms_rows[len++] = v0;
			for (int i = first; i < first + rows; i++)
				for (int j = 0; j < blk->n_ops; j++)
					if (target[j])
						f->ms_rows[len++] = fl_end_at(f, a, i, j, f->t);
			continue;
		}
		len++;
		for (int i = first; i < first + rows; i++)
			for (int j = 0; j < blk->n_ops; j++) {
				if (!target[j])
					continue;
				double x = fl_end_at(f, a, i, j, f->t), y = f->ms_rows[len];
				if (!((isnan(x) && isnan(y)) || x == y || fabs(x - y) <= tol)) {
					same = false;
				}
				f->ms_rows[len++] = x;
			}
	}
	f->ms_len = len;
	if (gmax - gmin >= nm)
		same = false;
	/* the leading stream must stay within the micro-steps through the last skipped one */
	int skip = p->grad_accum - 1 - m - (gmax - g0 + nm - 1) / nm;
	double lambda = f->t - f->ms_t;
	if (same && skip > 0 && lambda >= 0) {
		for (int g = gmax; g >= gmin; g--) {
			fl_slot *a = fl_slot_of(f, g);
			if (!a)
				continue;
			a->g = g + skip * nm;
			for (int i = 0; i < a->rows * a->w; i++)
				a->ends[i] += skip * lambda; /* NAN stays NAN, -inf stays -inf */
		}
		for (int k = 0; k < WL_STREAM_COUNT; k++) {
			fl_stream *s = &f->st[k];
			s->g += skip * nm;
			s->micro += skip;
			s->start += skip * lambda;
			s->last_end += skip * lambda;
			s->busy_since += skip * lambda;
			if (s->state == FL_IDLE || s->state == FL_ACTIVE)
				fl_bind(f, k);
		}
		for (int i = 0; i < f->ms_nops; i++)
			f->acc[i] += skip * (f->acc[i] - f->ms_acc[i]);
		f->t += skip * lambda;
		f->snap_g = -1;
		f->ms_m = -1;
		return;
	}
	f->ms_m = m;
	f->ms_t = f->t;
	memcpy(f->ms_prev, f->ms_cur, sizeof f->ms_cur);
	memcpy(f->ms_acc, f->acc, (size_t)f->ms_nops * sizeof *f->acc);
}

/* The buffers of a finished run, kept for the next: a sweep runs a schedule per
 * configuration, and its ~10 allocations and frees cost as much as a short schedule. One
 * run at a time holds them (a try-lock: a run that finds them in use allocates its own);
 * they stay allocated, reachable from here, until the process exits. */
static struct {
	void *ints;
	double *work;
	size_t ints_cap, work_cap;
	fl_slot *slots;
	int slots_cap;
} fl_pool;
static atomic_flag fl_pool_busy = ATOMIC_FLAG_INIT;

static void fl_take(fl *f)
{
	if (atomic_flag_test_and_set_explicit(&fl_pool_busy, memory_order_acquire))
		return;
	f->pooled = true;
	f->ints = fl_pool.ints;
	f->work = fl_pool.work;
	f->ints_cap = fl_pool.ints_cap;
	f->work_cap = fl_pool.work_cap;
	f->slots = fl_pool.slots;
	f->slots_cap = fl_pool.slots_cap;
}

static void fl_free(fl *f)
{
	free(f->ms_rows);
	if (f->pooled) {
		fl_pool.ints = f->ints;
		fl_pool.work = f->work;
		fl_pool.ints_cap = f->ints_cap;
		fl_pool.work_cap = f->work_cap;
		fl_pool.slots = f->slots;
		fl_pool.slots_cap = f->slots_cap;
		atomic_flag_clear_explicit(&fl_pool_busy, memory_order_release);
		return;
	}
	for (int i = 0; i < f->slots_cap; i++)
		free(f->slots[i].ends);
	free(f->slots);
	free(f->ints);
	free(f->work);
}

/* *buf holding at least n bytes (its contents not kept); false when out of memory. */
static bool fl_room(void **buf, size_t *cap, size_t n)
{
	if (*cap >= n)
		return true;
	void *b = realloc(*buf, n);
	if (!b)
		return false;
	*buf = b;
	*cap = n;
	return true;
}

bool engine_schedule_streams_share(const workload_program *prog)
{
	/* Ring attention's transfers never run beside main-stream communication: every
	 * all-to-all or blocking ZeRO collective of the layer waits for the ring's last
	 * transfer, and the next ring starts after them (docs/model.md §7a). Beside the main
	 * stream alone they share nothing. */
	unsigned mask = 0;
	bool ring = false;
	for (int b = 0; b < prog->n_micro + prog->n_step; b++) {
		const workload_block *blk = fl_blk(prog, b);
		for (int j = 0; j < blk->n_ops; j++) {
			const workload_op *op = &blk->ops[j];
			if (op->kind != WL_OP_COMM)
				continue;
			mask |= 1u << op->stream;
			ring |= b < prog->n_micro && op->coll == WL_COLL_SENDRECV && op->stream == WL_STREAM_RING;
		}
	}
	unsigned side = mask & ~(1u << WL_STREAM_MAIN) & ~(1u << WL_STREAM_RING);
	if (ring && !side) /* the ring's stream carries only its transfers */
		mask &= ~(1u << WL_STREAM_RING);
	return (mask & (mask - 1)) != 0;
}

static bool fl_setup(fl *f, config_error *err)
{
	const workload_program *p = f->prog;
	f->nb = p->n_micro + p->n_step;
	f->ng = p->n_micro * p->grad_accum + p->n_step;
	int nops = 0;
	for (int b = 0; b < f->nb; b++) {
		const workload_block *blk = fl_blk(p, b);
		nops += blk->n_ops;
		if (blk->n_ops > f->max_ops)
			f->max_ops = blk->n_ops;
		if (blk->repeat > f->max_rep)
			f->max_rep = blk->repeat;
		for (int j = 0; j < blk->n_ops; j++) {
			const workload_op *op = &blk->ops[j];
			if (op->dep >= 0 && (op->dep >= blk->n_ops || op->dep_iter > 0 || -op->dep_iter >= MAX_LOOKBACK ||
					     (op->dep_iter == 0 && op->dep >= j)))
				return config_fail(err, "internal: op %s of block %s has an invalid dependency", op->name,
						   blk->name);
		}
	}
	if (f->max_rep < 1)
		f->max_rep = 1;
	size_t nptr = (size_t)WL_STREAM_COUNT * f->nb;
	void *work = f->work;
	bool room = fl_room(&f->ints, &f->ints_cap,
			    nptr * sizeof(int *) + ((size_t)4 * nops + (size_t)(1 + 2 * WL_STREAM_COUNT) * f->nb) * sizeof(int)) &&
		    fl_room(&work, &f->work_cap,
			    ((size_t)nops * 4 + (size_t)f->max_ops + 1 + 2 * WL_STREAM_COUNT * FL_LOG) * sizeof(double));
	f->work = work;
	if (!room)
		return config_fail(err, "out of memory evaluating the schedule");
	f->wt = f->work + nops;
	f->acc = f->wt + nops;
	f->snap_acc = f->acc + nops;
	for (int k = 0; k < WL_STREAM_COUNT; k++) {
		f->logt[k] = f->snap_acc + f->max_ops + 1 + 2 * k * FL_LOG;
		f->logp[k] = f->logt[k] + FL_LOG;
	}
	f->ms_acc = f->logp[WL_STREAM_COUNT - 1] + FL_LOG;
	f->ms_m = -1;
	int **ptrs = f->ints;
	int *q = (int *)(ptrs + nptr);
	f->off = q;
	q += f->nb;
	f->run = q;
	q += nops;
	int *target = f->target = q;
	q += nops;
	f->comm = q;
	q += nops;
	for (int k = 0; k < WL_STREAM_COUNT; k++) {
		f->cnt[k] = q;
		q += f->nb;
		f->back[k] = q;
		q += f->nb;
		f->idx[k] = ptrs + (size_t)k * f->nb;
	}
	for (int b = 0, o = 0; b < f->nb; o += fl_blk(p, b)->n_ops, b++) {
		const workload_block *blk = fl_blk(p, b);
		f->off[b] = o;
		/* one pass to count each stream's ops, one to place them and the per-op values */
		int n_on[WL_STREAM_COUNT] = {0};
		for (int j = 0; j < blk->n_ops; j++) {
			n_on[blk->ops[j].stream]++;
			target[o + j] = 0;
		}
		for (int k = 0; k < WL_STREAM_COUNT; k++) {
			f->idx[k][b] = q;
			f->cnt[k][b] = f->back[k][b] = 0;
			q += n_on[k];
		}
		for (int j = 0; j < blk->n_ops; j++) {
			const workload_op *op = &blk->ops[j];
			int k = op->stream;
			f->idx[k][b][f->cnt[k][b]++] = j;
			if (op->dep >= 0) {
				target[o + op->dep] = 1;
				if (-op->dep_iter > f->back[k][b])
					f->back[k][b] = -op->dep_iter;
			}
			double T = f->dur[b][j], w = INFINITY;
			const engine_op_load *ld = &f->load[b][j];
			for (int i = 0; i < ld->n; i++)
				T = dmax(T, ld->busy[i]);
			for (int i = 0; i < ld->n; i++)
				if (ld->busy[i] > 0)
					w = dmin(w, ld->flows[i] * T / ld->busy[i]);
			f->work[o + j] = T;
			f->wt[o + j] = w < INFINITY ? w : 1;
			f->acc[o + j] = 0;
			f->run[o + j] = 1;
			f->comm[o + j] = ld->n > 0;
		}
		/* Runs of compute ops on one stream that nothing waits on inside (the last may be
		 * waited on) and that wait on nothing after the first: one event each. Compute
		 * never shares, so each op of a run still takes exactly its duration. */
		for (int k = 0; k < WL_STREAM_COUNT && !f->visit; k++) {
			const int *L = f->idx[k][b];
			for (int i = f->cnt[k][b] - 2; i >= 0; i--) {
				const workload_op *a = &blk->ops[L[i]], *c = &blk->ops[L[i + 1]];
				if (a->kind == WL_OP_COMPUTE && c->kind == WL_OP_COMPUTE && c->dep < 0 && !target[o + L[i]]) {
					f->run[o + L[i]] = 1 + f->run[o + L[i + 1]];
					f->work[o + L[i]] += f->work[o + L[i + 1]];
				}
			}
		}
	}
	f->ms_nops = p->n_micro > 0 ? f->off[p->n_micro - 1] + fl_blk(p, p->n_micro - 1)->n_ops : 0;
	return true;
}

/* Ends the op (or run) stream k is on at time f->t. */
static bool fl_complete(fl *f, int k)
{
	fl_stream *s = &f->st[k];
	int o = f->off[s->b];
	double *row = s->row;
	if (s->len == 1) {
		row[s->j] = f->t;
		f->acc[o + s->j] += f->t - s->start;
		if (f->visit)
			f->visit(f->ctx, s->blk, s->it, s->micro, &s->blk->ops[s->j], s->start, f->t);
	} else {
		double t = s->start;
		for (int i = 0; i < s->len; i++) {
			int j = f->idx[k][s->b][s->k + i];
			double d = f->dur[s->b][j];
			t = i + 1 == s->len ? f->t : t + d;
			row[j] = t;
			f->acc[o + j] += d;
		}
	}
	int next = s->k + s->len;
	if (next < f->cnt[k][s->b]) { /* the next op of the same iteration */
		s->k = next;
		s->state = FL_IDLE;
		fl_bind(f, k);
		return true;
	}
	if (s->it + 1 < s->blk->repeat) { /* its first op of the next iteration: fl_seek's */
		s->it++;                  /* cursor, without its search (same instance, slot, */
		s->k = 0;                 /* block; the timing fields are set when it starts) */
		s->state = FL_IDLE;
		fl_bind(f, k);
		return true;
	}
	return fl_seek(f, k, s->g, s->it, next);
}

static bool fl_run(fl *f, engine_result *r, config_error *err)
{
	for (int k = 0; k < WL_STREAM_COUNT; k++)
		if (!fl_seek(f, k, 0, 0, 0))
			return config_fail(err, "out of memory evaluating the schedule");
	for (;;) {
		/* Start everything that can start now (starting ends nothing, so one pass is
		 * enough, unless a barrier opens). */
		if (f->at_barrier && !fl_barrier(f))
			return config_fail(err, "out of memory evaluating the schedule");
		int main_started = -1;
		for (int k = 0; k < WL_STREAM_COUNT; k++) {
			fl_stream *s = &f->st[k];
			if (s->state != FL_IDLE || (s->dep && isnan(*s->dep)))
				continue;
			s->state = FL_ACTIVE;
			s->rem = s->work;
			s->start = f->t;
			s->rate = 1;
			if (s->last_end != f->t)
				s->busy_since = f->t;
			f->dirty |= s->comm;
			if (k == WL_STREAM_MAIN && s->k == 0)
				main_started = s->it;
		}
		if (main_started >= 0) {
			const fl_stream *s = &f->st[WL_STREAM_MAIN];
			if (s->b == 0 && s->it == 0 && s->g < f->prog->n_micro * f->prog->grad_accum)
				fl_try_skip_micro(f, s->micro);
			else
				fl_try_skip(f, s->g, main_started);
		}
		if (f->dirty)
			fl_rates(f);
		double dt = INFINITY;
		int first = -1;
		for (int k = 0; k < WL_STREAM_COUNT; k++) {
			const fl_stream *s = &f->st[k];
			if (s->state == FL_ACTIVE && s->rem < dt * s->rate) {
				dt = s->rem / s->rate;
				first = k;
			}
		}
		if (first < 0) {
			for (int k = 0; k < WL_STREAM_COUNT; k++)
				if (f->st[k].state != FL_DONE)
					return config_fail(err, "internal: the schedule deadlocks (a dependency is never met)");
			break;
		}
		f->t += dt;
		const double done_below = 1e-15 * dmax(1.0, f->t); /* completing moves no clock */
		for (int k = 0; k < WL_STREAM_COUNT; k++) {
			fl_stream *s = &f->st[k];
			if (s->state != FL_ACTIVE)
				continue;
			s->rem = k == first ? 0 : s->rem - s->rate * dt;
			if (s->rem > done_below)
				continue;
			f->dirty |= s->comm;
			double busy = s->busy_since;
			if (!fl_complete(f, k))
				return config_fail(err, "out of memory evaluating the schedule");
			s->last_end = f->t;
			s->busy_since = busy;
		}
		int z = f->snap_z;
		if (f->snap_g >= 0 && z >= 0 && f->nlog[z] > 0 && f->nlog[z] < FL_LOG && f->st[z].g == f->snap_g) {
			f->logt[z][f->nlog[z]] = f->t;
			f->logp[z][f->nlog[z]++] = fl_progress(f, z);
		}
	}
	memset(&r->breakdown, 0, sizeof r->breakdown);
	r->fwd_time = r->bwd_time = 0;
	const workload_program *p = f->prog;
	for (int b = 0; b < f->nb; b++) {
		const workload_block *blk = fl_blk(p, b);
		double per = b < p->n_micro ? 1.0 / p->grad_accum : 0;
		for (int j = 0; j < blk->n_ops; j++)
			account_op(&blk->ops[j], f->acc[f->off[b] + j], f->acc[f->off[b] + j] * per, r);
	}
	finish_breakdown(r, f->t);
	return true;
}

bool engine_schedule_run_shared(const workload_program *prog, double *const *dur, engine_op_load *const *load,
				engine_result *r, engine_schedule_visit visit, void *ctx, config_error *err)
{
	if (!load || !engine_schedule_streams_share(prog))
		return engine_schedule_run(prog, dur, r, visit, ctx, err);
	fl f = {.prog = prog, .dur = dur, .load = load, .visit = visit, .ctx = ctx, .barrier_done = -1, .snap_g = -1,
		.snap_z = -1};
	fl_take(&f);
	bool ok = fl_setup(&f, err) && fl_run(&f, r, err);
	fl_free(&f);
	return ok;
}
