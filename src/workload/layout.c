/* Job validation and rank-group formation (basp.md: "BASP: Batch-Aware Sequence
 * Parallelism", "DeepSpeed-Ulysses"). */
#include <stdio.h>
#include <string.h>

#include "config/ranges.h"
#include "workload/workload.h"
#include "util/intmath.h"

/* Lists the divisors of n as "1, 2, 4, 8" into buf, for messages that say what to change. */
static const char *divisors(int n, char *buf, size_t len)
{
	/* Formatted by hand: rejected configurations of a sweep build this message, and
	 * snprintf per divisor dominated the job check. */
	size_t used = 0;
	for (int d = 1; d <= n && used + 16 < len; d++) {
		if (n % d != 0)
			continue;
		if (used) {
			buf[used++] = ',';
			buf[used++] = ' ';
		}
		char digits[12];
		int nd = 0;
		for (int v = d; v > 0; v /= 10)
			digits[nd++] = (char)('0' + v % 10);
		while (nd > 0)
			buf[used++] = digits[--nd];
	}
	buf[used] = '\0';
	return buf;
}

static bool check_heads(const config_model *m, int P, const char *what, config_error *err)
{
	char dv[256];
	if (m->heads % P != 0)
		return config_fail(err,
				   "model '%s' has %d attention heads, not divisible by %s (%d); each rank must get whole heads: use a group size in {%s}",
				   m->name, m->heads, what, P, divisors(m->heads, dv, sizeof dv));
	if (m->kv_heads % P != 0 && P % m->kv_heads != 0)
		return config_fail(err,
				   "model '%s' has %d kv heads and %s is %d: kv heads must divide it or be divisible by it (DeepSpeed's kv-head replication); use a group size in {%s}",
				   m->name, m->kv_heads, what, P, divisors((int)util_gcd(m->heads, m->kv_heads * P), dv, sizeof dv));
	return true;
}

/* Unequal groups: heads are split as evenly as possible (ceil(a/K) on the busiest rank),
 * an extension of DeepSpeed's even split (docs/model.md). A sequence that does not split
 * evenly over a group is padded to the next multiple of its size, as sequence-parallel
 * implementations pad to a multiple of the SP degree; the padded tokens are costed
 * (workload_compose). */
static bool check_unequal(const config_model *m, const config_job *job, config_error *err)
{
	int q = job->sp / job->micro_batch;
	if (q > m->heads)
		return config_fail(err, "BASP groups of %d GPUs exceed the %d attention heads of '%s'", q, m->heads,
				   m->name);
	return true;
}

/* Largest divisor of n not above x (1 always qualifies). */
static int divisor_at_most(int n, int x)
{
	for (int d = x < n ? x : n; d > 1; d--)
		if (n % d == 0)
			return d;
	return 1;
}

static bool check_extra_step(const config_model *m, const config_platform *p, const config_job *job,
			     config_error *err)
{
	for (int left = job->micro_batch; left > 0;) {
		int d = divisor_at_most(job->sp, left);
		config_job sub = *job;
		sub.micro_batch = d;
		sub.basp_uneven = CONFIG_BASP_UNEVEN_ERROR;
		config_error e2;
		if (!workload_check(m, p, &sub, &e2))
			return config_fail(err, "with --basp-uneven extra-step, the micro-step of %d sequence%s: %s", d,
					   d == 1 ? "" : "s", e2.msg);
		left -= d;
	}
	return true;
}

int workload_divisor_at_most(int n, int x) { return divisor_at_most(n, x); }

static bool heads_split(const config_model *m, int U)
{
	return m->heads % U == 0 && (m->kv_heads % U == 0 || U % m->kv_heads == 0);
}

/* The U x R pairs of P that the model's heads allow, as "1x8, 2x4" into buf. */
static const char *usp_pairs(const config_model *m, int P, char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = '\0';
	for (int u = 1; u <= P && used + 24 < len; u++)
		if (P % u == 0 && heads_split(m, u))
			used += (size_t)snprintf(buf + used, len - used, "%s%dx%d", used ? ", " : "", u, P / u);
	return buf;
}

