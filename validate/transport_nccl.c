/* The NCCL transport (transport.h): one CUDA device per rank, NCCL communicators and
 * collectives, cuBLAS GEMMs, the kernels of kernels/.
 *
 * Launch: one process driving every GPU of a node (ncclCommInitRankConfig for each in one
 * group; collectives of all local ranks inside one ncclGroupStart/End, as nccl-tests -g
 * does), or one process per GPU under MPI (ncclCommInitRankConfig with a unique id
 * broadcast over MPI).
 *
 * Robustness: every CUDA/NCCL/cuBLAS call goes through a CHECK macro that prints the
 * global rank, the host and file:line. Communicators are non-blocking
 * (ncclConfig_t.blocking = 0, NCCL's "Fault Tolerance" user guide section): init, split,
 * the group end that first connects, finalize and destroy all return at once with
 * ncclInProgress, and nccl_wait() polls ncclCommGetAsyncError against one deadline
 * (--timeout), then ncclCommAbort. sync() polls the stream the same way (the pattern of
 * nccl-tests' testStreamSynchronize). Every message names the rank, the host and the
 * operation that failed or stuck.
 *
 * No GPU (cudaErrorNoDevice, or zero devices) is the only case reported as "no device"
 * (exit 77); any other CUDA initialisation error — a driver older than the runtime, a
 * broken installation — is a failure with CUDA's own message. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "validate.h"

#if VALIDATE_HAVE_NCCL

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>

#if defined(KERNELS_HAVE_CUDNN) && KERNELS_HAVE_CUDNN
#define HAVE_CUDNN 1
#else
#define HAVE_CUDNN 0
#endif

typedef struct gpu_rank {
	int device;
	cudaStream_t stream;
	cublasHandle_t cublas;
	cudaEvent_t marks[VALIDATE_MAX_MARKS];
	bool ready;
	kernels_cudnn *cudnn; /* NULL: attention runs the WMMA fallback */
	void *flush;          /* cache flush buffer, 2 x L2 bytes */
	size_t l2_bytes;
	char pci[32];         /* bus id, to find the device in NVML */
} gpu_rank;

typedef struct nccl_impl {
	gpu_rank *r;          /* per local rank */
	validate_comm **live; /* every communicator created and not yet freed, for abort */
	int n_live, cap_live;
	bool aborted;
} nccl_impl;

static int report(validate_transport *t, int local, const char *file, int line, const char *call, const char *msg,
		  int rc)
{
	fprintf(stderr, "[rank %d on %s] %s:%d: %s failed: %s\n", t->first_rank + local, t->host, file, line, call, msg);
	return rc;
}

