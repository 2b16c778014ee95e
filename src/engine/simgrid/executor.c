/* The SimGrid engine: one actor per GPU and stream executes the op program (workload.h)
 * with SimGrid executions for compute and flows for collectives (collectives.c).
 *
 * Schedule semantics, exactly those of workload.h: an op starts when the previous op of
 * its stream has ended and its dependency (dep, dep_iter) has ended; a barrier block
 * starts when every stream has drained. Each stream actor walks the whole program (to
 * number every stream's op instances) and runs the ops of its own stream. A dependency
 * on another stream waits until that stream has completed the op instance's number; the
 * waiting actor sleeps on a semaphore that the other stream's actor releases (actors are
 * cooperative, so the counters need no lock).
 *
 * Back-to-back compute ops of a stream run as one execution when nothing waits on the
 * ops inside the run (exact: a GPU host runs one stream's compute, so the run takes the
 * sum of the durations; per-op start and end times are the partial sums). */
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <simgrid/actor.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/link.h>
#include <simgrid/semaphore.h>
#include <xbt/config.h>

#include "engine/simgrid/sg_internal.h"
#include "util/intmath.h"

/* At most this many layer counts, and as many micro-step counts, share one simulation (a
 * window's four): fork_copy. */
#define SGX_SHARE_MAX 4

typedef struct sgx_actor {
	sgx_rank *R;
	int s;
} sgx_actor;

typedef struct pending {
	const workload_op *op;
	int bidx;
	int it, micro;
	double dur;
} pending;

typedef struct walker {
	sgx_rank *R;
	int me;
	long pos[WL_STREAM_COUNT];
	pending *pend;
	int np, cap;
	long gap; /* op numbers a forked copy skips (skip_done), counted done with the pending ops */
} walker;

void engine_simgrid_options_default(engine_simgrid_options *o)
{
	*o = (engine_simgrid_options){
		.ring = ENGINE_SG_RING_AGGREGATED, .symmetry = true, .merge_compute = true, .compute_timer = true,
		.repeat = true, .merge_flows = true, .share_prefix = true};
}

/* ------------------------------------------------------------------ actors --- */

static void notify(sgx_rank *R, int s)
{
	for (int x = 0; x < WL_STREAM_COUNT; x++)
		if (R->waiting[x] && R->wait_on[x] == s && R->done[s] > R->wait_seq[x]) {
			R->waiting[x] = false;
			sg_sem_release(R->sem[x]);
		}
}

/* Blocks stream `me` until stream `on` has completed op instance number `seq`. */
static void wait_for(sgx_rank *R, int me, int on, long seq)
{
	if (R->done[on] > seq)
		return;
	if (!R->sem[me])
		R->sem[me] = sg_sem_init(0);
	R->waiting[me] = true;
	R->wait_on[me] = on;
	R->wait_seq[me] = seq;
	sg_sem_acquire(R->sem[me]);
}

/* Runs `dur` seconds of the rank's compute. When one stream computes per GPU nothing shares
 * the GPU host, so an execution of dur x peak flops at the host's speed of peak would take
 * exactly dur: the engine then waits dur (a sleep is one timer where an execution is a
 * variable of the CPU model's sharing system, re-solved with it). Otherwise compute runs
 * as an execution and the host shares its speed between the streams. */
static void compute(sgx_rank *R, double dur)
{
	sgx_run *r = R->run;
	if (r->exclusive)
		sg_actor_sleep_for(dur);
	else
		sg_actor_execute(dur * r->p->gpu.peak_flops);
	r->execs++;
}

static void record(sgx_rank *R, int bidx, int it, int micro, const workload_op *op, double start, double end)
{
	sgx_run *r = R->run;
	const workload_block *blk = r->blocks[bidx].blk;
	double d = end - start;
	if (r->block_max && d > r->block_max[bidx])
		r->block_max[bidx] = d;
	sgx_acc *a = &R->acc;
	engine_side_add(op, d, &a->side[0], &a->side[1]);
	switch (op->cat) {
	case WL_CAT_COMPUTE:
		a->compute += d;
		if (op->phase == WL_PHASE_STEP)
			a->optimizer += d;
		else if (op->kernel == WL_KERNEL_GEMM)
			a->gemm += d;
		else if (op->kernel == WL_KERNEL_ATTENTION)
			a->attention += d;
		else
			a->memory_bound += d;
		break;
	case WL_CAT_SP_COMM: a->sp_comm += d; break;
	case WL_CAT_ZERO_COMM: a->zero_comm += d; break;
	case WL_CAT_HOST_COMM: a->host_comm += d; break;
	case WL_CAT_COUNT: break;
	}
	if (op->stream == WL_STREAM_MAIN && micro < r->prog->grad_accum) {
		if (op->phase == WL_PHASE_FWD)
			a->fwd += d;
		else if (op->phase == WL_PHASE_BWD || op->phase == WL_PHASE_RECOMPUTE)
			a->bwd += d;
	}
	if (r->trace) {
		/* under symmetry every period runs this timeline: write it for each */
		int layer = blk->layer_first >= 0 ? blk->layer_first + it * blk->layer_step : -1;
		int periods = r->quotient ? r->W / r->Wsim : 1;
		for (int k = 0; k < periods; k++)
			report_trace_op(r->trace, R->node + k * r->period_nodes, report_trace_tid(R->local, op), op, layer,
					micro, start, end);
	}
}

static void flush(walker *w)
{
	if (w->np == 0)
		return;
	sgx_rank *R = w->R;
	double total = 0;
	for (int k = 0; k < w->np; k++)
		total += w->pend[k].dur;
	double t = simgrid_get_clock();
	if (total > 0)
		compute(R, total);
	for (int k = 0; k < w->np; k++) {
		pending *q = &w->pend[k];
		record(R, q->bidx, q->it, q->micro, q->op, t, t + q->dur);
		t += q->dur;
	}
	R->done[w->me] += w->np + w->gap;
	w->np = 0;
	w->gap = 0;
	notify(R, w->me);
}

static bool push(walker *w, int bidx, int it, int micro, const workload_op *op, double dur)
{
	if (w->np == w->cap) {
		int cap = w->cap ? 2 * w->cap : 64;
		pending *p = realloc(w->pend, (size_t)cap * sizeof *p);
		if (!p) {
			w->R->run->oom = true;
			return false;
		}
		w->pend = p;
		w->cap = cap;
	}
	w->pend[w->np++] = (pending){.op = op, .bidx = bidx, .it = it, .micro = micro, .dur = dur};
	return true;
}

/* ------------------------------------------------- shared window prefixes --- */
/* The windows of docs/simgrid.md §5.4 simulate one program at a few layer counts (1, 2, 3
 * and 6) and, with gradient accumulation, a few micro-step counts. Up to the first instant
 * at which a stream with ops in a layer block would start iteration n of that block, a run
 * of more layers does exactly what a run of n layers does: every other op, before and after
 * the layer blocks, is the same op, and the ops of a layer block do not depend on the
 * iteration. Likewise a run of more micro-steps and one of g, up to the first instant a
 * stream with ops in the micro-step would start micro-step g. So a run of the largest counts
 * (the trunk) forks a copy of itself at that instant for each smaller count; the copy sets
 * its program to that count and goes on as that run would from there. Layer copies come
 * first (inside micro-step 0), and each of them forks the micro-step copies of its own layer
 * count, so one trunk yields every combination. Op instances keep the trunk's numbers (a
 * stream with no ops in a block has walked it at its full count, in no time, before the
 * fork): a stream leaving a layer block after n iterations, or the micro-steps after g,
 * skips the numbers of the missing ones (sgx_run.layer_span, micro_span), so every
 * dependency still names the same op. Each process writes its result to its own pipe. */
static struct {
	int nl, nm;                      /* layer and micro-step forks planned */
	int next_l, next_m;              /* the next of each */
	int l_at[SGX_SHARE_MAX];         /* their layer counts, ascending */
	int m_at[SGX_SHARE_MAX];         /* their micro-step counts, ascending */
	int row;                         /* results per layer count: the micro-step forks first
					    planned + 1 */
	int fd[SGX_SHARE_MAX * SGX_SHARE_MAX]; /* result pipes' write ends, [layer][micro], row
						  per layer count (-1: closed) */
	int li, mi;                      /* this process's result: fd[li * row + mi] */
	bool copy;                       /* this process is a fork of a trunk */
	long flows0, execs0;             /* flows and executions run when this copy was forked */
} g_fork;

static void fork_close(int i)
{
	if (g_fork.fd[i] >= 0)
		close(g_fork.fd[i]);
	g_fork.fd[i] = -1;
}

/* At the instant the program of the next smaller layer count (micro: micro-step count)
 * departs from this process's: forks the copy that runs it, and waits for it. */
