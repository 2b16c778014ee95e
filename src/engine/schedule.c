#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/schedule.h"

#define MAX_LOOKBACK 8

typedef struct sched {
	double stream_end[WL_STREAM_COUNT];
	engine_schedule_visit visit;
	void *ctx;
} sched;

static bool uniform_delta(const double *now, const double *before, int n, double *lambda)
{
	double l = now[0] - before[0];
	for (int i = 1; i < n; i++) {
		double d = now[i] - before[i];
		if (fabs(d - l) > 1e-12 * fmax(1.0, fabs(now[i])))
			return false;
	}
	*lambda = l;
	return true;
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
			t = fmax(t, s->stream_end[k]);
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
	/* state: used stream ends, then D rows of op ends (row k = iteration it - k) */
	int ns = 0;
	for (int k = 0; k < WL_STREAM_COUNT; k++)
		ns += used[k];
	int nstate = ns + D * n;
	/* Small blocks (every block spsim builds) use the stack: this runs 10^5 times a second. */
	enum { SMALL = 1024 };
	double small_ends[SMALL], small_state[2 * (SMALL + WL_STREAM_COUNT)];
	bool heap = (size_t)D * n > SMALL;
	double *ends = heap ? calloc((size_t)D * n, sizeof *ends) : small_ends;
	double *state = heap ? malloc(2 * (size_t)nstate * sizeof *state) : small_state;
	if (!ends || !state) {
		if (heap) {
			free(ends);
			free(state);
		}
		return config_fail(err, "out of memory evaluating the schedule");
	}
	if (!heap)
		memset(ends, 0, (size_t)D * n * sizeof *ends);
	double *prev = state + nstate;
	bool have_prev = false, was_uniform = false;
	double prev_lambda = 0;
	bool can_skip = s->visit == NULL;

	for (int it = 0; it < blk->repeat; it++) {
		double *row = ends + (size_t)(it % D) * n;
		for (int j = 0; j < n; j++) {
			const workload_op *op = &blk->ops[j];
			double start = s->stream_end[op->stream];
			if (op->dep >= 0) {
				int it2 = it + op->dep_iter;
				if (it2 >= 0)
					start = fmax(start, ends[(size_t)(it2 % D) * n + op->dep]);
			}
			double end = start + dur[j];
			row[j] = end;
			s->stream_end[op->stream] = end;
			if (s->visit)
				s->visit(s->ctx, blk, it, micro, op, start, end);
		}
		if (!can_skip || it + 1 < D)
			continue;
		/* snapshot the state */
		int q = 0;
		for (int k = 0; k < WL_STREAM_COUNT; k++)
			if (used[k])
				state[q++] = s->stream_end[k];
		for (int k = 0; k < D; k++) {
			memcpy(state + q, ends + (size_t)(((it - k) % D + D) % D) * n, (size_t)n * sizeof *state);
			q += n;
		}
		double lambda;
		bool uni = have_prev && uniform_delta(state, prev, nstate, &lambda);
		if (uni && was_uniform && fabs(lambda - prev_lambda) <= 1e-12 * fmax(1.0, fabs(lambda))) {
			int left = blk->repeat - 1 - it;
			for (int k = 0; k < WL_STREAM_COUNT; k++)
				if (used[k])
					s->stream_end[k] += left * lambda;
			break;
		}
		was_uniform = uni;
		if (uni)
			prev_lambda = lambda;
		memcpy(prev, state, (size_t)nstate * sizeof *state);
		have_prev = true;
	}
	if (heap) {
		free(ends);
		free(state);
	}
	return true;
}

static void account(const workload_block *blk, const double *dur, double times, engine_result *r, double side[2])
{
	engine_breakdown *b = &r->breakdown;
	for (int j = 0; j < blk->n_ops; j++) {
		const workload_op *op = &blk->ops[j];
		double t = dur[j] * blk->repeat * times;
		engine_side_add(op, t, side);
		switch (op->cat) {
		case WL_CAT_COMPUTE:
			b->compute += t;
			if (op->phase == WL_PHASE_STEP)
				b->optimizer += t;
			else if (op->kernel == WL_KERNEL_GEMM)
				b->gemm += t;
			else if (op->kernel == WL_KERNEL_ATTENTION)
				b->attention += t;
			else
				b->memory_bound += t;
			break;
		case WL_CAT_SP_COMM: b->sp_comm += t; break;
		case WL_CAT_ZERO_COMM: b->zero_comm += t; break;
		case WL_CAT_COUNT: break;
		}
		if (times > 0 && op->stream == WL_STREAM_MAIN) {
			double one = dur[j] * blk->repeat; /* one micro-step */
			if (op->phase == WL_PHASE_FWD)
				r->fwd_time += one;
			else if (op->phase == WL_PHASE_BWD || op->phase == WL_PHASE_RECOMPUTE)
				r->bwd_time += one;
		}
	}
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
		step = fmax(step, s.stream_end[k]);
	r->step_time = step;
	double side[2] = {0, 0};
	for (int b = 0; b < prog->n_micro; b++)
		account(&prog->micro[b], dur[b], prog->grad_accum, r, side);
	for (int b = 0; b < prog->n_step; b++)
		account(&prog->step[b], dur[prog->n_micro + b], 1, r, side);
	engine_breakdown_expose(&r->breakdown, step, side);
	return true;
}

void engine_side_add(const workload_op *op, double t, double side[2])
{
	if (op->cat == WL_CAT_SP_COMM && op->stream != WL_STREAM_MAIN)
		side[0] += t;
	else if (op->cat == WL_CAT_ZERO_COMM && op->stream == WL_STREAM_MAIN)
		side[1] += t;
}

/* The main stream runs compute, SP all-to-alls and (without overlap) ZeRO collectives
 * back to back; whatever else the step takes is waiting on a side stream. That wait is
 * charged to ZeRO collectives on the main stream first (they block it), then to SP
 * transfers on a side stream (ring attention's KV, up to their total), the rest to ZeRO
 * collectives on side streams. Without side-stream SP transfers this is the old rule:
 * every SP all-to-all exposed, the rest ZeRO. */
void engine_breakdown_expose(engine_breakdown *b, double step, const double side[2])
{
	double main_sp = b->sp_comm - side[0];
	double gap = step - b->compute - main_sp;
	double ring = gap - side[1];
	ring = ring < 0 ? 0 : ring > side[0] ? side[0] : ring;
	b->sp_comm_exposed = main_sp + ring;
	double zero = gap - ring;
	b->zero_comm_exposed = zero > 0 ? zero : 0;
}
