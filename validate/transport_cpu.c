/* The CPU transport (transport.h): every rank in this process, host memory, the CPU
 * reference kernels, collectives as copies and in-order sums. Exists so the whole
 * orchestration — groups, layouts, packs, exchanges, attention — runs in the test suite
 * on machines without a GPU, deterministically. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "validate.h"

typedef struct cpu_impl {
	size_t mem_limit;
	size_t *in_use;                        /* per rank */
	double (*marks)[VALIDATE_MAX_MARKS];   /* per rank */
	bool virt;                             /* virtual clock (validate_transport_cpu_clock) */
	validate_cpu_clock clk;
	double *now;                           /* per rank, virtual seconds */
} cpu_impl;

/* Virtual clock: `work` FLOPs or bytes at the clock's rate for it. */
enum { RATE_FLOPS, RATE_HBM };
static void advance(validate_transport *t, int local, double work, int rate)
{
	cpu_impl *c = t->impl;
	if (c->virt)
		c->now[local] += work / (rate == RATE_FLOPS ? c->clk.flops : c->clk.hbm);
}

#define CPU_ALIGN 64

static int cpu_fail(validate_transport *t, int local, const char *file, int line, int rc, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));
static int cpu_fail(validate_transport *t, int local, const char *file, int line, int rc, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "[rank %d on %s] %s:%d: ", t->first_rank + local, t->host, file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return rc;
}
#define FAIL(t, local, rc, ...) cpu_fail(t, local, __FILE__, __LINE__, rc, __VA_ARGS__)

/* ------------------------------------------------------------------ memory --- */
static int cpu_alloc(validate_transport *t, int local, size_t bytes, void **out)
{
	cpu_impl *c = t->impl;
	if (c->mem_limit && c->in_use[local] + bytes > c->mem_limit)
		return FAIL(t, local, VALIDATE_ENOMEM, "allocating %zu bytes: over the %zu-byte limit", bytes,
			    c->mem_limit);
	size_t total = (bytes + 2 * CPU_ALIGN - 1) / CPU_ALIGN * CPU_ALIGN;
	unsigned char *p = aligned_alloc(CPU_ALIGN, total);
	if (!p)
		return FAIL(t, local, VALIDATE_ENOMEM, "allocating %zu bytes: out of host memory", bytes);
	memcpy(p, &bytes, sizeof bytes); /* the size, for release's accounting */
	c->in_use[local] += bytes;
	*out = p + CPU_ALIGN;
	return VALIDATE_OK;
}

static void cpu_release(validate_transport *t, int local, void *ptr)
{
	if (!ptr)
		return;
	cpu_impl *c = t->impl;
	unsigned char *p = (unsigned char *)ptr - CPU_ALIGN;
	size_t bytes;
	memcpy(&bytes, p, sizeof bytes);
	c->in_use[local] -= bytes;
	free(p);
}

static int cpu_mem_available(validate_transport *t, int local, size_t *bytes)
{
	cpu_impl *c = t->impl;
	*bytes = c->mem_limit ? c->mem_limit - c->in_use[local] : SIZE_MAX / 4;
	return VALIDATE_OK;
}

static int cpu_copy(validate_transport *t, int local, void *dst, const void *src, size_t bytes)
{
	(void)t;
	(void)local;
	memmove(dst, src, bytes);
	return VALIDATE_OK;
}

static int cpu_zero(validate_transport *t, int local, void *dst, size_t bytes)
{
	(void)t;
	(void)local;
	memset(dst, 0, bytes);
	return VALIDATE_OK;
}

/* ----------------------------------------------------------------- kernels --- */
static int cpu_gemm(validate_transport *t, int local, const kernels_gemm *g, const void *a, const void *b, void *c)
{
	const char *bad = kernels_gemm_check(g);
	if (bad)
		return FAIL(t, local, VALIDATE_EINVAL, "gemm: %s", bad);
	kernels_cpu_gemm(g, a, b, c);
	advance(t, local, kernels_gemm_flops(g), RATE_FLOPS);
	return VALIDATE_OK;
}

static int cpu_permute(validate_transport *t, int local, const kernels_permute *p, const void *src, void *dst)
{
	const char *bad = kernels_permute_check(p);
	if (bad)
		return FAIL(t, local, VALIDATE_EINVAL, "permute: %s", bad);
	kernels_cpu_permute(p, src, dst);
	advance(t, local, kernels_permute_bytes(p), RATE_HBM);
	return VALIDATE_OK;
}