static void fork_copy(sgx_run *r, bool micro)
{
	int k = micro ? g_fork.next_m++ : g_fork.next_l++;
	int row = g_fork.row, nfd = SGX_SHARE_MAX * SGX_SHARE_MAX;
	/* the copy's results: (li, k) for a micro-step copy; a layer copy's row k, its own
	 * (k, nm) and those of the micro-step copies it will fork */
	bool mine[SGX_SHARE_MAX * SGX_SHARE_MAX];
	for (int i = 0; i < nfd; i++) /* (closed entries are -1: fork_close skips them) */
		mine[i] = micro ? i == g_fork.li * row + k : i / row == k;
	fflush(stdout);
	fflush(stderr);
	pid_t trunk = getpid();
	pid_t pid = fork();
	if (pid != 0) { /* this process (or no fork: the caller then runs those counts alone) */
		for (int i = 0; i < nfd; i++)
			if (mine[i])
				fork_close(i);
		/* one process simulates at a time: run side by side on one core, the copies and
		 * the trunk evict each other's state from the caches, and the CPU time grows more
		 * than the flows fall (docs/simgrid.md §7) */
		while (pid > 0 && waitpid(pid, NULL, 0) < 0)
			;
		return;
	}
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != trunk)
		_exit(4);
	for (int i = 0; i < nfd; i++)
		if (!mine[i])
			fork_close(i);
	g_fork.copy = true;
	g_fork.flows0 = r->flows;
	g_fork.execs0 = r->execs;
	g_fork.nl = 0; /* layer copies are made first: none is left to a copy */
	if (micro) {
		g_fork.mi = k;
		g_fork.nm = 0;
		/* the process's own copy of the program (totals_tree's) */
		workload_program *prog = (workload_program *)r->prog;
		if (!r->micro_span)
			r->micro_span = prog->grad_accum;
		prog->grad_accum = g_fork.m_at[k];
		return;
	}
	g_fork.li = k;
	int n = g_fork.l_at[k];
	for (int b = 0; b < r->n_blocks; b++) {
		if (!r->blocks[b].layer)
			continue;
		workload_block *blk = (workload_block *)r->blocks[b].blk;
		if (!r->layer_span)
			r->layer_span = blk->repeat;
		if (blk->layer_step < 0) /* a backward block walks the layers down to 0 */
			blk->layer_first = n - 1;
		blk->repeat = n;
	}
}

/* Counts `count` op instances of stream w->me done that no stream will run (the numbers a
 * forked copy skips): with the pending merged compute when there is some, so that no waiter
 * is released before that compute has run. */
static void skip_done(walker *w, long count)
{
	if (count <= 0)
		return;
	if (w->np > 0) {
		w->gap += count;
	} else {
		w->R->done[w->me] += count;
		notify(w->R, w->me);
	}
}

/* Op instances of stream x in one micro-step, by the trunk's numbers (a layer copy's layer
 * blocks count the trunk's iterations, sgx_run.layer_span). */
static long micro_instances(const sgx_run *r, int x)
{
	long n = 0;
	for (int b = 0; b < r->prog->n_micro; b++) {
		const sgx_block_info *bi = &r->blocks[b];
		n += (long)bi->cnt[x] * (bi->layer && r->layer_span ? r->layer_span : bi->blk->repeat);
	}
	return n;
}

static void walk_block(walker *w, int bidx, int micro)
{
	const sgx_block_info *bi = &w->R->run->blocks[bidx];
	const workload_block *blk = bi->blk;
	sgx_rank *R = w->R;
	sgx_run *r = R->run;
	int me = w->me;
	if (blk->n_ops == 0)
		return;
	long start[WL_STREAM_COUNT];
	memcpy(start, w->pos, sizeof start);
	if (blk->barrier) {
		flush(w);
		for (int x = 0; x < WL_STREAM_COUNT; x++)
			if (x != me && r->stream_used[x])
				wait_for(R, me, x, w->pos[x] - 1);
		if (r->opt.sync_blocks && bi->cnt[me] > 0) /* every rank's stream, at one instant */
			sgx_world_barrier(R, me);
	}
	for (int it = 0;; it++) {
		if (bi->layer && g_fork.next_l < g_fork.nl && it == g_fork.l_at[g_fork.next_l] && bi->cnt[me] > 0)
			fork_copy(r, false); /* a copy returns with blk->repeat == it */
		if (it >= blk->repeat)
			break;
		for (int j = 0; j < blk->n_ops; j++) {
			const workload_op *op = &blk->ops[j];
			int os = op->stream;
			if (os != me) {
				w->pos[os]++;
				continue;
			}
			int ds = -1;
			long dseq = 0;
			if (op->dep >= 0 && it + op->dep_iter >= 0) {
				const workload_op *d = &blk->ops[op->dep];
				if ((int)d->stream != me) {
					ds = d->stream;
					dseq = start[ds] + (long)(it + op->dep_iter) * bi->cnt[ds] + bi->pre[op->dep];
				}
			}
			if (op->kind == WL_OP_COMPUTE && !workload_kernel_on_host(op->kernel) && r->merge) {
				if (ds >= 0 && R->done[ds] <= dseq) {
					flush(w);
					wait_for(R, me, ds, dseq);
				}
				double dur = engine_compute_time(R->plat, op) * R->slow;
				if (!push(w, bidx, it, micro, op, dur)) {
					/* no room to defer it: run what is pending, then this op alone */
					flush(w);
					if (push(w, bidx, it, micro, op, dur))
						flush(w);
				} else if (bi->target[j]) {
					flush(w);
				}
			} else {
				flush(w);
				if (ds >= 0)
					wait_for(R, me, ds, dseq);
				double t0 = simgrid_get_clock();
				if (workload_kernel_on_host(op->kernel) && op->kind == WL_OP_COMPUTE) {
					/* the copy engine over the host link, or the host's CPU: beside
					 * the GPU's kernels, not on its compute (and not slowed by a slow
					 * GPU) */
					double dur = engine_compute_time(R->plat, op);
					if (dur > 0)
						sg_actor_sleep_for(dur);
				} else if (op->kind == WL_OP_COMPUTE) {
					double dur = engine_compute_time(R->plat, op) * R->slow;
					if (dur > 0)
						compute(R, dur);
				} else {
					sgx_collective(R, me, op);
				}
				record(R, bidx, it, micro, op, t0, simgrid_get_clock());
				R->done[me]++;
				notify(R, me);
			}
			w->pos[me]++;
		}
	}
	if (bi->layer && r->layer_span > blk->repeat) {
		/* a forked copy: skip the numbers of the trunk's further iterations */
		long skip = r->layer_span - blk->repeat;
		for (int x = 0; x < WL_STREAM_COUNT; x++)
			w->pos[x] += skip * bi->cnt[x];
		skip_done(w, skip * bi->cnt[me]);
	}
}

/* Stream actors started and finished in this process's one simulation: SimGrid returns
 * from its run loop on a deadlock too (activities that can never complete), with the
 * clock stopped early; fewer finished than started means no valid result. */
static int g_streams_started, g_streams_finished;

static void stream_actor(int argc, char **argv)
{
	sgx_actor *A = sg_actor_self_get_data();
	sgx_run *r = A->R->run;
	walker w = {.R = A->R, .me = A->s};
	const workload_program *prog = r->prog;
	/* progress: the first stream actor's blocks walked of the program's (an estimate of the
	 * whole, as every stream walks the same program) */
	const engine_options *o = &A->R->run->in->opt;
	bool tell = o->progress && A->R == &r->ranks[0] && !r->told;
	if (tell)
		r->told = true;
	long done = 0, total = (long)prog->grad_accum * prog->n_micro + prog->n_step;
	bool micro_ops = micro_instances(r, A->s) > 0;
	for (int m = 0;; m++) {
		/* only a stream with ops in the micro-steps forks (one without walks them in no time) */
		if (g_fork.next_m < g_fork.nm && m == g_fork.m_at[g_fork.next_m] && micro_ops)
			fork_copy(r, true); /* a copy returns with prog->grad_accum == m */
		if (m >= prog->grad_accum)
			break;
		for (int b = 0; b < prog->n_micro; b++) {
			walk_block(&w, b, m);
			if (tell && !g_fork.copy) /* a forked copy: its trunk reports */
				o->progress(o->progress_ctx, ++done, total);
		}
	}
	if (r->micro_span > prog->grad_accum) { /* a forked copy: skip the trunk's further micro-steps */
		long skip = r->micro_span - prog->grad_accum;
		for (int x = 0; x < WL_STREAM_COUNT; x++)
			w.pos[x] += skip * micro_instances(r, x);
		skip_done(&w, skip * micro_instances(r, w.me));
	}
	for (int b = 0; b < prog->n_step; b++) {
		walk_block(&w, prog->n_micro + b, prog->grad_accum);
		if (tell && !g_fork.copy)
			o->progress(o->progress_ctx, ++done, total);
	}
	flush(&w);
	free(w.pend);
	double now = simgrid_get_clock();
	if (now > A->R->acc.end)
		A->R->acc.end = now;
	g_streams_finished++;
}

static void proxy_actor(int argc, char **argv)
{
	sgx_proxy *px = sg_actor_self_get_data();
	sgx_proxy_init(px);
	sg_actor_daemonize(sg_actor_self());
	sgx_proxy_actor(argc, argv);
}

/* ------------------------------------------------------------------- setup --- */