/* USP's degrees: U x R = P (the SP domain, or a BASP group). Given one, the other follows;
 * given none, U is the largest that divides P, fits in a node (its all-to-all on NVLink,
 * USP's placement, arXiv 2405.07719 §4) and splits the heads. Fills the job's degrees. */
static bool resolve_usp(const config_model *m, const config_platform *p, config_job *job, int P, config_error *err)
{
	char dv[256];
	int U = job->ulysses_degree, R = job->ring_degree;
	if (U < 0 || R < 0)
		return config_fail(err, "--ulysses-degree and --ring-degree must be positive");
	if (U == 0 && R == 0) {
		for (int u = P; u >= 1; u--)
			if (P % u == 0 && u <= p->gpus_per_node && heads_split(m, u)) {
				U = u;
				break;
			}
	} else if (U == 0) {
		U = R > 0 && P % R == 0 ? P / R : 0;
	}
	if (R == 0 && U > 0)
		R = P % U == 0 ? P / U : 0;
	if (U <= 0 || R <= 0 || U * R != P) {
		/* what was given: a degree left unset is derived, so name only the given ones */
		char got[96];
		if (job->ulysses_degree > 0 && job->ring_degree > 0)
			snprintf(got, sizeof got, "%d x %d", job->ulysses_degree, job->ring_degree);
		else
			snprintf(got, sizeof got, "--%s-degree %d alone, which does not divide %d",
				 job->ulysses_degree > 0 ? "ulysses" : "ring",
				 job->ulysses_degree > 0 ? job->ulysses_degree : job->ring_degree, P);
		return config_fail(err, "USP needs --ulysses-degree x --ring-degree = %d (the %s), got %s; valid U x R: {%s}", P,
				   job->strategy == CONFIG_STRATEGY_BASP ? "BASP group size K = sp / micro-batch" : "SP size", got,
				   usp_pairs(m, P, dv, sizeof dv));
	}
	if (!heads_split(m, U))
		return config_fail(err,
				   "model '%s' has %d heads and %d kv heads: --ulysses-degree %d must split them as Ulysses does; valid U x R: {%s}",
				   m->name, m->heads, m->kv_heads, U, usp_pairs(m, P, dv, sizeof dv));
	job->ulysses_degree = U;
	job->ring_degree = R;
	return true;
}

bool workload_check_techniques(const config_platform *p, const config_job *job, config_error *err)
{
	if (job->offload_activations) {
		if (p->host.bandwidth <= 0)
			return config_fail(err,
					   "--offload-activations needs a host link, and platform '%s' declares none; add a host_link: {bandwidth, latency, memory} section to the platform (docs/model.md \"Memory techniques\") or drop --offload-activations",
					   p->name);
		if (job->recompute != CONFIG_RECOMPUTE_FULL)
			return config_fail(err,
					   "--offload-activations moves the activation checkpoints (each layer's input) to host memory, which exist only with full recompute; add --recompute full (got --recompute %s)",
					   config_recompute_names[job->recompute]);
	}
	/* Optimizer offload: DeepSpeed takes offload_optimizer "for ZeRO stages 1, 2 and 3"
	 * only (its config docs, zero_optimization.offload_optimizer) and its ZeRO-0 engine
	 * keeps the optimizer on the GPU; the copies need the host link and the CPU step the
	 * host's DRAM bandwidth. */
	if (job->offload_optimizer == CONFIG_OFFLOAD_OPT_CPU) {
		if (job->zero_stage < 1)
			return config_fail(err,
					   "--offload-optimizer cpu needs ZeRO stage 1, 2 or 3 (DeepSpeed offloads the optimizer of its ZeRO optimizers only), got --zero %d; add --zero 1 or higher or drop --offload-optimizer",
					   job->zero_stage);
		if (p->host.bandwidth <= 0)
			return config_fail(err,
					   "--offload-optimizer cpu needs a host link, and platform '%s' declares none; add a host_link: {bandwidth, latency, memory, memory_bandwidth} section to the platform (docs/model.md \"Memory techniques\") or drop --offload-optimizer",
					   p->name);
		if (p->host.memory_bandwidth <= 0)
			return config_fail(err,
					   "--offload-optimizer cpu runs Adam on the host, and platform '%s' declares no host_link memory_bandwidth (the node's DRAM bandwidth: sockets x channels x MT/s x 8 B); add it to the platform's host_link (docs/model.md \"Memory techniques\") or drop --offload-optimizer",
					   p->name);
	}
	/* Each GPU holds B·S/N tokens under every strategy (BASP: S/K with K = N/B). */
	long t = job->sp > 0 ? (long)((double)job->micro_batch * (double)job->seq_len / job->sp) : 0;
	const struct { const char *flag; int n; } tiles[] = {{"--tile-mlp", job->tile_mlp}, {"--tile-logits", job->tile_logits}};
	for (int i = 0; i < 2; i++)
		if (tiles[i].n != 1 && !config_range_check(i ? CONFIG_R_TILE_LOGITS : CONFIG_R_TILE_MLP, NULL, tiles[i].n, err))
			return false;
		else if (tiles[i].n < 1 || (t > 0 && tiles[i].n > t))
			return config_fail(err,
					   "%s %d: each GPU holds %ld tokens per micro-step, and a tile needs at least one; use a tile count from 1 to %ld",
					   tiles[i].flag, tiles[i].n, t, t > 0 ? t : 1);
	return true;
}