static int cpu_attn_fwd(validate_transport *t, int local, const kernels_attn_shape *s, const void *q, const void *k,
			const void *v, void *o, float *lse)
{
	const char *bad = kernels_attn_shape_check(s);
	if (bad)
		return FAIL(t, local, VALIDATE_EINVAL, "attention: %s", bad);
	if (kernels_cpu_attn_fwd(s, q, k, v, o, lse))
		return FAIL(t, local, VALIDATE_ENOMEM, "attention forward: out of host memory");
	advance(t, local, kernels_attn_fwd_flops(s), RATE_FLOPS);
	return VALIDATE_OK;
}

static int cpu_attn_bwd(validate_transport *t, int local, const kernels_attn_shape *s, const void *q, const void *k,
			const void *v, const void *o, const void *dout, const float *lse, void *dq, void *dk, void *dv,
			void *workspace)
{
	(void)workspace;
	const char *bad = kernels_attn_shape_check(s);
	if (bad)
		return FAIL(t, local, VALIDATE_EINVAL, "attention: %s", bad);
	if (kernels_cpu_attn_bwd(s, q, k, v, o, dout, lse, dq, dk, dv))
		return FAIL(t, local, VALIDATE_ENOMEM, "attention backward: out of host memory");
	advance(t, local, kernels_attn_bwd_flops(s), RATE_FLOPS);
	return VALIDATE_OK;
}

/* ----------------------------------------------------------- communicators --- */
/* impl of a communicator: the local indices of its members, in rank order. */
static validate_comm *comm_new(int size, int rank, int color)
{
	validate_comm *c = calloc(1, sizeof *c);
	int *members = calloc((size_t)size, sizeof *members);
	if (!c || !members) {
		free(c);
		free(members);
		return NULL;
	}
	c->size = size;
	c->rank = rank;
	c->color = color;
	c->impl = members;
	return c;
}

static void cpu_comm_free(validate_transport *t, validate_comm **comms)
{
	for (int i = 0; i < t->n_local; i++)
		if (comms[i]) {
			free(comms[i]->impl);
			free(comms[i]);
			comms[i] = NULL;
		}
}

static int cpu_comm_split(validate_transport *t, validate_comm *const *parent, const int *color, validate_comm **out)
{
	for (int i = 0; i < t->n_local; i++)
		out[i] = NULL;
	for (int i = 0; i < t->n_local; i++) {
		if (color[i] < 0)
			continue;
		const int *pm = parent[i]->impl;
		int size = 0, rank = -1;
		for (int q = 0; q < parent[i]->size; q++)
			if (color[pm[q]] == color[i]) {
				if (pm[q] == i)
					rank = size;
				size++;
			}
		if (!(out[i] = comm_new(size, rank, color[i]))) {
			cpu_comm_free(t, out);
			return FAIL(t, i, VALIDATE_ENOMEM, "comm_split: out of host memory");
		}
		int *m = out[i]->impl, n = 0;
		for (int q = 0; q < parent[i]->size; q++)
			if (color[pm[q]] == color[i])
				m[n++] = pm[q];
	}
	return VALIDATE_OK;
}

static float load(const void *p, size_t e, validate_dtype dt)
{
	return dt == VALIDATE_BF16 ? kernels_bf16_to_f32(((const kernels_bf16 *)p)[e]) : ((const float *)p)[e];
}

static void store(void *p, size_t e, float v, validate_dtype dt)
{
	if (dt == VALIDATE_BF16)
		((kernels_bf16 *)p)[e] = kernels_f32_to_bf16(v);
	else
		((float *)p)[e] = v;
}

/* Virtual time of a collective (validate_cpu_clock): every member starts when the last
 * arrives, then pays the modelled cost. cb = bytes per peer (all-to-all), per rank
 * (all-gather, reduce-scatter) or of the buffer (all-reduce). */