static bool blocks_build(sgx_run *r, config_error *err)
{
	const workload_program *prog = r->prog;
	r->n_blocks = prog->n_micro + prog->n_step;
	r->blocks = calloc((size_t)(r->n_blocks ? r->n_blocks : 1), sizeof *r->blocks);
	if (!r->blocks)
		return config_fail(err, "out of memory");
	for (int b = 0; b < r->n_blocks; b++) {
		const workload_block *blk = b < prog->n_micro ? &prog->micro[b] : &prog->step[b - prog->n_micro];
		sgx_block_info *bi = &r->blocks[b];
		bi->blk = blk;
		bi->layer = blk->layer_first >= 0 && blk->n_ops > 0;
		int n = blk->n_ops;
		bi->pre = calloc((size_t)(n ? n : 1), sizeof *bi->pre);
		bi->target = calloc((size_t)(n ? n : 1), sizeof *bi->target);
		if (!bi->pre || !bi->target)
			return config_fail(err, "out of memory");
		for (int j = 0; j < n; j++) {
			const workload_op *op = &blk->ops[j];
			if ((int)op->stream < 0 || op->stream >= WL_STREAM_COUNT)
				return config_fail(err, "internal: op %s of block %s has no valid stream", op->name,
						   blk->name);
			bi->pre[j] = bi->cnt[op->stream]++;
			if (blk->repeat > 0)
				r->stream_used[op->stream] = true;
			if (op->dep >= 0) {
				if (op->dep >= n || op->dep_iter > 0 || (op->dep_iter == 0 && op->dep >= j))
					return config_fail(err, "internal: op %s of block %s has an invalid dependency",
							   op->name, blk->name);
				if (blk->ops[op->dep].stream != op->stream)
					bi->target[op->dep] = true;
			}
		}
	}
	/* Merging compute is exact only while one stream computes per GPU. */
	int computing = 0;
	bool seen[WL_STREAM_COUNT] = {false};
	for (int b = 0; b < r->n_blocks; b++)
		for (int j = 0; j < r->blocks[b].blk->n_ops; j++) {
			const workload_op *op = &r->blocks[b].blk->ops[j];
			if (op->kind == WL_OP_COMPUTE && !workload_kernel_on_host(op->kernel) && !seen[op->stream]) {
				seen[op->stream] = true;
				computing++;
			}
		}
	r->exclusive = computing <= 1 && r->opt.compute_timer;
	r->merge = r->opt.merge_compute && computing <= 1;
	return true;
}

static void blocks_free(sgx_run *r)
{
	for (int b = 0; b < r->n_blocks && r->blocks; b++) {
		free(r->blocks[b].pre);
		free(r->blocks[b].target);
	}
	free(r->blocks);
}

/* The period (in nodes) of the translation symmetry, or 0 when the run must be whole.
 * docs/simgrid.md "Symmetry": with contiguous placement, whole nodes, SP groups inside a
 * period, fat-tree leaves inside a period and only ring or hierarchical collectives over
 * the world group, shifting every rank by one period maps the system onto itself, so
 * every period runs the same timeline and simulating one (with the flows that cross into
 * the next period landing on its image, the ghosts) gives the same times. */
static int symmetry_period(const sgx_run *r)
{
	if (!r->opt.symmetry || engine_whatif_active(&r->in->opt) || config_platform_heterogeneous(r->p))
		return 0; /* what-ifs and mixed nodes break the symmetry (docs/simgrid.md §9, §10) */
	int G = r->gpn, W = r->W;
	if (W % G != 0)
		return 0;
	int n = W / G;
	if (n < 2)
		return 0;
	for (int i = 0; i < W; i++)
		if (r->gpu_of[i] != i)
			return 0;
	int K = r->lay->group_size > 0 ? r->lay->group_size : 1;
	if (W % K != 0)
		return 0;
	if (r->lay->ring > 1 && r->lay->ring_stride > 1)
		return 0; /* USP's strided rings: simulated in full */
	int T = K / (int)util_gcd(K, G); /* smallest T with K | T * G */
	if (sgx_has_leaves(r->p, n)) {
		int npl = r->p->inter.nodes_per_leaf;
		T = T / (int)util_gcd(T, npl) * npl;
	}
	if (T >= n || n % T != 0)
		return 0;
	if (T * G > 64 * 1024)
		return 0;
	for (int b = 0; b < r->n_blocks; b++)
		for (int j = 0; j < r->blocks[b].blk->n_ops; j++) {
			const workload_op *op = &r->blocks[b].blk->ops[j];
			if (op->kind != WL_OP_COMM || op->group != WL_GROUP_WORLD)
				continue;
			if (op->coll != WL_COLL_ALLGATHER && op->coll != WL_COLL_REDUCESCATTER &&
			    op->coll != WL_COLL_ALLREDUCE)
				return 0;
		}
	return T;
}

static bool g_simgrid_used; /* SimGrid initialises once per process */

static void simgrid_start(void)
{
	const char *log = getenv("SPSIM_SIMGRID_LOG");
	char logarg[256];
	snprintf(logarg, sizeof logarg, "--log=%s", log && *log ? log : "root.thresh:critical");
	char *argv[] = {
		"spsim",
		logarg,
		/* pure alpha-beta with max-min sharing (docs/simgrid.md "Network model") */
		"--cfg=network/model:CM02",
		"--cfg=network/crosstraffic:0",
		"--cfg=network/TCP-gamma:0",
		/* small actor stacks, no guard pages: tens of thousands of actors */
		"--cfg=contexts/stack-size:256",
		"--cfg=contexts/guard-size:0",
		NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
	};
	int argc = 7;
	/* SPSIM_SIMGRID_CFG: further SimGrid options (space-separated KEY:VALUE, at most 8), for
	 * measuring solver settings (docs/simgrid.md §7); the defaults above are the exact ones */
	static char extra[8][128];
	const char *cfg = getenv("SPSIM_SIMGRID_CFG");
	for (int k = 0; cfg && *cfg && k < 8;) {
		while (*cfg == ' ')
			cfg++;
		size_t n = strcspn(cfg, " ");
		if (n == 0)
			break;
		snprintf(extra[k], sizeof extra[k], "--cfg=%.*s", (int)(n < 100 ? n : 100), cfg);
		argv[argc++] = extra[k++];
		cfg += n;
	}
	simgrid_init(&argc, argv);
}

/* The size of the platform's XML description (sgx_platform_write), for the statistics:
 * the platform is built directly (platform_s4u.cpp), never parsed. */
static bool platform_xml_bytes(const sgx_spec *spec, double *bytes, config_error *err)
{
	FILE *f = fopen("/dev/null", "w");
	if (!f)
		return config_fail(err, "/dev/null: cannot open it for writing");
	bool ok = sgx_platform_write(spec, f, bytes, err);
	fclose(f);
	return ok;
}

static void trace_names(sgx_run *r)
{
	char name[128];
	int nodes = r->nodes; /* every node of the system */
	int *rank_at = malloc((size_t)nodes * r->gpn * sizeof *rank_at);
	if (!rank_at)
		return;
	for (int g = 0; g < nodes * r->gpn; g++)
		rank_at[g] = -1;
	for (int i = 0; i < r->W; i++)
		rank_at[r->gpu_of[i]] = i;
	for (int u = 0; u < nodes; u++) {
		if (r->quotient)
			snprintf(name, sizeof name, "node %d (simulated as node %d: every %d-node period runs the same timeline)",
				 u, u % r->period_nodes, r->period_nodes);
		else
			snprintf(name, sizeof name, "node %d", u);
		report_trace_process(r->trace, u, name);
		for (int j = 0; j < r->gpn; j++) {
			int rank = rank_at[u * r->gpn + j];
			if (rank < 0)
				continue;
			for (int k = 0; k < REPORT_TRACE_TIDS_PER_GPU; k++) {
				snprintf(name, sizeof name, "gpu %d (rank %d) %s", j, rank, report_trace_tid_name(k));
				report_trace_thread(r->trace, u, j * REPORT_TRACE_TIDS_PER_GPU + k, name);
			}
		}
	}
	free(rank_at);
}

bool engine_simgrid_run_with(const engine_input *in, const engine_simgrid_options *o, engine_result *out,
			     engine_simgrid_stats *stats, config_error *err)
{
	return sgx_run_in_process(in, o, out, stats, NULL, err);
}

bool sgx_extrapolates(const engine_input *in, const engine_simgrid_options *o)
{
	/* background traffic has its own period, so iterations need not repeat: run it whole */
	return o->repeat && !in->opt.trace_path && getenv("SPSIM_SIMGRID_FULL") == NULL &&
	       sgx_background_last_node(in->opt.whatif) < 0;
}

/* The ops whose bucket calls run in a quiet system (docs/simgrid.md §5.6): a world-group
 * ring collective of SGX_CHUNKS_FROM calls or more in a step block that has a barrier,
 * whose ops are all on one stream, and after which every block has a barrier. Then, once
 * its first call has ended (its world barrier releases every rank at one instant), every
 * rank's other streams have drained (each passed the block's barrier before joining the
 * call) and wait for this stream (the later barriers), and no other actor runs (no
 * background traffic, no ghosts: the whole system, not its quotient), so each further call
 * starts from the same state and takes the same time. Counting (sgx_count_flows) sees the
 * same ops and counts the calls that will be simulated. */