/* The model and platform that last passed their range checks in this thread, byte for byte:
 * a sweep checks thousands of jobs against the same few, and the checks cost more than the
 * job's own. A changed byte (another platform, another node count) checks again, so every
 * caller still gets the checks' errors. */
static _Thread_local config_model checked_model;
static _Thread_local config_platform checked_platform;
static _Thread_local bool model_checked, platform_checked;

/* True when x equals the copy in seen (set once a check passed). */
static bool unchanged(const void *x, const void *seen, size_t n, bool set)
{
	return set && !memcmp(x, seen, n);
}

/* Keeps x as the one that passed; true. */
static bool remember(const void *x, void *seen, size_t n, bool *set)
{
	memcpy(seen, x, n);
	return *set = true;
}

bool workload_check(const config_model *m, const config_platform *p, config_job *job, config_error *err)
{
	char dv[256];
	/* every number within the range table first: the products below cannot overflow */
	if (!unchanged(m, &checked_model, sizeof *m, model_checked) &&
	    !(config_model_check(m, err) && remember(m, &checked_model, sizeof *m, &model_checked)))
		return false;
	if (!unchanged(p, &checked_platform, sizeof *p, platform_checked) &&
	    !(config_platform_check(p, err) && remember(p, &checked_platform, sizeof *p, &platform_checked)))
		return false;
	int avail = config_platform_gpus(p);
	if (job->gpus < 0)
		return config_fail(err, "--gpus must be a positive number of GPUs, got %d", job->gpus);
	if (job->gpus == 0)
		job->gpus = avail;
	if (job->gpus > avail)
		return config_fail(err,
				   "--gpus %d is larger than platform '%s' (%d node%s x %d GPU%s = %d); lower --gpus or raise --nodes",
				   job->gpus, p->name, p->nodes, p->nodes == 1 ? "" : "s", p->gpus_per_node,
				   p->gpus_per_node == 1 ? "" : "s", avail);
	if (job->sp < 0)
		return config_fail(err, "--sp must be a positive SP domain size, got %d", job->sp);
	if (job->sp == 0)
		job->sp = job->gpus;
	if (job->sp > job->gpus)
		return config_fail(err, "--sp %d is larger than --gpus %d; the SP domain cannot exceed the job", job->sp,
				   job->gpus);
	if (job->gpus % job->sp != 0)
		return config_fail(err,
				   "--gpus %d is not a multiple of --sp %d: data-parallel replicas = gpus / sp must be whole; use --sp in {%s}",
				   job->gpus, job->sp, divisors(job->gpus, dv, sizeof dv));
	if (job->micro_batch <= 0)
		return config_fail(err, "--micro-batch must be a positive number of sequences, got %d", job->micro_batch);
	if (job->seq_len <= 0)
		return config_fail(err, "--seq-len must be a positive number of tokens, got %ld", job->seq_len);
	if (job->grad_accum <= 0)
		return config_fail(err, "--grad-accum must be a positive number of micro-steps, got %d", job->grad_accum);
	if (job->zero_stage < 0 || job->zero_stage > 3)
		return config_fail(err, "--zero must be 0, 1, 2 or 3, got %d", job->zero_stage);
	config_job_resolve_auto(job, m); /* auto bucket sizes from the model's hidden size */
	if (!config_job_check(job, err))
		return false;
	const char *why = config_attn_kernel_unusable(p, config_job_attention_kernel(job, p));
	if (why)
		return config_fail(err, "--attention-kernel %s %s; platform '%s' has %s (%s)",
				   config_attn_kernel_names[config_job_attention_kernel(job, p)], why, p->name,
				   p->gpu.name, config_gpu_arch_names[p->gpu.arch]);

	if (!workload_check_techniques(p, job, err))
		return false;

	int N = job->sp, B = job->micro_batch, P = N;
	const char *what = "the SP size";
	if (!config_job_usp(job) && (job->ulysses_degree || job->ring_degree))
		return config_fail(err,
				   "--ulysses-degree and --ring-degree apply to USP only; use --strategy usp or basp:inner=usp (--cp-comm-type a2a+p2p), or drop them");
	if (job->strategy == CONFIG_STRATEGY_BASP) {
		if (B > N)
			return config_fail(err,
					   "BASP with micro-batch %d larger than the SP size %d has no group to give each sequence (it falls back to data parallelism); use --micro-batch <= %d or a larger --sp",
					   B, N, N);
		if (N % B != 0) {
			if (job->basp_inner != CONFIG_STRATEGY_ULYSSES)
				return config_fail(err,
						   "basp:inner=ring|usp needs the micro-batch to divide the SP size (--basp-uneven applies to basp:inner=ulysses only): %d %% %d != 0; use --micro-batch in {%s}",
						   N, B, divisors(N, dv, sizeof dv));
			if (job->basp_uneven == CONFIG_BASP_UNEVEN_UNEQUAL)
				return check_unequal(m, job, err);
			if (job->basp_uneven == CONFIG_BASP_UNEVEN_EXTRA_STEP)
				return check_extra_step(m, p, job, err);
			return config_fail(err,
					   "BASP needs the micro-batch to divide the SP size: %d %% %d != 0; use --micro-batch in {%s}, or --basp-uneven unequal (groups of %d and %d GPUs) or --basp-uneven extra-step (the remaining sequences in another micro-step)",
					   N, B, divisors(N, dv, sizeof dv), N / B, N / B + 1);
		}
		P = N / B;
		what = "the BASP group size K = sp / micro-batch";
	}
	if (config_job_ring(job)) {
		/* Ring attention: every rank keeps every head, so heads never limit R; the
		 * sequence splits into R chunks (naive) or 2R (zigzag). USP: U x R = P, the
		 * heads split U ways, each ring chunk U ways. */
		int U = 1;
		if (config_job_usp(job)) {
			if (!resolve_usp(m, p, job, P, err))
				return false;
			U = job->ulysses_degree;
		}
		const bool ag = config_job_all_gather(job);
		if (job->a2a != CONFIG_A2A_DIRECT && U == 1)
			return config_fail(err,
					   "--a2a %s does not apply to ring attention (cp_comm_type %s: it has no SP all-to-all, only %s); drop --a2a or use --strategy ulysses|basp|usp with a Ulysses degree above 1 (cp_comm_type a2a or a2a+p2p)",
					   config_a2a_names[job->a2a], config_cp_comm_names[job->cp_comm],
					   ag ? "all-gathers and reduce-scatters" : "send/recv");
		/* TransformerEngine's AttnFuncWithCPAndKVAllGather runs the dual-chunk (zigzag)
		 * split only */
		if (ag && job->cp_split != CONFIG_CP_SPLIT_ZIGZAG)
			return config_fail(err,
					   "ring:comm=all_gather runs the zigzag split only (TransformerEngine's all-gather context parallelism); drop split=naive (cp_split) or use comm=p2p");
		long chunks = (long)P * (job->cp_split == CONFIG_CP_SPLIT_ZIGZAG ? 2 : 1);
		if (job->seq_len % chunks != 0)
			return config_fail(err,
					   "--seq-len %ld does not split into the %ld chunks of %s ring attention over %d rank%s%s; use a multiple of %ld",
					   job->seq_len, chunks, config_cp_split_names[job->cp_split], P / U, P / U == 1 ? "" : "s",
					   U > 1 ? " with Ulysses inside each" : "", chunks);
		return true;
	}
	if (!check_heads(m, P, what, err))
		return false;
	long shards = job->strategy == CONFIG_STRATEGY_BASP ? P : N;
	if (job->seq_len % shards != 0)
		return config_fail(err,
				   "--seq-len %ld is not divisible by the %ld sequence shards (each GPU holds seq_len / %ld tokens of a sequence); use a multiple of %ld",
				   job->seq_len, shards, shards, shards);
	return true;
}