static void coll_clock(validate_transport *t, validate_coll c, validate_comm *const *comms, size_t cb)
{
	cpu_impl *ci = t->impl;
	const validate_cpu_clock *k = &ci->clk;
	double *start = calloc((size_t)(t->n_local > 0 ? t->n_local : 1), sizeof *start);
	if (!start)
		return;
	for (int i = 0; i < t->n_local; i++) {
		if (!comms[i])
			continue;
		const int *m = comms[i]->impl;
		for (int q = 0; q < comms[i]->size; q++)
			start[i] = ci->now[m[q]] > start[i] ? ci->now[m[q]] : start[i];
	}
	for (int i = 0; i < t->n_local; i++) {
		if (!comms[i])
			continue;
		const int P = comms[i]->size, *m = comms[i]->impl;
		int r = 0;
		for (int q = 0; q < P; q++)
			r += t->node_of[m[q]] == t->node_of[i];
		bool spans = false;
		for (int q = 0; q < P; q++)
			spans |= t->node_of[m[q]] != t->node_of[m[0]];
		const double size = c == VALIDATE_ALLREDUCE ? (double)cb : (double)cb * P; /* nccl-tests' size */
		double cost = 0;
		if (c == VALIDATE_ALLTOALL) {
			const double per_peer = size / P, lat = P > r ? k->inter_latency : k->intra_latency;
			const double ti = (r - 1) * per_peer / k->intra_bw, te = (P - r) * per_peer / k->inter_bw;
			cost = P > 1 ? lat + (ti > te ? ti : te) : 0;
		} else {
			const int steps = c == VALIDATE_ALLREDUCE ? 2 * (P - 1) : P - 1;
			cost = steps * ((spans ? k->inter_latency : k->intra_latency) +
					size / P / (spans ? k->inter_bw : k->intra_bw));
		}
		ci->now[i] = start[i] + cost;
	}
	free(start);
}

static int cpu_coll(validate_transport *t, validate_coll c, validate_comm *const *comms, const void *const *send,
		    void *const *recv, size_t count, validate_dtype dt)
{
	const size_t es = validate_dtype_size(dt), cb = count * es;
	/* Results go to scratch first, then to recv: in-place calls stay correct. */
	void **tmp = calloc((size_t)t->n_local, sizeof *tmp);
	size_t *out_bytes = calloc((size_t)t->n_local, sizeof *out_bytes);
	int rc = VALIDATE_OK;
	if (!tmp || !out_bytes) {
		rc = FAIL(t, 0, VALIDATE_ENOMEM, "%s: out of host memory", validate_coll_name(c));
		goto out;
	}
	for (int i = 0; i < t->n_local; i++) {
		if (!comms[i])
			continue;
		const int P = comms[i]->size, r = comms[i]->rank;
		const int *m = comms[i]->impl;
		out_bytes[i] = (c == VALIDATE_ALLTOALL || c == VALIDATE_ALLGATHER) ? (size_t)P * cb : cb;
		if (!(tmp[i] = malloc(out_bytes[i] ? out_bytes[i] : 1))) {
			rc = FAIL(t, i, VALIDATE_ENOMEM, "%s: out of host memory", validate_coll_name(c));
			goto out;
		}
		unsigned char *o = tmp[i];
		switch (c) {
		case VALIDATE_ALLTOALL:
			for (int q = 0; q < P; q++)
				memcpy(o + (size_t)q * cb, (const unsigned char *)send[m[q]] + (size_t)r * cb, cb);
			break;
		case VALIDATE_ALLGATHER:
			for (int q = 0; q < P; q++)
				memcpy(o + (size_t)q * cb, send[m[q]], cb);
			break;
		case VALIDATE_REDUCESCATTER:
		case VALIDATE_ALLREDUCE: {
			const size_t first = c == VALIDATE_REDUCESCATTER ? (size_t)r * count : 0;
			for (size_t e = 0; e < count; e++) {
				float acc = 0;
				for (int q = 0; q < P; q++)
					acc += load(send[m[q]], first + e, dt);
				store(o, e, acc, dt);
			}
			break;
		}
		default:
			rc = FAIL(t, i, VALIDATE_EINVAL, "unknown collective %d", (int)c);
			goto out;
		}
	}
	for (int i = 0; i < t->n_local; i++)
		if (comms[i])
			memcpy(recv[i], tmp[i], out_bytes[i]);
	if (((cpu_impl *)t->impl)->virt)
		coll_clock(t, c, comms, count * es);
out:
	if (tmp)
		for (int i = 0; i < t->n_local; i++)
			free(tmp[i]);
	free(tmp);
	free(out_bytes);
	return rc;
}