#define CUDA_CHECK(t, local, call)                                                                               \
	do {                                                                                                     \
		cudaError_t e_ = (call);                                                                         \
		if (e_ != cudaSuccess)                                                                           \
			return report(t, local, __FILE__, __LINE__, #call, cudaGetErrorString(e_), VALIDATE_EDEVICE); \
	} while (0)
#define NCCL_CHECK(t, local, call)                                                                               \
	do {                                                                                                     \
		ncclResult_t r_ = (call);                                                                        \
		if (r_ != ncclSuccess && r_ != ncclInProgress)                                                   \
			return report(t, local, __FILE__, __LINE__, #call, ncclGetErrorString(r_), VALIDATE_ECOMM); \
	} while (0)
#define CUBLAS_CHECK(t, local, call)                                                                             \
	do {                                                                                                     \
		cublasStatus_t s_ = (call);                                                                      \
		if (s_ != CUBLAS_STATUS_SUCCESS)                                                                 \
			return report(t, local, __FILE__, __LINE__, #call, cublasGetStatusString(s_),           \
				      VALIDATE_EDEVICE);                                                         \
	} while (0)
/* The launchers of kernels/ return a cudaError_t as int. */
#define KERNEL_CHECK(t, local, call) CUDA_CHECK(t, local, (cudaError_t)(call))

static nccl_impl *impl_of(validate_transport *t) { return t->impl; }

/* Every call on a local rank first makes its device current and refuses to run on
 * aborted communicators. */
#define USE(t, local)                                                                                            \
	do {                                                                                                     \
		if (impl_of(t)->aborted)                                                                         \
			return report(t, local, __FILE__, __LINE__, "use", "communicators were aborted", VALIDATE_ECOMM); \
		CUDA_CHECK(t, local, cudaSetDevice(impl_of(t)->r[local].device));                                \
	} while (0)

static ncclComm_t nccl_of(const validate_comm *c) { return (ncclComm_t)c->impl; }

static double now(void) { return validate_now(); }

/* Waits until every non-NULL communicator of nc[0..n) has left ncclInProgress (a
 * non-blocking init, split, connect or finalize), polling ncclCommGetAsyncError against
 * one deadline of t->timeout_s. On an error or past the deadline the first `owned`
 * communicators (new ones the transport does not track yet) and every tracked one are
 * aborted (ncclCommAbort), each exactly once, and the rank and operation named. */
static void abort_all(validate_transport *t);
static int nccl_wait(validate_transport *t, ncclComm_t *nc, int n, int owned, const char *what)
{
	const double start = now();
	const struct timespec nap = {0, 50000}; /* 50 us */
	validate_step_begin("rank %d: %s", t->first_rank, what);
	for (;;) {
		int pending = 0;
		for (int i = 0; i < n; i++) {
			if (!nc[i])
				continue;
			ncclResult_t ar = ncclSuccess;
			ncclResult_t r = ncclCommGetAsyncError(nc[i], &ar);
			if (r != ncclSuccess || (ar != ncclSuccess && ar != ncclInProgress)) {
				report(t, i, __FILE__, __LINE__, what, ncclGetErrorString(r != ncclSuccess ? r : ar),
				       VALIDATE_ECOMM);
				goto fail;
			}
			pending += ar == ncclInProgress;
		}
		if (!pending)
			return VALIDATE_OK;
		if (t->timeout_s > 0 && now() - start > t->timeout_s) {
			char msg[160];
			snprintf(msg, sizeof msg, "still in progress after %.0f s (--timeout): a peer is missing or hung; aborting",
				 t->timeout_s);
			report(t, 0, __FILE__, __LINE__, what, msg, VALIDATE_ETIMEOUT);
			for (int i = 0; i < owned; i++)
				if (nc[i])
					ncclCommAbort(nc[i]);
			abort_all(t);
			return VALIDATE_ETIMEOUT;
		}
		nanosleep(&nap, NULL);
	}
fail:
	for (int i = 0; i < owned; i++)
		if (nc[i])
			ncclCommAbort(nc[i]);
	abort_all(t);
	return VALIDATE_ECOMM;
}

/* Communicator settings: non-blocking, so that nothing NCCL does can wait forever. */
static ncclConfig_t comm_config(void)
{
	ncclConfig_t c = NCCL_CONFIG_INITIALIZER;
	c.blocking = 0;
	return c;
}

/* Finalizes nc[0..n) (non-NULL ones, untracked), all issued before any is waited for:
 * with several devices in one process a communicator's finalize can need its peers'
 * (NCCL user guide, "Communicator destruction"); polled against the deadline, then
 * destroyed; what does not finish in time is aborted. */
static void comm_close(validate_transport *t, ncclComm_t *nc, int n)
{
	for (int i = 0; i < n; i++) {
		if (!nc[i])
			continue;
		ncclResult_t r = ncclCommFinalize(nc[i]);
		if (r != ncclSuccess && r != ncclInProgress) {
			report(t, i, __FILE__, __LINE__, "ncclCommFinalize", ncclGetErrorString(r), VALIDATE_ECOMM);
			for (int j = 0; j < n; j++)
				if (nc[j])
					ncclCommAbort(nc[j]);
			abort_all(t);
			return;
		}
	}
	if (nccl_wait(t, nc, n, n, "ncclCommFinalize") != VALIDATE_OK)
		return; /* aborted */
	for (int i = 0; i < n; i++)
		if (nc[i])
			ncclCommDestroy(nc[i]);
}

/* ------------------------------------------------------------------ memory --- */
static int g_alloc(validate_transport *t, int local, size_t bytes, void **out)
{
	USE(t, local);
	CUDA_CHECK(t, local, cudaMalloc(out, bytes ? bytes : 1));
	return VALIDATE_OK;
}

static void g_release(validate_transport *t, int local, void *p)
{
	if (!p)
		return;
	if (cudaSetDevice(impl_of(t)->r[local].device) == cudaSuccess)
		cudaFree(p);
}

static int g_mem_available(validate_transport *t, int local, size_t *bytes)
{
	USE(t, local);
	size_t free_b, total;
	CUDA_CHECK(t, local, cudaMemGetInfo(&free_b, &total));
	*bytes = free_b;
	return VALIDATE_OK;
}

static int g_sync(validate_transport *t, int local);

static int g_upload(validate_transport *t, int local, void *dst, const void *src, size_t bytes)
{
	USE(t, local);
	CUDA_CHECK(t, local, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, impl_of(t)->r[local].stream));
	return g_sync(t, local); /* the host buffer may be reused at once */
}

static int g_download(validate_transport *t, int local, void *dst, const void *src, size_t bytes)
{
	USE(t, local);
	CUDA_CHECK(t, local, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, impl_of(t)->r[local].stream));
	return g_sync(t, local);
}

static int g_zero(validate_transport *t, int local, void *dst, size_t bytes)
{
	USE(t, local);
	CUDA_CHECK(t, local, cudaMemsetAsync(dst, 0, bytes, impl_of(t)->r[local].stream));
	return VALIDATE_OK;
}