bool workload_layout_make(const config_model *m, const config_job *job, workload_layout *l, config_error *err)
{
	int W = job->gpus, N = job->sp, B = job->micro_batch;
	long tokens; /* B x S: tokens of one SP domain per micro-step */
	if (W <= 0 || N <= 0 || W % N != 0 || B <= 0 || job->seq_len <= 0 ||
	    (job->strategy == CONFIG_STRATEGY_BASP && N / B < 1) || !util_mul_long(B, job->seq_len, &tokens))
		return config_fail(err, "internal: layout needs a checked job (gpus %d, sp %d, micro-batch %d, seq %ld)", W,
				   N, B, job->seq_len);
	*l = (workload_layout){.world = W, .sp = N};
	if (job->strategy == CONFIG_STRATEGY_BASP) {
		/* B groups of K = N/B contiguous ranks per SP domain; group i takes sequence i. */
		l->group_size = N / B;
		l->seqs_per_group = 1;
		l->tokens_per_rank = job->seq_len / l->group_size;
	} else {
		/* Every rank of the domain holds S/N tokens of each of the B sequences. */
		l->group_size = N;
		l->seqs_per_group = B;
		l->tokens_per_rank = tokens / N;
	}
	l->n_groups = W / l->group_size;
	int P = l->group_size;
	if (config_job_ring(job)) {
		/* Ring attention: each rank keeps all heads of its tokens; K and V travel the ring.
		 * USP: all-to-alls over groups of U contiguous ranks (the layout's group), then
		 * rings of R ranks U apart. */
		int U = config_job_usp(job) ? job->ulysses_degree : 1;
		if (U < 1 || P % U != 0)
			return config_fail(err, "internal: USP layout needs a checked job (U %d, group %d)", U, P);
		l->ring = P / U;
		l->ring_stride = U;
		l->group_size = U;
		l->n_groups = W / U;
		if (U == 1) {
			l->group_size = P; /* plain ring: the ring is the group */
			l->n_groups = W / P;
			l->ring_stride = 1;
		}
		l->heads_per_rank = m->heads / U;
		l->kv_heads_per_rank = m->kv_heads >= U ? m->kv_heads / U : 1;
		l->kv_replicated = m->kv_heads >= U ? m->kv_heads : U;
		return true;
	}
	l->heads_per_rank = m->heads / P;
	/* kv heads: split when g >= P, else replicated so each rank gets one (docs/sources.md [DS-ulysses-hf]). */
	l->kv_heads_per_rank = m->kv_heads >= P ? m->kv_heads / P : 1;
	l->kv_replicated = m->kv_heads >= P ? m->kv_heads : P;
	return true;
}

int workload_layout_seq_ranks(const workload_layout *l)
{
	return l->ring && l->ring_stride > 1 ? l->group_size * l->ring : l->group_size;
}