static void chunk_ops_find(sgx_run *r)
{
	r->n_chunk_ops = 0;
	if (r->quotient || r->W < 2 || !sgx_extrapolates(r->in, &r->opt))
		return;
	const workload_program *prog = r->prog;
	for (int b = 0; b < prog->n_step; b++) {
		const workload_block *blk = &prog->step[b];
		bool quiet = blk->barrier && blk->n_ops > 0;
		for (int j = 1; quiet && j < blk->n_ops; j++)
			quiet = blk->ops[j].stream == blk->ops[0].stream;
		for (int a = b + 1; quiet && a < prog->n_step; a++)
			quiet = prog->step[a].barrier || prog->step[a].n_ops == 0;
		for (int j = 0; quiet && j < blk->n_ops; j++) {
			const workload_op *op = &blk->ops[j];
			bool ring_coll = op->coll == WL_COLL_ALLGATHER || op->coll == WL_COLL_REDUCESCATTER ||
					 op->coll == WL_COLL_ALLREDUCE;
			if (op->kind == WL_OP_COMM && op->group == WL_GROUP_WORLD && ring_coll &&
			    op->alg != WL_ALG_HIERARCHICAL && op->chunks >= SGX_CHUNKS_FROM &&
			    r->n_chunk_ops < SGX_CHUNK_OPS_MAX)
				r->chunk_ops[r->n_chunk_ops++] = op;
		}
	}
}

/* What a run and a flow count share: the options, the program's blocks, the placement,
 * the nodes the job spans and the symmetry period (r->Wsim ranks get actors). */
static bool run_prepare(sgx_run *r, const engine_input *in, const engine_simgrid_options *o, config_error *err)
{
	const config_platform *p = in->platform;
	r->in = in;
	r->p = p;
	r->prog = &in->plan->program;
	r->lay = &in->plan->layout;
	engine_simgrid_options_default(&r->opt);
	if (o)
		r->opt = *o;
	r->W = in->plan->layout.world;
	r->gpn = p->gpus_per_node;
	if (r->gpn < 1 || r->gpn > 64)
		return config_fail(err, "platform '%s': the SimGrid engine supports 1 to 64 GPUs per node, not %d",
				   p->name, r->gpn);
	if (r->W < 1 || r->W > config_platform_gpus(p))
		return config_fail(err, "%d ranks do not fit platform '%s' (%d GPUs)", r->W, p->name,
				   config_platform_gpus(p));
	if (!blocks_build(r, err))
		return false;
	r->gpu_of = malloc((size_t)r->W * sizeof *r->gpu_of);
	if (!r->gpu_of)
		return config_fail(err, "out of memory");
	if (!engine_whatif_placement(p, r->W, &in->opt, r->gpu_of, err))
		return false;
	/* the job's nodes: the first ceil(W / G), or up to the last it uses when failed nodes
	 * sit among them; whole leaves on a fat-tree, as the platform has them */
	int nodes = (r->W + r->gpn - 1) / r->gpn;
	for (int i = 0; i < r->W; i++)
		if (r->gpu_of[i] / r->gpn + 1 > nodes)
			nodes = r->gpu_of[i] / r->gpn + 1;
	if (sgx_background_last_node(in->opt.whatif) + 1 > nodes) /* the neighbour's nodes too */
		nodes = sgx_background_last_node(in->opt.whatif) + 1;
	if (nodes > (r->W + r->gpn - 1) / r->gpn && sgx_has_leaves(p, p->nodes)) {
		int npl = p->inter.nodes_per_leaf;
		nodes = (nodes + npl - 1) / npl * npl;
	}
	r->nodes = nodes;
	int T = symmetry_period(r);
	r->quotient = T > 0;
	r->period_nodes = T;
	r->Wsim = r->quotient ? T * r->gpn : r->W;
	chunk_ops_find(r);
	return true;
}

static void run_free(sgx_run *r)
{
	report_trace_destroy(r->trace);
	sgx_groups_free(r);
	blocks_free(r);
	free(r->gpu_of);
	free(r->ranks);
	free(r->proxy);
	free(r->mb_key);
	free(r->mb_val);
	free(r->bg);
	free(r->group_plat);
	free(r);
}

bool sgx_count_flows(const engine_input *in, const engine_simgrid_options *o, long *per_block, config_error *err)
{
	sgx_run *r = calloc(1, sizeof *r);
	if (!r)
		return config_fail(err, "out of memory");
	r->counting = true;
	bool ok = run_prepare(r, in, o, err) && sgx_groups_build(r, err);
	for (int b = 0; ok && b < r->n_blocks; b++) {
		const workload_block *blk = r->blocks[b].blk;
		long before = r->flows;
		for (int i = 0; i < r->Wsim; i++) {
			sgx_rank R = {.run = r, .rank = i, .node = r->gpu_of[i] / r->gpn, .local = r->gpu_of[i] % r->gpn};
			for (int j = 0; j < blk->n_ops; j++)
				if (blk->ops[j].kind == WL_OP_COMM)
					sgx_collective(&R, blk->ops[j].stream, &blk->ops[j]);
		}
		per_block[b] = r->flows - before;
	}
	ok = ok && !r->oom;
	run_free(r);
	return ok;
}

bool sgx_run_in_process(const engine_input *in, const engine_simgrid_options *o, engine_result *out,
			engine_simgrid_stats *stats, double *block_max, config_error *err)
{
	if (g_simgrid_used)
		return config_fail(err,
				   "the SimGrid engine runs one simulation per process (SimGrid cannot be restarted); run each simulation in its own process");
	const config_platform *p = in->platform;
	sgx_run *r = calloc(1, sizeof *r);
	if (!r)
		return config_fail(err, "out of memory");
	r->block_max = block_max;
	bool ok = false;
	if (!run_prepare(r, in, o, err))
		goto done;
	int T = r->period_nodes, nodes = r->nodes;
	sgx_spec spec = {.p = p,
			 .nodes = r->quotient ? T : nodes,
			 .system_nodes = nodes,
			 .wrap = r->quotient,
			 .whatif = in->opt.whatif};
	double xml_bytes = 0;
	if (stats && !platform_xml_bytes(&spec, &xml_bytes, err))
		goto done;

	g_simgrid_used = true;
	simgrid_start();
	if (!sgx_platform_build(&spec, err))
		goto done;
	{
		/* latencies are added per message (collectives.c): zero them in SimGrid */
		size_t nl = sg_link_count();
		sg_link_t *links = sg_link_list();
		for (size_t i = 0; i < nl; i++)
			sg_link_set_latency(links[i], 0.0);
		free(links);
	}

	if (p->n_node_groups > 0) {
		r->group_plat = malloc((size_t)p->n_node_groups * sizeof *r->group_plat);
		if (!r->group_plat) {
			config_fail(err, "out of memory");
			goto done;
		}
		for (int g = 0; g < p->n_node_groups; g++) {
			r->group_plat[g] = *p;
			r->group_plat[g].gpu = p->node_groups[g].gpu;
		}
	}
	r->ranks = calloc((size_t)r->Wsim, sizeof *r->ranks);
	sgx_actor *actors = calloc((size_t)r->Wsim * WL_STREAM_COUNT, sizeof *actors);
	if (r->quotient)
		r->proxy = calloc((size_t)r->gpn * WL_STREAM_COUNT, sizeof *r->proxy);
	if (!r->ranks || !actors || (r->quotient && !r->proxy)) {
		free(actors);
		config_fail(err, "out of memory");
		goto done;
	}
	if (!sgx_groups_build(r, err)) {
		free(actors);
		goto done;
	}
	if (in->opt.trace_path) {
		r->trace = report_trace_create();
		if (!r->trace) {
			free(actors);
			config_fail(err, "out of memory");
			goto done;
		}
	}
	/* GPU hosts by node and local index, from one pass over the host list: sg_host_by_name
	 * searches the zone tree from its root, zone by zone (docs/simgrid.md §7, "Platform
	 * loading"), once per rank a cost quadratic in the nodes */
	int gen_nodes = spec.nodes;
	sg_host_t *by_gpu = calloc((size_t)gen_nodes * r->gpn, sizeof *by_gpu);
	if (!by_gpu) {
		free(actors);
		config_fail(err, "out of memory");
		goto done;
	}
	{
		size_t nh = sg_host_count();
		sg_host_t *hl = sg_host_list();
		for (size_t h = 0; hl && h < nh; h++) {
			int u, j;
			if (sgx_host_parse(sg_host_get_name(hl[h]), &u, &j) && u < gen_nodes && j < r->gpn)
				by_gpu[u * r->gpn + j] = hl[h];
		}
		free(hl);
	}
	char name[64];
	for (int i = 0; i < r->Wsim; i++) {
		sgx_rank *R = &r->ranks[i];
		R->run = r;
		R->rank = i;
		R->node = r->gpu_of[i] / r->gpn;
		R->local = r->gpu_of[i] % r->gpn;
		R->slow = config_whatif_compute_factor(in->opt.whatif, i, R->node);
		int grp = config_platform_group_of(p, R->node);
		R->plat = grp < 0 ? p : &r->group_plat[grp];
		R->host = R->node < gen_nodes ? by_gpu[R->node * r->gpn + R->local] : NULL;
		if (!R->host) {
			sgx_host_name(name, sizeof name, R->node, R->local);
			free(by_gpu);
			free(actors);
			config_fail(err, "internal: host %s missing from the generated platform", name);
			goto done;
		}
	}
	free(by_gpu);
	if (r->trace)
		trace_names(r);
	if (r->quotient)
		for (int j = 0; j < r->gpn; j++) {
			sgx_ghost_name(name, sizeof name, j);
			sg_host_t gh = sg_host_by_name(name);
			for (int s = 0; s < WL_STREAM_COUNT && gh; s++) {
				if (!r->stream_used[s])
					continue;
				snprintf(name, sizeof name, "ghost%d.s%d", j, s);
				sg_actor_t a = sg_actor_init(name, gh);
				sg_actor_set_data(a, &r->proxy[j * WL_STREAM_COUNT + s]);
				sg_actor_start(a, proxy_actor, 0, NULL);
			}
		}
	for (int i = 0; i < r->Wsim; i++)
		for (int s = 0; s < WL_STREAM_COUNT; s++) {
			if (!r->stream_used[s])
				continue;
			sgx_actor *A = &actors[i * WL_STREAM_COUNT + s];
			A->R = &r->ranks[i];
			A->s = s;
			snprintf(name, sizeof name, "rank%d.s%d", i, s);
			sg_actor_t a = sg_actor_init(name, r->ranks[i].host);
			sg_actor_set_data(a, A);
			sg_actor_start(a, stream_actor, 0, NULL);
			g_streams_started++;
		}
	if (!sgx_background_start(r, err)) {
		free(actors);
		goto done;
	}
	simgrid_run();
	free(actors);
	if (r->oom) {
		config_fail(err, "out of memory during the SimGrid simulation");
		goto done;
	}
	if (r->unweighted) {
		config_fail(err, "internal: a merged flow could not be weighted; rerun without merging flows");
		goto done;
	}
	if (r->broken) {
		config_fail(err, "internal: the symmetry reduction met a flow it cannot map; rerun without it");
		goto done;
	}
	if (g_streams_finished < g_streams_started) {
		config_fail(err,
			    "the SimGrid simulation ended with %d of %d GPU streams unfinished at t = %g s (a deadlock: "
			    "activities that can never complete), so it has no step time",
			    g_streams_started - g_streams_finished, g_streams_started, simgrid_get_clock());
		goto done;
	}

	/* The step ends when the last rank ends; its breakdown is the step's. */
	int crit = 0;
	for (int i = 1; i < r->Wsim; i++)
		if (r->ranks[i].acc.end > r->ranks[crit].acc.end)
			crit = i;
	const sgx_acc *a = &r->ranks[crit].acc;
	*out = (engine_result){.engine = "simgrid"};
	out->step_time = a->end;
	engine_breakdown *bd = &out->breakdown;
	bd->compute = a->compute;
	bd->gemm = a->gemm;
	bd->attention = a->attention;
	bd->memory_bound = a->memory_bound;
	bd->optimizer = a->optimizer;
	bd->sp_comm = a->sp_comm;
	bd->zero_comm = a->zero_comm;
	bd->host_comm = a->host_comm;
	/* same accounting as the analytic schedule (engine/schedule.c): SP all-to-alls sit on
	 * the main stream; whatever else the step takes is waiting on ZeRO */
	bd->sp_comm_side = a->side[0];
	bd->zero_comm_main = a->side[1];
	engine_breakdown_expose(bd, a->end);
	int ga = r->prog->grad_accum > 0 ? r->prog->grad_accum : 1;
	out->fwd_time = a->fwd / ga;
	out->bwd_time = a->bwd / ga;
	engine_result_finish(in, out);
	if (r->trace && !report_trace_write(r->trace, in->opt.trace_path, err))
		goto done;
	if (stats) {
		stats->simulated_ranks = r->Wsim;
		stats->period_nodes = r->quotient ? T : 0;
		/* a forked copy counts what it simulated after the fork */
		stats->flows = r->flows - g_fork.flows0;
		stats->executions = r->execs - g_fork.execs0;
		stats->xml_bytes = xml_bytes;
	}
	ok = true;
done:
	run_free(r);
	return ok;
}