/* ----------------------------------------------------------------- kernels --- */
static int g_gemm(validate_transport *t, int local, const kernels_gemm *g, const void *a, const void *b, void *c)
{
	USE(t, local);
	CUBLAS_CHECK(t, local, (cublasStatus_t)kernels_cuda_gemm(impl_of(t)->r[local].cublas, g, a, b, c));
	return VALIDATE_OK;
}

static int g_permute(validate_transport *t, int local, const kernels_permute *p, const void *src, void *dst)
{
	USE(t, local);
	KERNEL_CHECK(t, local, kernels_cuda_permute(p, src, dst, impl_of(t)->r[local].stream));
	return VALIDATE_OK;
}

/* Attention: cuDNN's fused flash attention where this build has it and cuDNN has an
 * engine for the shape; otherwise attention.cu's WMMA kernel, said once per shape on
 * stderr and in attn_kernel (so the report and calibration name what was measured). */
static bool use_cudnn(validate_transport *t, int local, const kernels_attn_shape *s, int bwd)
{
#if HAVE_CUDNN
	gpu_rank *r = &impl_of(t)->r[local];
	if (!r->cudnn)
		return false;
	if (kernels_cudnn_supported(r->cudnn, s, bwd))
		return true;
	static kernels_attn_shape said[16];
	static int n_said;
	for (int i = 0; i < n_said; i++)
		if (!memcmp(&said[i], s, sizeof *s))
			return false;
	if (n_said < 16)
		said[n_said++] = *s;
	fprintf(stderr, "[rank %d on %s] cuDNN has no fused attention %s for %d x %d tokens, %d/%d heads, d %d (%s); "
			"measuring the WMMA fallback kernel instead\n",
		t->first_rank + local, t->host, bwd ? "backward" : "forward", s->nseq, s->seq, s->heads, s->kv_heads,
		s->head_dim, kernels_cudnn_error(r->cudnn));
	return false;
#else
	(void)t;
	(void)local;
	(void)s;
	(void)bwd;
	return false;
#endif
}

#define CUDNN_CHECK(t, local, call)                                                                              \
	do {                                                                                                     \
		int s_ = (call);                                                                                 \
		if (s_ != 0)                                                                                     \
			return report(t, local, __FILE__, __LINE__, #call, kernels_cudnn_error(impl_of(t)->r[local].cudnn), \
				      VALIDATE_EDEVICE);                                                         \
	} while (0)

static int g_attn_fwd(validate_transport *t, int local, const kernels_attn_shape *s, const void *q, const void *k,
		      const void *v, void *o, float *lse)
{
	USE(t, local);
	if (use_cudnn(t, local, s, 0)) {
		CUDNN_CHECK(t, local, kernels_cudnn_attn_fwd(impl_of(t)->r[local].cudnn, s, q, k, v, o, lse));
		return VALIDATE_OK;
	}
	KERNEL_CHECK(t, local, kernels_cuda_attn_fwd(s, q, k, v, o, lse, impl_of(t)->r[local].stream));
	return VALIDATE_OK;
}

static int g_attn_bwd(validate_transport *t, int local, const kernels_attn_shape *s, const void *q, const void *k,
		      const void *v, const void *o, const void *dout, const float *lse, void *dq, void *dk, void *dv,
		      void *workspace)
{
	USE(t, local);
	if (use_cudnn(t, local, s, 1)) {
		CUDNN_CHECK(t, local,
			    kernels_cudnn_attn_bwd(impl_of(t)->r[local].cudnn, s, q, k, v, o, dout, lse, dq, dk, dv));
		return VALIDATE_OK;
	}
	KERNEL_CHECK(t, local, kernels_cuda_attn_bwd(s, q, k, v, o, dout, lse, dq, dk, dv, workspace,
						     impl_of(t)->r[local].stream));
	return VALIDATE_OK;
}

static const char *g_attn_kernel(validate_transport *t, int local, const kernels_attn_shape *s, int bwd)
{
	return use_cudnn(t, local, s, bwd) ? "cudnn" : "wmma-fallback";
}

const char *validate_attn_kernel_built(void) { return HAVE_CUDNN ? "cudnn" : "wmma-fallback"; }

/* ------------------------------------------------------ measurement hygiene --- */
/* Writing twice the L2's size evicts whatever the previous call left there (the L2 is
 * physically indexed and write-allocate: NVIDIA H100/H200 architecture whitepaper, "L2
 * cache"). */
static int g_flush_cache(validate_transport *t, int local, size_t operand_bytes)
{
	USE(t, local);
	gpu_rank *r = &impl_of(t)->r[local];
	if (!r->l2_bytes || operand_bytes >= r->l2_bytes)
		return VALIDATE_OK;
	if (!r->flush)
		CUDA_CHECK(t, local, cudaMalloc(&r->flush, 2 * r->l2_bytes));
	static unsigned char value;
	CUDA_CHECK(t, local, cudaMemsetAsync(r->flush, ++value, 2 * r->l2_bytes, r->stream));
	return VALIDATE_OK;
}