/* ------------------------------------------------------------------ timing --- */
static int cpu_mark(validate_transport *t, int local, int slot)
{
	cpu_impl *c = t->impl;
	if (slot < 0 || slot >= VALIDATE_MAX_MARKS)
		return FAIL(t, local, VALIDATE_EINVAL, "timer slot %d out of range", slot);
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	c->marks[local][slot] = c->virt ? c->now[local] : (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
	return VALIDATE_OK;
}

static int cpu_sync(validate_transport *t, int local)
{
	(void)t;
	(void)local;
	return VALIDATE_OK; /* everything already ran */
}

static const char *cpu_attn_kernel(validate_transport *t, int local, const kernels_attn_shape *s, int bwd)
{
	(void)t;
	(void)local;
	(void)s;
	(void)bwd;
	return "cpu-reference";
}

static int cpu_elapsed(validate_transport *t, int local, int from, int to, double *seconds)
{
	cpu_impl *c = t->impl;
	if (from < 0 || to < 0 || from >= VALIDATE_MAX_MARKS || to >= VALIDATE_MAX_MARKS)
		return FAIL(t, local, VALIDATE_EINVAL, "timer slot out of range");
	*seconds = c->marks[local][to] - c->marks[local][from];
	return VALIDATE_OK;
}

static void cpu_destroy(validate_transport *t)
{
	cpu_impl *c = t->impl;
	if (t->world_comm)
		cpu_comm_free(t, t->world_comm);
	free(t->world_comm);
	if (c) {
		free(c->in_use);
		free(c->marks);
		free(c->now);
		free(c);
	}
	free(t->node_of);
	free(t);
}

static const validate_transport_ops cpu_ops = {
	.name = "cpu",
	.destroy = cpu_destroy,
	.alloc = cpu_alloc,
	.release = cpu_release,
	.mem_available = cpu_mem_available,
	.upload = cpu_copy,
	.download = cpu_copy,
	.zero = cpu_zero,
	.gemm = cpu_gemm,
	.permute = cpu_permute,
	.attn_fwd = cpu_attn_fwd,
	.attn_bwd = cpu_attn_bwd,
	.comm_split = cpu_comm_split,
	.comm_free = cpu_comm_free,
	.coll = cpu_coll,
	.mark = cpu_mark,
	.sync = cpu_sync,
	.elapsed = cpu_elapsed,
	.attn_kernel = cpu_attn_kernel,
};

int validate_transport_cpu(int world, int ranks_per_node, size_t mem_limit, validate_transport **out)
{
	*out = NULL;
	if (world < 1 || ranks_per_node < 1)
		return VALIDATE_EINVAL;
	validate_transport *t = calloc(1, sizeof *t);
	cpu_impl *c = calloc(1, sizeof *c);
	if (!t || !c) {
		free(t);
		free(c);
		return VALIDATE_ENOMEM;
	}
	t->ops = &cpu_ops;
	t->impl = c;
	t->world = world;
	t->n_local = world;
	t->first_rank = 0;
	t->nodes = (world + ranks_per_node - 1) / ranks_per_node;
	t->timeout_s = 0;
	t->launch = validate_launch_single();
	if (gethostname(t->host, sizeof t->host - 1) != 0)
		snprintf(t->host, sizeof t->host, "localhost");
	c->mem_limit = mem_limit;
	c->in_use = calloc((size_t)world, sizeof *c->in_use);
	c->marks = calloc((size_t)world, sizeof *c->marks);
	c->now = calloc((size_t)world, sizeof *c->now);
	t->node_of = calloc((size_t)world, sizeof *t->node_of);
	t->world_comm = calloc((size_t)world, sizeof *t->world_comm);
	if (!c->in_use || !c->marks || !c->now || !t->node_of || !t->world_comm) {
		cpu_destroy(t);
		return VALIDATE_ENOMEM;
	}
	for (int r = 0; r < world; r++) {
		t->node_of[r] = r / ranks_per_node;
		if (!(t->world_comm[r] = comm_new(world, r, -1))) {
			cpu_destroy(t);
			return VALIDATE_ENOMEM;
		}
		int *m = t->world_comm[r]->impl;
		for (int q = 0; q < world; q++)
			m[q] = q;
	}
	*out = t;
	return VALIDATE_OK;
}

int validate_transport_cpu_clock(validate_transport *t, const validate_cpu_clock *clock)
{
	if (t->ops != &cpu_ops || !(clock->intra_bw > 0) || !(clock->inter_bw > 0) || !(clock->flops > 0) ||
	    !(clock->hbm > 0) || clock->intra_latency < 0 || clock->inter_latency < 0)
		return VALIDATE_EINVAL;
	cpu_impl *c = t->impl;
	c->virt = true;
	c->clk = *clock;
	return VALIDATE_OK;
}