/* Runs job(ctx, buf) in a child process and copies its `len` bytes of buf back: the
 * simulations behind engine_simgrid.run and the collective timer run this way, so that a
 * process can run any number of them (SimGrid initialises once per process) and SimGrid
 * stopping on an internal error cannot take the caller down. The child dies with the caller
 * (PR_SET_PDEATHSIG, prctl(2)): a caller killed for a timeout or an interrupt (the planner's
 * worker pool, src/plan/pool.c) leaves no simulation running on. A child that died of SIGINT
 * (a terminal's Ctrl-C reaches the whole process group) is passed on: the caller raises
 * SIGINT itself, so that whoever waits for it sees an interrupt, not a failed simulation.
 * With forks planned (nl at layer counts l_at, nm at micro-step counts m_at, both ascending)
 * the child is a trunk (fork_copy): bufs holds (nl + 1) x (nm + 1) messages of len bytes, the
 * one at li x (nm + 1) + mi from the run of layer count l_at[li] (li = nl: the trunk's) and
 * micro-step count m_at[mi] (mi = nm: the trunk's), the last the trunk's own; got[i] says
 * whether message i arrived (a copy that could not be forked or died leaves its counts to be
 * simulated alone; the trunk's missing is an error). */
static bool in_child_n(void (*job)(void *ctx, void *buf), void *ctx, void *bufs, size_t len, int nl,
		       const int *l_at, int nm, const int *m_at, bool *got, config_error *err)
{
	int fd[SGX_SHARE_MAX * SGX_SHARE_MAX][2];
	int n = (nl + 1) * (nm + 1);
	for (int k = 0; k < n; k++)
		if (pipe(fd[k]) != 0) {
			for (int j = 0; j < k; j++) {
				close(fd[j][0]);
				close(fd[j][1]);
			}
			return config_fail(err, "cannot start the SimGrid simulation: no pipe available");
		}
	fflush(stdout);
	fflush(stderr);
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		for (int k = 0; k < n; k++) {
			close(fd[k][0]);
			close(fd[k][1]);
		}
		return config_fail(err, "cannot start the SimGrid simulation: fork failed");
	}
	if (pid == 0) {
		for (int k = 0; k < n; k++)
			close(fd[k][0]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(4); /* the caller died before the line above */
		g_fork.nl = nl;
		g_fork.nm = nm;
		for (int k = 0; k < nl; k++)
			g_fork.l_at[k] = l_at[k];
		for (int k = 0; k < nm; k++)
			g_fork.m_at[k] = m_at[k];
		for (int k = 0; k < SGX_SHARE_MAX * SGX_SHARE_MAX; k++)
			g_fork.fd[k] = k < n ? fd[k][1] : -1;
		g_fork.row = nm + 1;
		g_fork.li = nl;
		g_fork.mi = nm;
		job(ctx, (char *)bufs + (size_t)(n - 1) * len);
		/* a copy forked inside job returns here too, with its own result: each process
		 * writes its message at its own index and closes the pipes of forks never made,
		 * so that the caller finds nothing there */
		int me = g_fork.li * g_fork.row + g_fork.mi, out = g_fork.fd[me];
		for (int k = 0; k < n; k++)
			if (k != me)
				fork_close(k);
		const char *p = (const char *)bufs + (size_t)(n - 1) * len;
		size_t left = len;
		while (left > 0) {
			ssize_t k = write(out, p, left);
			if (k <= 0)
				_exit(3);
			p += k;
			left -= (size_t)k;
		}
		close(out);
		/* the copies die with this process: wait for any left (fork_copy waits already) */
		while (wait(NULL) > 0)
			;
		_exit(0);
	}
	for (int k = 0; k < n; k++)
		close(fd[k][1]);
	size_t got_last = 0;
	for (int k = 0; k < n; k++) {
		size_t have = 0;
		char *b = (char *)bufs + (size_t)k * len;
		while (have < len) {
			ssize_t r = read(fd[k][0], b + have, len - have);
			if (r <= 0)
				break;
			have += (size_t)r;
		}
		close(fd[k][0]);
		if (k < n - 1)
			got[k] = have == len;
		else
			got_last = have;
	}
	int status = 0;
	while (waitpid(pid, &status, 0) < 0)
		;
	if (got_last == len)
		return true;
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGINT)
		raise(SIGINT);
	if (WIFSIGNALED(status))
		return config_fail(err,
				   "the SimGrid simulation died (signal %d); rerun with SPSIM_SIMGRID_LOG=root.thresh:warning to see SimGrid's messages",
				   WTERMSIG(status));
	return config_fail(err,
			   "the SimGrid simulation stopped (exit %d); rerun with SPSIM_SIMGRID_LOG=root.thresh:warning to see SimGrid's messages",
			   WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

static bool in_child(void (*job)(void *ctx, void *buf), void *ctx, void *buf, size_t len, config_error *err)
{
	return in_child_n(job, ctx, buf, len, 0, NULL, 0, NULL, NULL, err);
}

typedef struct run_msg {
	int ok;
	engine_result r;
	engine_simgrid_stats st;
	config_error err;
} run_msg;

typedef struct run_ctx {
	const engine_input *in;
	const engine_simgrid_options *o;
	bool stats; /* fill run_msg.st (the platform's XML size is written to /dev/null for it) */
} run_ctx;

static void run_job(void *ctx, void *buf)
{
	const run_ctx *c = ctx;
	run_msg *m = buf;
	memset(m, 0, sizeof *m);
	m->ok = sgx_run_in_process(c->in, c->o, &m->r, c->stats ? &m->st : NULL, NULL, &m->err);
}

/* A child's result: its error, or its result with its flows and executions added to *acc
 * (may be NULL). */
static bool msg_take(const run_msg *m, engine_result *out, engine_simgrid_stats *acc, config_error *err)
{
	if (!m->ok) {
		if (err)
			*err = m->err;
		return false;
	}
	*out = m->r;
	out->engine = "simgrid";
	if (acc) {
		acc->simulated_ranks = m->st.simulated_ranks;
		acc->period_nodes = m->st.period_nodes;
		acc->flows += m->st.flows;
		acc->executions += m->st.executions;
		acc->xml_bytes = m->st.xml_bytes;
	}
	return true;
}

/* One simulation in a child process; the child writes the trace. Adds the child's flows
 * and executions to *acc (may be NULL). */
static bool run_child(const engine_input *in, const engine_simgrid_options *o, engine_result *out,
		      engine_simgrid_stats *acc, config_error *err)
{
	run_msg m;
	run_ctx c = {.in = in, .o = o, .stats = acc != NULL};
	return in_child(run_job, &c, &m, sizeof m, err) && msg_take(&m, out, acc, err);
}

/* ------------------------------------- identical layers and micro-steps, once --- */
/* A step repeats two things: the layer blocks (forward, backward: one iteration per
 * layer, L of them) inside a micro-step, and the micro-step itself (grad_accum = G times).
 * Nothing separates two iterations but each stream's own order, so once the schedule
 * settles (every rank leaving an iteration in the same relative state: the world
 * collectives of a layer meet every rank, ZeRO traffic of one micro-step overlaps the next
 * the same way each time), every further period of P iterations adds the same time to
 * every total (P = 1, or 2 when contention alternates between two schedules, as ZeRO-3's
 * prefetched gathers do). So the step is simulated with n = a, a+P and a+2P iterations
 * (a = 1, 2, 4, ... aligned so that the full count minus a is a whole number of periods)
 * and once more at about twice the window's end; when the two differences agree on every
 * total to 1e-9 relative, no total falls, and the later run lies on the same line, the
 * schedule repeats and the totals are those of a+2P plus (full - a - 2P) / P periods.
 * (Three points are not enough: a stream whose backlog grows by a little each layer, as a
 * reduce-scatter stream sharing the NIC with gathers does, finishes last only from some
 * layer count on, and a fixed exposed cost can be hidden a little more by each added
 * layer; both are linear for a few layers.) Otherwise the next a is
 * tried, and the full count is simulated when none fits. Layers are reduced inside each
 * micro-step count the micro-step extrapolation asks for. The result is the full
 * simulation's up to rounding (tests compare both); cost no longer grows with L or G. A
 * trace needs every op, so it runs the full program, and so does SPSIM_SIMGRID_FULL=1
 * (docs/simgrid.md §5.4). */
#define SGX_PERIODIC_FIELDS 16
#define SGX_MAX_PERIOD 2
/* micro-steps: the first window (2, 3, 4 and its check at 8) fits from 9; the flow guard
 * then decides whether it pays (with shared prefixes, from about 9; simulated one by one,
 * from 18) */
#define SGX_EXTRAPOLATE_FROM 9
#define SGX_LAYERS_FROM 8       /* layer iterations */
#define SGX_LAYER_BUDGET 12     /* layer iterations a failing search may cost at least: the first
                                 * window (1, 2, 3 layers) and its check (6) */
#define SGX_MEMO 128

static void periodic_fields(const engine_result *r, int g, double *f)
{
	const engine_breakdown *b = &r->breakdown;
	const double v[SGX_PERIODIC_FIELDS] = {r->step_time,	  b->compute,	     b->gemm,
					       b->attention,	  b->memory_bound,   b->optimizer,
					       b->sp_comm,	  b->sp_comm_exposed, b->zero_comm,
					       b->zero_comm_exposed, r->fwd_time * g, r->bwd_time * g,
					       b->sp_comm_side,	  b->zero_comm_main, b->host_comm,
					       b->host_comm_exposed};
	memcpy(f, v, sizeof v);
}

static void result_of_fields(const engine_input *in, const double *v, int g, engine_result *out)
{
	*out = (engine_result){.engine = "simgrid", .step_time = v[0]};
	engine_breakdown *b = &out->breakdown;
	b->compute = v[1], b->gemm = v[2], b->attention = v[3], b->memory_bound = v[4];
	b->optimizer = v[5], b->sp_comm = v[6], b->sp_comm_exposed = v[7], b->zero_comm = v[8];
	b->zero_comm_exposed = v[9];
	b->sp_comm_side = v[12], b->zero_comm_main = v[13];
	b->host_comm = v[14], b->host_comm_exposed = v[15];
	out->fwd_time = v[10] / g;
	out->bwd_time = v[11] / g;
	engine_result_finish(in, out); /* tokens/s and MFU of the whole step */
}

/* The layer count of the program's layer blocks (all with the same repeat), or 0. */
static int layer_count(const workload_program *prog)
{
	int L = 0;
	for (int b = 0; b < prog->n_micro + prog->n_step; b++) {
		const workload_block *blk = b < prog->n_micro ? &prog->micro[b] : &prog->step[b - prog->n_micro];
		if (blk->layer_first < 0 || blk->n_ops == 0)
			continue;
		if (L && blk->repeat != L)
			return 0;
		L = blk->repeat;
	}
	return L;
}

/* The simulations behind one result: the input, the options, a memo of the totals of each
 * (micro-steps, layers) simulated, and the flows and executions they took. */
typedef struct xrun {
	const engine_input *in;
	const engine_simgrid_options *o;
	int L; /* layers of the full program (0: no layer blocks) */
	int n;
	int g[SGX_MEMO], l[SGX_MEMO];
	bool unpaid[SGX_MEMO]; /* made ahead by totals_tree, not yet weighed (memo_paid) */
	double f[SGX_MEMO][SGX_PERIODIC_FIELDS];
	engine_simgrid_stats st;
	bool want_stats; /* the caller asked for statistics (the XML size costs a write) */
	long spent; /* layer iterations simulated in windows for the current micro-step count */
	long *block_flows; /* sgx_count_flows: flows of one iteration of each block */
	long spent_flows;  /* flows of the windows tried for the current micro-step count */
} xrun;

/* Flows a step of g micro-steps whose layer blocks repeat l times moves (counted). */
static long flows_at(const xrun *x, int g, int l)
{
	const workload_program *prog = &x->in->plan->program;
	long n = 0;
	for (int b = 0; b < prog->n_micro + prog->n_step; b++) {
		const workload_block *blk = b < prog->n_micro ? &prog->micro[b] : &prog->step[b - prog->n_micro];
		/* the blocks totals_at runs */
		long rep = l != x->L && blk->layer_first >= 0 && blk->n_ops > 0 ? l : blk->repeat;
		n += x->block_flows[b] * rep * (b < prog->n_micro ? g : 1);
	}
	return n;
}

/* The first layer window a search tries (a = 1, P = 1: 1, 2, 3 layers and the check at 6). */
static const int first_layer_window[4] = {1, 2, 3, 6};

/* Flows step_totals(g) is expected to move: the first layer window where it moves fewer
 * than the full layer count, else the full count. */
static long step_flows(const xrun *x, int g)
{
	long full = flows_at(x, g, x->L);
	if (x->L < SGX_LAYERS_FROM)
		return full;
	long w = 0;
	for (int k = 0; k < 4; k++)
		w += flows_at(x, g, first_layer_window[k]);
	return w < full || x->o->repeat_always ? w : full;
}

/* The memo entry of g micro-steps and l layers, or -1. */
static int memo_find(const xrun *x, int g, int l)
{
	for (int i = 0; i < x->n; i++)
		if (x->g[i] == g && x->l[i] == l)
			return i;
	return -1;
}

static bool memo_has(const xrun *x, int g, int l) { return memo_find(x, g, l) >= 0; }

/* Memoized and already weighed by a layer search's guard: the runs totals_tree makes ahead
 * for step_totals (micro-step windows) are weighed when that search first takes them, so the
 * search makes the choices it would have made without them. */
static bool memo_paid(const xrun *x, int g, int l)
{
	int i = memo_find(x, g, l);
	return i >= 0 && !x->unpaid[i];
}

static void memo_pay(xrun *x, int g, int l)
{
	int i = memo_find(x, g, l);
	if (i >= 0)
		x->unpaid[i] = false;
}

/* The program of a step of g micro-steps whose layer blocks repeat l times: *plan shares
 * the ops of the input's, *blocks (to free; NULL at the full layer count) holds its blocks. */
static bool cut_program(const xrun *x, int g, int l, workload_plan *plan, workload_block **blocks,
			config_error *err)
{
	const workload_program *prog = &x->in->plan->program;
	int nb = prog->n_micro + prog->n_step;
	*blocks = NULL;
	*plan = *x->in->plan; /* shares the ops: only the counts change */
	plan->program.grad_accum = g;
	if (l == x->L)
		return true;
	workload_block *b = malloc((size_t)(nb ? nb : 1) * sizeof *b);
	if (!b)
		return config_fail(err, "out of memory");
	for (int i = 0; i < nb; i++) {
		b[i] = i < prog->n_micro ? prog->micro[i] : prog->step[i - prog->n_micro];
		if (b[i].layer_first >= 0 && b[i].n_ops > 0) { /* sgx_block_info.layer */
			/* a backward block walks the layers down: keep its last layer index 0 */
			if (b[i].layer_step < 0)
				b[i].layer_first = l - 1;
			b[i].repeat = l;
		}
	}
	plan->program.micro = b;
	plan->program.step = b + prog->n_micro;
	*blocks = b;
	return true;
}

static void memo_put(xrun *x, int g, int l, const engine_result *r, bool unpaid)
{
	x->unpaid[x->n] = unpaid;
	x->g[x->n] = g;
	x->l[x->n] = l;
	periodic_fields(r, g, x->f[x->n++]);
}

/* Totals of a step of g micro-steps whose layer blocks repeat l times (one simulation). */
static bool totals_at(xrun *x, int g, int l, const double **f, config_error *err)
{
	int i = memo_find(x, g, l);
	if (i >= 0) {
		*f = x->f[i];
		return true;
	}
	if (x->n == SGX_MEMO)
		return config_fail(err, "internal: too many partial simulations");
	workload_plan plan;
	workload_block *blocks;
	if (!cut_program(x, g, l, &plan, &blocks, err))
		return false;
	engine_input cut = *x->in;
	cut.plan = &plan;
	engine_result r;
	bool ok = run_child(&cut, x->o, &r, x->want_stats ? &x->st : NULL, err);
	free(blocks);
	if (!ok)
		return false;
	memo_put(x, g, l, &r, false);
	*f = x->f[x->n - 1];
	return true;
}

/* Sorts want[0..nw) ascending into out without repeats; returns how many. */
static int counts_sorted(const int *want, int nw, int *out)
{
	int n = 0;
	for (int k = 0; k < nw; k++) {
		int v = want[k], j = n;
		bool dup = false;
		for (int i = 0; i < n; i++)
			dup |= out[i] == v;
		if (dup || n == SGX_SHARE_MAX)
			continue;
		while (j > 0 && out[j - 1] > v) {
			out[j] = out[j - 1];
			j--;
		}
		out[j] = v;
		n++;
	}
	return n;
}

/* The layer counts step_totals asks for first at each of the micro-step counts want[0..4):
 * its first layer window where that pays for all of them (step_flows), else every layer.
 * Returns how many (in ls). */
static int micro_tree_layers(const xrun *x, const int *want, int *ls)
{
	bool win = x->L >= SGX_LAYERS_FROM;
	for (int k = 0; k < 4 && win; k++)
		win = step_flows(x, want[k]) < flows_at(x, want[k], x->L) || x->o->repeat_always;
	if (!win) {
		ls[0] = x->L;
		return 1;
	}
	memcpy(ls, first_layer_window, sizeof first_layer_window);
	return 4;
}

/* Flows the tree of a micro-step window (totals_tree) is expected to move: its largest
 * micro-step count at each of its layer counts (the trunk and its layer copies, counted
 * whole: their shared prefix is a small part), and the copies of fewer micro-steps, each of
 * which simulates the step's last blocks (flows_at with no micro-step). */
static long micro_tree_flows(const xrun *x, const int *want)
{
	int ls[4];
	int nl = micro_tree_layers(x, want, ls);
	long n = 0, separate = 0;
	bool tree = true; /* totals_tree runs no tree where one combination is simulated already */
	for (int k = 0; k < 4; k++) {
		separate += step_flows(x, want[k]);
		for (int j = 0; j < nl; j++)
			tree &= !memo_has(x, want[k], ls[j]);
	}
	for (int k = 0; k < nl; k++)
		n += flows_at(x, want[3], ls[k]) + 3 * flows_at(x, 0, ls[k]);
	return tree ? n : separate;
}

/* Every combination of the micro-step counts gs and the layer counts ls, none simulated yet,
 * as one simulation of the largest of each that forks a copy of itself for each smaller one
 * (fork_copy); a combination whose copy brought no result is left to totals_at. With one
 * micro-step count, the layer counts already simulated are left out; with nothing to share
 * (a single combination, share_prefix off, with several micro-step counts one already
 * simulated) it does nothing and leaves them all to totals_at. `unpaid`: the runs are made
 * ahead of the layer searches that will use them (memo_paid). */
static bool totals_tree(xrun *x, const int *gs, int ngw, const int *ls, int nlw, bool unpaid, config_error *err)
{
	int g[SGX_SHARE_MAX], l[SGX_SHARE_MAX], fresh[SGX_SHARE_MAX], nf = 0;
	int ng = counts_sorted(gs, ngw, g), nl = counts_sorted(ls, nlw, l);
	if (ng == 1) { /* one micro-step count: share what is left of a window */
		for (int b = 0; b < nl; b++)
			if (!memo_has(x, g[0], l[b]))
				fresh[nf++] = l[b];
		nl = counts_sorted(fresh, nf, l);
	}
	if (ng * nl < 2 || !x->o->share_prefix || x->n + ng * nl > SGX_MEMO || l[nl - 1] > x->L)
		return true;
	for (int a = 0; a < ng; a++)
		for (int b = 0; b < nl; b++)
			if (memo_has(x, g[a], l[b]))
				return true;
	workload_plan plan;
	workload_block *blocks;
	if (!cut_program(x, g[ng - 1], l[nl - 1], &plan, &blocks, err))
		return false;
	engine_input cut = *x->in;
	cut.plan = &plan;
	int n = ng * nl;
	run_msg *m = malloc((size_t)n * sizeof *m);
	if (!m) {
		free(blocks);
		return config_fail(err, "out of memory");
	}
	bool got[SGX_SHARE_MAX * SGX_SHARE_MAX] = {false};
	run_ctx c = {.in = &cut, .o = x->o, .stats = x->want_stats};
	bool ok = in_child_n(run_job, &c, m, sizeof *m, nl - 1, l, ng - 1, g, got, err);
	got[n - 1] = ok;
	for (int k = 0; ok && k < n; k++) {
		engine_result r;
		if (k < n - 1) {
			x->st.copies += got[k];
			x->st.copies_missing += !got[k];
		}
		if (!got[k])
			continue;
		ok = msg_take(&m[k], &r, x->want_stats ? &x->st : NULL, err);
		if (ok)
			memo_put(x, g[k % ng], l[k / ng], &r, unpaid);
	}
	free(m);
	free(blocks);
	return ok;
}

/* Totals of `full` iterations of one repeated part (micro-steps when `micro`, else
 * layers), the other count fixed at `other`: extrapolated when the schedule repeats, else
 * *done false. */
static bool totals_of(xrun *x, bool micro, int full, int other, double *v, bool *done, config_error *err);

/* Totals of g micro-steps with every layer: layers extrapolated when they repeat. */
static bool step_totals(xrun *x, int g, double *v, config_error *err)
{
	bool done = false;
	x->spent = 0;
	x->spent_flows = 0;
	if (x->L >= SGX_LAYERS_FROM && !totals_of(x, false, x->L, g, v, &done, err))
		return false;
	if (done)
		return true;
	const double *f;
	if (!totals_at(x, g, x->L, &f, err))
		return false;
	memcpy(v, f, SGX_PERIODIC_FIELDS * sizeof *v);
	return true;
}

static bool totals_of(xrun *x, bool micro, int full, int other, double *v, bool *done, config_error *err)
{
	*done = false;
	/* A schedule that repeats every iteration also repeats every two. Micro-steps: from
	 * each start a, the window of period 1, then that of period 2. Layers (whose windows
	 * are cheap but many): every window of period 1 first, then those of period 2, within
	 * the budget below. */
	int n_a = 0;
	for (int a0 = micro ? 2 : 1; a0 + 2 < full; a0 *= 2)
		n_a++;
	long micro_spent = 0; /* micro-steps: flows of the windows tried */
	for (int w = 0; w < n_a * SGX_MAX_PERIOD; w++) {
		int ia = micro ? w / SGX_MAX_PERIOD : w % n_a;
		int P = micro ? w % SGX_MAX_PERIOD + 1 : w / n_a + 1;
		int a0 = (micro ? 2 : 1) << ia;
		int a = a0 + (full - a0) % P;
		if (a + 2 * P >= full)
			continue;
		/* The window's slope is confirmed at a later count, about twice the window's
		 * end: a transient that is itself linear for a while (a queue filling up: a
		 * prefetch falling one layer further behind per layer until it saturates)
		 * passes the three-point test inside its stretch, and its slope extrapolated
		 * over the whole program is wrong (even negative). */
		int check = a + 2 * P + P * ((a + 2 * P + P - 1) / P);
		if (check >= full)
			continue;
		const int want[4] = {a, a + P, a + 2 * P, check};
		long need = 0; /* layer iterations the window adds */
		if (!micro) {
			/* windows cost at most max(L/2, 12) layer iterations per micro-step
			 * count: a schedule that does not repeat costs at most that more than
			 * the full run */
			for (int k = 0; k < 4; k++)
				need += memo_paid(x, other, want[k]) ? 0 : want[k];
			if (x->spent + need > (full / 2 > SGX_LAYER_BUDGET ? full / 2 : SGX_LAYER_BUDGET))
				continue;
		}
		/* Flow counting: a window is worth its simulations only while it and the windows
		 * already tried move fewer flows than the full count would (the check run at
		 * twice the window's end can cost more than it saves: a BASP step's layers carry
		 * few flows and what lies outside them is simulated four times). The guard bounds
		 * a failed search to the full run's flows, then runs the full count. */
		long need_flows = 0;
		for (int k = 0; k < 4; k++) {
			if (micro && !x->o->share_prefix)
				need_flows += step_flows(x, want[k]);
			else if (!micro && !memo_paid(x, other, want[k]))
				need_flows += flows_at(x, other, want[k]);
		}
		if (micro && x->o->share_prefix) /* one tree of forks (totals_tree) */
			need_flows = micro_tree_flows(x, want);
		long full_flows = micro ? step_flows(x, full) : flows_at(x, other, full);
		long *spent_flows = micro ? &micro_spent : &x->spent_flows;
		if (!x->o->repeat_always && *spent_flows + need_flows >= full_flows)
			continue;
		*spent_flows += need_flows;
		x->spent += need;
		for (int k = 0; k < 4 && !micro; k++)
			memo_pay(x, other, want[k]);
		double f[4][SGX_PERIODIC_FIELDS];
		if (!micro && !totals_tree(x, &other, 1, want, 4, false, err))
			return false;
		if (micro) { /* the micro-step counts at the layer counts step_totals asks for first */
			int ls[4];
			int nl = micro_tree_layers(x, want, ls);
			if (!totals_tree(x, want, 4, ls, nl, true, err))
				return false;
		}
		for (int k = 0; k < 4; k++) {
			bool ok;
			if (micro) {
				ok = step_totals(x, want[k], f[k], err);
			} else {
				const double *t;
				ok = totals_at(x, other, want[k], &t, err);
				if (ok)
					memcpy(f[k], t, sizeof f[k]);
			}
			if (!ok)
				return false;
		}
		bool periodic = true;
		double m = (double)((check - a - 2 * P) / P);
		for (int i = 0; periodic && i < SGX_PERIODIC_FIELDS; i++) {
			double d1 = f[1][i] - f[0][i], d2 = f[2][i] - f[1][i];
			/* every field totals non-negative amounts, so in a steady state no
			 * period can lower it: a falling field is a fixed cost still being
			 * absorbed (an exposed tail hidden by one more layer each time) */
			periodic = fabs(d2 - d1) <= 1e-9 * fabs(f[2][i]) + 1e-15 &&
				   d2 >= -(1e-9 * fabs(f[2][i]) + 1e-15) &&
				   fabs(f[2][i] + m * d2 - f[3][i]) <= 1e-9 * fabs(f[3][i]) + 1e-15;
		}
		if (!periodic)
			continue;
		/* (no total falls, so none extrapolates below zero) */
		double k = (double)((full - a - 2 * P) / P);
		for (int i = 0; i < SGX_PERIODIC_FIELDS; i++)
			v[i] = f[2][i] + k * (f[2][i] - f[1][i]);
		*done = true;
		return true;
	}
	return true;
}

bool engine_simgrid_run_opt(const engine_input *in, const engine_simgrid_options *o, engine_result *out,
			    engine_simgrid_stats *stats, config_error *err)
{
	engine_simgrid_options def;
	engine_simgrid_options_default(&def);
	if (!o)
		o = &def;
	bool repeat = sgx_extrapolates(in, o);
	int G = in->plan->program.grad_accum;
	const workload_program *prog = &in->plan->program;
	xrun *x = calloc(1, sizeof *x);
	long *block_flows = calloc((size_t)(prog->n_micro + prog->n_step + 1), sizeof *block_flows);
	bool ok = x && block_flows;
	if (!ok)
		config_fail(err, "out of memory");
	if (ok) {
		x->in = in;
		x->o = o;
		x->L = layer_count(prog);
		x->block_flows = block_flows;
		x->want_stats = stats != NULL;
	}
	/* what the full program moves: the guard's yardstick (when there are windows to weigh),
	 * and stats.full_flows */
	bool search = repeat && ok && (x->L >= SGX_LAYERS_FROM || G >= SGX_EXTRAPOLATE_FROM);
	if (ok && (search || stats))
		ok = sgx_count_flows(in, o, block_flows, err);
	if (ok && repeat) {
		double v[SGX_PERIODIC_FIELDS];
		bool done = false;
		if (G >= SGX_EXTRAPOLATE_FROM)
			ok = totals_of(x, true, G, 0, v, &done, err);
		if (ok && !done)
			ok = step_totals(x, G, v, err);
		if (ok)
			result_of_fields(in, v, G, out);
	} else if (ok) {
		ok = run_child(in, o, out, x->want_stats ? &x->st : NULL, err);
	}
	if (ok && stats) {
		*stats = x->st;
		stats->full_flows = flows_at(x, G, x->L);
	}
	free(block_flows);
	free(x);
	return ok;
}

/* engine_simgrid.run */
static bool simgrid_run_op(const engine_input *in, engine_result *out, config_error *err)
{
	return engine_simgrid_run_opt(in, NULL, out, NULL, err);
}

/* ------------------------------------------------------- collective timer --- */

typedef struct timer_ctx {
	const engine_input *in;
	int n;
} timer_ctx;

static void timer_job(void *ctx, void *buf)
{
	timer_ctx *c = ctx;
	int *ok = buf;
	config_error *e = (config_error *)((char *)buf + sizeof(double));
	double *times = (double *)((char *)buf + sizeof(double) + sizeof(config_error));
	memset(buf, 0, sizeof(double) + sizeof(config_error));
	for (int i = 0; i < c->n; i++)
		times[i] = 0;
	engine_result r;
	/* each size from one common start, as nccl-tests times it after a barrier: without it a
	 * size's time depended on the sizes before it (ranks leave a size at different instants) */
	engine_simgrid_options o;
	engine_simgrid_options_default(&o);
	o.sync_blocks = true;
	*ok = sgx_run_in_process(c->in, &o, &r, NULL, times, e);
}

bool engine_simgrid_collective_times(const config_platform *p, workload_coll coll, workload_alg alg, int gpus,
				     int group_size, const engine_options *opt, const double *sizes, int n,
				     double *times, config_error *err)
{
	if (n < 1)
		return true;
	if (gpus < 1 || group_size < 1 || gpus % group_size != 0)
		return config_fail(err, "%d ranks do not split into groups of %d", gpus, group_size);
	workload_block *blocks = calloc((size_t)n, sizeof *blocks);
	workload_op *ops = calloc((size_t)n, sizeof *ops);
	size_t len = sizeof(double) + sizeof(config_error) + (size_t)n * sizeof(double);
	char *buf = calloc(1, len);
	if (!blocks || !ops || !buf) {
		free(blocks);
		free(ops);
		free(buf);
		return config_fail(err, "out of memory");
	}
	for (int i = 0; i < n; i++) {
		ops[i] = (workload_op){.name = workload_coll_name(coll), .kind = WL_OP_COMM, .cat = WL_CAT_SP_COMM,
				       .stream = WL_STREAM_MAIN, .coll = coll, .alg = alg, .group = WL_GROUP_SP,
				       .bytes = sizes[i], .chunks = 1, .dep = -1};
		blocks[i] = (workload_block){.name = "size", .repeat = 1, .barrier = true, .layer_first = -1,
					     .ops = &ops[i], .n_ops = 1, .cap_ops = 1};
	}
	workload_plan plan;
	memset(&plan, 0, sizeof plan);
	plan.layout = (workload_layout){.world = gpus, .sp = gpus, .group_size = group_size,
					.n_groups = gpus / group_size, .seqs_per_group = 1, .tokens_per_rank = 1};
	plan.program = (workload_program){.micro = blocks, .n_micro = n, .step = blocks + n, .grad_accum = 1};
	config_job job;
	config_job_defaults(&job);
	job.gpus = gpus;
	job.sp = gpus;
	job.seq_len = 1;
	config_model model;
	memset(&model, 0, sizeof model);
	engine_input in = {.model = &model, .platform = p, .job = &job, .plan = &plan};
	if (opt) {
		in.opt = *opt;
		in.opt.trace_path = NULL;
	}
	timer_ctx c = {.in = &in, .n = n};
	bool ok = in_child(timer_job, &c, buf, len, err);
	if (ok && !*(int *)buf) {
		if (err)
			memcpy(err, buf + sizeof(double), sizeof *err);
		ok = false;
	}
	if (ok)
		memcpy(times, buf + sizeof(double) + sizeof(config_error), (size_t)n * sizeof *times);
	free(blocks);
	free(ops);
	free(buf);
	return ok;
}

const engine_ops engine_simgrid = {
	.name = "simgrid",
	.summary = "discrete-event simulation on SimGrid: contention, placement, timelines (seconds per step)",
	.run = simgrid_run_op,
};