/* NVML, loaded at run time from the driver (libnvidia-ml.so.1 ships with it; the toolkit
 * has only a link stub), so the build needs no NVML header and a machine without it
 * records "unknown" instead of failing. Declarations as in nvml.h (NVML API reference:
 * nvmlDeviceGetClockInfo, nvmlDeviceGetTemperature); enum values NVML_CLOCK_SM = 1,
 * NVML_CLOCK_MEM = 2, NVML_TEMPERATURE_GPU = 0. */
typedef struct nvml_api {
	bool tried, ok;
	int (*init)(void);
	int (*by_pci)(const char *, void **);
	int (*clock)(void *, int, unsigned *);
	int (*max_clock)(void *, int, unsigned *);
	int (*temp)(void *, int, unsigned *);
} nvml_api;

static nvml_api *nvml(void)
{
	static nvml_api n;
	if (n.tried)
		return n.ok ? &n : NULL;
	n.tried = true;
	void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return NULL;
	*(void **)&n.init = dlsym(h, "nvmlInit_v2");
	*(void **)&n.by_pci = dlsym(h, "nvmlDeviceGetHandleByPciBusId_v2");
	*(void **)&n.clock = dlsym(h, "nvmlDeviceGetClockInfo");
	*(void **)&n.max_clock = dlsym(h, "nvmlDeviceGetMaxClockInfo");
	*(void **)&n.temp = dlsym(h, "nvmlDeviceGetTemperature");
	n.ok = n.init && n.by_pci && n.clock && n.max_clock && n.temp && n.init() == 0;
	return n.ok ? &n : NULL;
}

static int g_probe(validate_transport *t, int local, validate_gpu_state *out)
{
	USE(t, local);
	gpu_rank *r = &impl_of(t)->r[local];
	memset(out, 0, sizeof *out);
	struct cudaDeviceProp prop;
	CUDA_CHECK(t, local, cudaGetDeviceProperties(&prop, r->device));
	snprintf(out->name, sizeof out->name, "%s", prop.name);
	out->l2_bytes = r->l2_bytes;
	nvml_api *n = nvml();
	void *dev = NULL;
	if (n && n->by_pci(r->pci, &dev) == 0) {
		n->clock(dev, 1, &out->sm_mhz);
		n->clock(dev, 2, &out->mem_mhz);
		n->max_clock(dev, 1, &out->max_sm_mhz);
		n->temp(dev, 0, &out->temp_c);
	}
	return VALIDATE_OK;
}

/* ----------------------------------------------------------- communicators --- */
static int track(validate_transport *t, validate_comm *c)
{
	nccl_impl *g = impl_of(t);
	if (g->n_live == g->cap_live) {
		int cap = g->cap_live ? 2 * g->cap_live : 16;
		validate_comm **n = realloc(g->live, (size_t)cap * sizeof *n);
		if (!n)
			return VALIDATE_ENOMEM;
		g->live = n;
		g->cap_live = cap;
	}
	g->live[g->n_live++] = c;
	return VALIDATE_OK;
}

static void untrack(validate_transport *t, validate_comm *c)
{
	nccl_impl *g = impl_of(t);
	for (int i = 0; i < g->n_live; i++)
		if (g->live[i] == c) {
			g->live[i] = g->live[--g->n_live];
			return;
		}
}

static validate_comm *wrap(ncclComm_t nc, int color)
{
	validate_comm *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	int size = 0, rank = 0;
	ncclCommCount(nc, &size);
	ncclCommUserRank(nc, &rank);
	c->size = size;
	c->rank = rank;
	c->color = color;
	c->impl = nc;
	return c;
}

static void g_comm_free(validate_transport *t, validate_comm **comms)
{
	ncclComm_t *nc = calloc((size_t)t->n_local, sizeof *nc);
	for (int i = 0; i < t->n_local; i++) {
		if (!comms[i])
			continue;
		untrack(t, comms[i]);
		if (nc)
			nc[i] = nccl_of(comms[i]);
		else if (!impl_of(t)->aborted)
			ncclCommAbort(nccl_of(comms[i])); /* no memory to close it properly */
		free(comms[i]);
		comms[i] = NULL;
	}
	if (nc && !impl_of(t)->aborted)
		comm_close(t, nc, t->n_local);
	free(nc);
}

