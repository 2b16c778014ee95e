/* Job validation and rank-group formation (basp.md: "BASP: Batch-Aware Sequence
 * Parallelism", "DeepSpeed-Ulysses"). */
#include <stdio.h>

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

bool workload_check(const config_model *m, const config_platform *p, config_job *job, config_error *err)
{
	char dv[256];
	/* every number within the range table first: the products below cannot overflow */
	if (!config_model_check(m, err) || !config_platform_check(p, err))
		return false;
	int avail = config_platform_gpus(p);
	if (job->gpus < 0)
		return config_fail(err, "--gpus must be a positive number of GPUs, got %d", job->gpus);
	if (job->gpus == 0)
		job->gpus = avail;
	if (job->gpus > avail)
		return config_fail(err,
				   "--gpus %d is larger than platform '%s' (%d nodes x %d GPUs = %d); lower --gpus or raise --nodes",
				   job->gpus, p->name, p->nodes, p->gpus_per_node, avail);
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
	if (!config_job_check(job, err))
		return false;
	const char *why = config_attn_kernel_unusable(p, config_job_attention_kernel(job, p));
	if (why)
		return config_fail(err, "--attention-kernel %s %s; platform '%s' has %s (%s)",
				   config_attn_kernel_names[config_job_attention_kernel(job, p)], why, p->name,
				   p->gpu.name, config_gpu_arch_names[p->gpu.arch]);

	int N = job->sp, B = job->micro_batch, P = N;
	const char *what = "the SP size";
	if (job->strategy == CONFIG_STRATEGY_BASP) {
		if (B > N)
			return config_fail(err,
					   "BASP with micro-batch %d larger than the SP size %d has no group to give each sequence (it falls back to data parallelism); use --micro-batch <= %d or a larger --sp",
					   B, N, N);
		if (N % B != 0) {
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
	l->heads_per_rank = m->heads / P;
	/* kv heads: split when g >= P, else replicated so each rank gets one (docs/sources.md [DS-ulysses-hf]). */
	l->kv_heads_per_rank = m->kv_heads >= P ? m->kv_heads / P : 1;
	l->kv_replicated = m->kv_heads >= P ? m->kv_heads : P;
	return true;
}