static int g_comm_split(validate_transport *t, validate_comm *const *parent, const int *color, validate_comm **out)
{
	ncclComm_t *nc = calloc((size_t)t->n_local, sizeof *nc);
	if (!nc)
		return report(t, 0, __FILE__, __LINE__, "calloc", "out of host memory", VALIDATE_ENOMEM);
	for (int i = 0; i < t->n_local; i++)
		out[i] = NULL;
	int rc = VALIDATE_OK;
	/* Several devices from one thread: the splits must sit in one group. Non-blocking:
	 * the group returns at once and nccl_wait polls the new communicators. */
	ncclConfig_t cfg = comm_config();
	ncclResult_t r = ncclGroupStart();
	for (int i = 0; i < t->n_local && r == ncclSuccess; i++) {
		if (cudaSetDevice(impl_of(t)->r[i].device) != cudaSuccess)
			break;
		r = ncclCommSplit(nccl_of(parent[i]), color[i] < 0 ? NCCL_SPLIT_NOCOLOR : color[i], t->first_rank + i,
				  &nc[i], &cfg);
		if (r == ncclInProgress)
			r = ncclSuccess;
	}
	ncclResult_t r2 = ncclGroupEnd();
	if (r != ncclSuccess || (r2 != ncclSuccess && r2 != ncclInProgress)) {
		rc = report(t, 0, __FILE__, __LINE__, "ncclCommSplit", ncclGetErrorString(r != ncclSuccess ? r : r2),
			    VALIDATE_ECOMM);
		goto out;
	}
	/* The parents too: a split is an operation on them. */
	{
		ncclComm_t *both = calloc(2 * (size_t)t->n_local, sizeof *both);
		if (!both) {
			rc = report(t, 0, __FILE__, __LINE__, "calloc", "out of host memory", VALIDATE_ENOMEM);
			goto out;
		}
		for (int i = 0; i < t->n_local; i++) {
			both[i] = nc[i];
			both[t->n_local + i] = nccl_of(parent[i]);
		}
		rc = nccl_wait(t, both, 2 * t->n_local, t->n_local, "ncclCommSplit");
		free(both);
		if (rc) {
			for (int i = 0; i < t->n_local; i++)
				nc[i] = NULL; /* aborted by nccl_wait */
			goto out;
		}
	}
	for (int i = 0; i < t->n_local; i++) {
		if (color[i] < 0 || !nc[i])
			continue;
		if (!(out[i] = wrap(nc[i], color[i])) || track(t, out[i])) {
			free(out[i]);
			out[i] = NULL;
			rc = report(t, i, __FILE__, __LINE__, "calloc", "out of host memory", VALIDATE_ENOMEM);
			goto out;
		}
		nc[i] = NULL;
	}
out:
	if (rc) {
		g_comm_free(t, out);
		for (int i = 0; i < t->n_local; i++)
			if (nc[i])
				ncclCommAbort(nc[i]);
	}
	free(nc);
	return rc;
}

static ncclDataType_t nccl_type(validate_dtype dt) { return dt == VALIDATE_BF16 ? ncclBfloat16 : ncclFloat32; }

static ncclResult_t issue(validate_coll c, const void *send, void *recv, size_t count, ncclDataType_t type,
			  const validate_comm *comm, cudaStream_t st)
{
	ncclComm_t nc = nccl_of(comm);
	switch (c) {
	case VALIDATE_ALLTOALL:
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
		return ncclAlltoAll(send, recv, count, type, nc, st);
#else
	{
		/* Older NCCL: the all-to-all as nccl-tests builds it, grouped send/recv. */
		const size_t bytes = count * (type == ncclBfloat16 ? 2 : 4);
		ncclResult_t r = ncclSuccess;
		for (int q = 0; q < comm->size && r == ncclSuccess; q++) {
			r = ncclSend((const char *)send + (size_t)q * bytes, count, type, q, nc, st);
			if (r == ncclSuccess)
				r = ncclRecv((char *)recv + (size_t)q * bytes, count, type, q, nc, st);
		}
		return r;
	}
#endif
	case VALIDATE_ALLGATHER: return ncclAllGather(send, recv, count, type, nc, st);
	case VALIDATE_REDUCESCATTER: return ncclReduceScatter(send, recv, count, type, ncclSum, nc, st);
	case VALIDATE_ALLREDUCE: return ncclAllReduce(send, recv, count, type, ncclSum, nc, st);
	default: return ncclInvalidArgument;
	}
}

static int g_coll(validate_transport *t, validate_coll c, validate_comm *const *comms, const void *const *send,
		  void *const *recv, size_t count, validate_dtype dt)
{
	if (impl_of(t)->aborted)
		return report(t, 0, __FILE__, __LINE__, validate_coll_name(c), "communicators were aborted", VALIDATE_ECOMM);
	ncclResult_t r = ncclGroupStart(), r2;
	int failed = -1;
	for (int i = 0; i < t->n_local && r == ncclSuccess; i++) {
		if (!comms[i])
			continue;
		if (cudaSetDevice(impl_of(t)->r[i].device) != cudaSuccess) {
			r = ncclUnhandledCudaError;
			failed = i;
			break;
		}
		r = issue(c, send[i], recv[i], count, nccl_type(dt), comms[i], impl_of(t)->r[i].stream);
		if (r != ncclSuccess)
			failed = i;
	}
	r2 = ncclGroupEnd();
	if (r != ncclSuccess || (r2 != ncclSuccess && r2 != ncclInProgress))
		return report(t, failed < 0 ? 0 : failed, __FILE__, __LINE__, validate_coll_name(c),
			      ncclGetErrorString(r != ncclSuccess ? r : r2), VALIDATE_ECOMM);
	if (r2 == ncclInProgress) {
		/* Non-blocking communicators: the group's launch (the first one also connects the
		 * peers) is not done until every communicator says so. */
		ncclComm_t *nc = calloc((size_t)t->n_local, sizeof *nc);
		if (!nc)
			return report(t, 0, __FILE__, __LINE__, "calloc", "out of host memory", VALIDATE_ENOMEM);
		for (int i = 0; i < t->n_local; i++)
			nc[i] = comms[i] ? nccl_of(comms[i]) : NULL;
		char what[96];
		snprintf(what, sizeof what, "%s launch (ncclGroupEnd)", validate_coll_name(c));
		int rc = nccl_wait(t, nc, t->n_local, 0, what);
		free(nc);
		return rc;
	}
	return VALIDATE_OK;
}

/* ------------------------------------------------------------------ timing --- */
static int g_mark(validate_transport *t, int local, int slot)
{
	USE(t, local);
	if (slot < 0 || slot >= VALIDATE_MAX_MARKS)
		return report(t, local, __FILE__, __LINE__, "mark", "timer slot out of range", VALIDATE_EINVAL);
	CUDA_CHECK(t, local, cudaEventRecord(impl_of(t)->r[local].marks[slot], impl_of(t)->r[local].stream));
	return VALIDATE_OK;
}

static void abort_all(validate_transport *t)
{
	nccl_impl *g = impl_of(t);
	if (g->aborted)
		return;
	g->aborted = true;
	for (int i = 0; i < g->n_live; i++)
		ncclCommAbort(nccl_of(g->live[i]));
}

static int g_sync(validate_transport *t, int local)
{
	USE(t, local);
	nccl_impl *g = impl_of(t);
	const double start = now();
	const struct timespec nap = {0, 20000}; /* 20 us */
	for (;;) {
		cudaError_t e = cudaStreamQuery(g->r[local].stream);
		if (e == cudaSuccess)
			return VALIDATE_OK;
		if (e != cudaErrorNotReady)
			return report(t, local, __FILE__, __LINE__, "cudaStreamQuery", cudaGetErrorString(e),
				      VALIDATE_EDEVICE);
		for (int i = 0; i < g->n_live; i++) {
			ncclResult_t ar = ncclSuccess;
			if (ncclCommGetAsyncError(nccl_of(g->live[i]), &ar) == ncclSuccess && ar != ncclSuccess &&
			    ar != ncclInProgress) {
				report(t, local, __FILE__, __LINE__, "ncclCommGetAsyncError", ncclGetErrorString(ar),
				       VALIDATE_ECOMM);
				abort_all(t);
				return VALIDATE_ECOMM;
			}
		}
		if (t->timeout_s > 0 && now() - start > t->timeout_s) {
			char msg[160];
			snprintf(msg, sizeof msg, "work did not complete in %.0f s (a hung collective?): aborting every communicator",
				 t->timeout_s);
			report(t, local, __FILE__, __LINE__, "sync", msg, VALIDATE_ETIMEOUT);
			abort_all(t);
			return VALIDATE_ETIMEOUT;
		}
		nanosleep(&nap, NULL);
	}
}

static int g_elapsed(validate_transport *t, int local, int from, int to, double *seconds)
{
	USE(t, local);
	float ms = 0;
	CUDA_CHECK(t, local, cudaEventElapsedTime(&ms, impl_of(t)->r[local].marks[from], impl_of(t)->r[local].marks[to]));
	*seconds = 1e-3 * (double)ms;
	return VALIDATE_OK;
}

/* ------------------------------------------------------------ setup, teardown --- */
static void g_destroy(validate_transport *t)
{
	nccl_impl *g = impl_of(t);
	if (g) {
		if (t->world_comm)
			g_comm_free(t, t->world_comm);
		/* Communicators the caller left behind. */
		ncclComm_t *left = calloc((size_t)g->n_live + 1, sizeof *left);
		int n_left = 0;
		while (g->n_live > 0) {
			validate_comm *c = g->live[--g->n_live]; /* untracked before it is closed */
			if (left)
				left[n_left++] = nccl_of(c);
			else if (!g->aborted)
				ncclCommAbort(nccl_of(c));
			free(c);
		}
		if (left && !g->aborted)
			comm_close(t, left, n_left);
		free(left);
		free(g->live);
		for (int i = 0; g->r && i < t->n_local; i++) {
			gpu_rank *r = &g->r[i];
			if (!r->ready || cudaSetDevice(r->device) != cudaSuccess)
				continue;
			for (int s = 0; s < VALIDATE_MAX_MARKS; s++)
				cudaEventDestroy(r->marks[s]);
#if HAVE_CUDNN
			kernels_cudnn_destroy(r->cudnn);
#endif
			cudaFree(r->flush);
			cublasDestroy(r->cublas);
			cudaStreamDestroy(r->stream);
		}
		free(g->r);
		free(g);
	}
	free(t->world_comm);
	free(t->node_of);
	free(t);
}

static const validate_transport_ops nccl_ops = {
	.name = "nccl",
	.destroy = g_destroy,
	.alloc = g_alloc,
	.release = g_release,
	.mem_available = g_mem_available,
	.upload = g_upload,
	.download = g_download,
	.zero = g_zero,
	.gemm = g_gemm,
	.permute = g_permute,
	.attn_fwd = g_attn_fwd,
	.attn_bwd = g_attn_bwd,
	.comm_split = g_comm_split,
	.comm_free = g_comm_free,
	.coll = g_coll,
	.mark = g_mark,
	.sync = g_sync,
	.elapsed = g_elapsed,
	.flush_cache = g_flush_cache,
	.probe = g_probe,
	.attn_kernel = g_attn_kernel,
};

static int rank_setup(validate_transport *t, int local)
{
	gpu_rank *r = &impl_of(t)->r[local];
	CUDA_CHECK(t, local, cudaSetDevice(r->device));
	CUDA_CHECK(t, local, cudaStreamCreateWithFlags(&r->stream, cudaStreamNonBlocking));
	CUBLAS_CHECK(t, local, cublasCreate(&r->cublas));
	CUBLAS_CHECK(t, local, cublasSetStream(r->cublas, r->stream));
	for (int s = 0; s < VALIDATE_MAX_MARKS; s++)
		CUDA_CHECK(t, local, cudaEventCreate(&r->marks[s]));
	int l2 = 0;
	CUDA_CHECK(t, local, cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, r->device));
	r->l2_bytes = (size_t)l2;
	CUDA_CHECK(t, local, cudaDeviceGetPCIBusId(r->pci, (int)sizeof r->pci, r->device));
	r->ready = true;
#if HAVE_CUDNN
	int st = kernels_cudnn_create(&r->cudnn, r->stream);
	if (st != 0)
		return report(t, local, __FILE__, __LINE__, "cudnnCreate", "cuDNN could not start on this device",
			      VALIDATE_EDEVICE);
#endif
	return VALIDATE_OK;
}

bool validate_have_nccl(void) { return true; }

int validate_transport_nccl(validate_launch *launch, int gpus, double timeout_s, validate_transport **out)
{
	*out = NULL;
	validate_transport *t = calloc(1, sizeof *t);
	nccl_impl *g = calloc(1, sizeof *g);
	if (!t || !g) {
		free(t);
		free(g);
		return VALIDATE_ENOMEM;
	}
	t->ops = &nccl_ops;
	t->impl = g;
	t->launch = launch;
	t->timeout_s = timeout_s;
	if (gethostname(t->host, sizeof t->host - 1) != 0)
		snprintf(t->host, sizeof t->host, "localhost");
	int rc = VALIDATE_OK, ndev = 0;
	validate_step_begin("rank %d: CUDA initialisation", launch->proc);
	char why[256];
	const int probe = kernels_cuda_probe(&ndev, why, sizeof why);
	/* Only "there is no NVIDIA device" is a skip; any other error (a driver older than
	 * this runtime, a broken installation) is a failure that says what CUDA said. */
	const int no_dev = probe == KERNELS_PROBE_NO_DEVICE;
	if (probe != KERNELS_PROBE_OK)
		fprintf(stderr, "[rank %d on %s] %s:%d: %s\n", launch->proc, t->host, __FILE__, __LINE__, why);
	/* Under MPI every process must agree before any collective setup. */
	if ((rc = validate_agree(launch, no_dev ? VALIDATE_ENODEV : probe ? VALIDATE_EDEVICE : VALIDATE_OK)))
		goto fail;
	/* Host layout: every process's host name, nodes numbered by first appearance. */
	char(*hosts)[64] = calloc((size_t)launch->procs, sizeof *hosts);
	int *proc_node = calloc((size_t)launch->procs, sizeof *proc_node);
	if (!hosts || !proc_node) {
		free(hosts);
		free(proc_node);
		rc = VALIDATE_ENOMEM;
		goto fail;
	}
	if ((rc = launch->allgather(launch, t->host, hosts, sizeof *hosts))) {
		free(hosts);
		free(proc_node);
		goto fail;
	}
	int local_index = 0; /* this process's index among the processes on its host */
	for (int p = 0; p < launch->procs; p++) {
		proc_node[p] = -1;
		for (int q = 0; q < p && proc_node[p] < 0; q++)
			if (!strncmp(hosts[p], hosts[q], sizeof *hosts))
				proc_node[p] = proc_node[q];
		if (proc_node[p] < 0)
			proc_node[p] = t->nodes++;
		if (p < launch->proc && !strncmp(hosts[p], t->host, sizeof *hosts))
			local_index++;
	}
	if (launch->procs == 1) {
		t->n_local = gpus > 0 ? gpus : ndev;
		if (t->n_local > ndev) {
			fprintf(stderr, "[rank 0 on %s] %s:%d: %d GPUs asked for, %d visible\n", t->host, __FILE__, __LINE__,
				t->n_local, ndev);
			free(hosts);
			free(proc_node);
			rc = VALIDATE_EINVAL;
			goto fail;
		}
		t->world = t->n_local;
		t->first_rank = 0;
	} else {
		t->n_local = 1;
		t->world = launch->procs;
		t->first_rank = launch->proc;
	}
	t->node_of = calloc((size_t)t->world, sizeof *t->node_of);
	t->world_comm = calloc((size_t)t->n_local, sizeof *t->world_comm);
	g->r = calloc((size_t)t->n_local, sizeof *g->r);
	if (!t->node_of || !t->world_comm || !g->r) {
		free(hosts);
		free(proc_node);
		rc = VALIDATE_ENOMEM;
		goto fail;
	}
	for (int r = 0; r < t->world; r++)
		t->node_of[r] = launch->procs == 1 ? 0 : proc_node[r];
	free(hosts);
	free(proc_node);
	validate_step_begin("rank %d: CUDA streams and cuBLAS", t->first_rank);
	for (int i = 0; i < t->n_local && !rc; i++) {
		g->r[i].device = launch->procs == 1 ? i : local_index % ndev;
		rc = rank_setup(t, i);
	}
	ncclComm_t *nc = rc ? NULL : calloc((size_t)t->n_local, sizeof *nc);
	if (!rc && !nc)
		rc = VALIDATE_ENOMEM;
	/* One unique id (process 0's), then every local rank's init in one group,
	 * non-blocking, polled by nccl_wait against the deadline. */
	ncclUniqueId id;
	memset(&id, 0, sizeof id);
	ncclResult_t nr = ncclSuccess;
	validate_step_begin("rank %d: ncclGetUniqueId", t->first_rank);
	if (launch->proc == 0)
		nr = ncclGetUniqueId(&id);
	double bad = nr != ncclSuccess;
	if ((rc = validate_agree(launch, rc)) || (rc = launch->allreduce_max(launch, &bad, 1)) ||
	    (rc = launch->bcast(launch, &id, sizeof id, 0))) {
		free(nc);
		goto fail;
	}
	if (bad == 0) {
		ncclConfig_t cfg = comm_config();
		nr = ncclGroupStart();
		for (int i = 0; i < t->n_local && nr == ncclSuccess; i++) {
			if (cudaSetDevice(g->r[i].device) != cudaSuccess) {
				nr = ncclUnhandledCudaError;
				break;
			}
			nr = ncclCommInitRankConfig(&nc[i], t->world, id, t->first_rank + i, &cfg);
			if (nr == ncclInProgress)
				nr = ncclSuccess;
		}
		ncclResult_t nr2 = ncclGroupEnd();
		if (nr == ncclSuccess && nr2 != ncclInProgress)
			nr = nr2;
	}
	if (nr != ncclSuccess || bad != 0) {
		rc = report(t, 0, __FILE__, __LINE__, "NCCL communicator init",
			    bad != 0 ? "ncclGetUniqueId failed on process 0" : ncclGetErrorString(nr), VALIDATE_ECOMM);
		for (int i = 0; i < t->n_local; i++)
			if (nc[i])
				ncclCommAbort(nc[i]);
		free(nc);
		goto fail;
	}
	if ((rc = nccl_wait(t, nc, t->n_local, t->n_local, "ncclCommInitRankConfig (connecting every rank)"))) {
		free(nc);
		goto fail;
	}
	for (int i = 0; i < t->n_local; i++) {
		const bool wrapped = (t->world_comm[i] = wrap(nc[i], -1)) != NULL;
		if (!wrapped || track(t, t->world_comm[i])) {
			/* A wrapped one is destroyed with world_comm by g_destroy. */
			comm_close(t, nc + (wrapped ? i + 1 : i), t->n_local - (wrapped ? i + 1 : i));
			free(nc);
			rc = VALIDATE_ENOMEM;
			goto fail;
		}
	}
	free(nc);
	*out = t;
	return VALIDATE_OK;
fail:
	g_destroy(t);
	return rc;
}

#else /* !VALIDATE_HAVE_NCCL */

bool validate_have_nccl(void) { return false; }
const char *validate_attn_kernel_built(void) { return "none"; }

int validate_transport_nccl(validate_launch *launch, int gpus, double timeout_s, validate_transport **out)
{
	(void)launch;
	(void)gpus;
	(void)timeout_s;
	*out = NULL;
	fprintf(stderr, "spsim-validate: this build has no CUDA/NCCL (nvcc, cuBLAS or NCCL were not found at "
			"configure time); rebuild with -Dcuda=enabled on a machine that has them\n");
	return VALIDATE_ENODEV;
}

#endif
