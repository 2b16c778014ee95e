/* validate transports: everything the orchestration needs from the machine it runs on —
 * memory, the layer kernels, communicators and collectives, timers — as one table of
 * function pointers (nccl-tests' testColl idea applied to the machine instead of the
 * collective). Two implementations:
 *   cpu:  every rank in this process, memory is host memory, kernels are the CPU
 *         references, collectives are memcpy/sums. Deterministic; the test suite's.
 *   nccl: one CUDA device per rank, NCCL collectives, cuBLAS GEMMs, the CUDA kernels;
 *         either one process driving every GPU of the node (like nccl-tests -g) or one
 *         process per GPU under MPI.
 *
 * SPMD over local ranks: a process drives n_local ranks (global ranks first_rank ..
 * first_rank + n_local - 1). Compute and memory calls name one local rank; a collective
 * call covers every local rank at once (one communicator, send and receive buffer per
 * local rank), which is what NCCL's group semantics require of a single-process
 * multi-GPU program. Calls are asynchronous with respect to the host where the machine
 * allows (nccl); sync() waits, and is where a hung collective is detected and aborted.
 *
 * Every function returns 0 or a negative VALIDATE_E* code and has already printed the
 * failure with rank, host and file:line. */
#ifndef SPSIM_VALIDATE_TRANSPORT_H
#define SPSIM_VALIDATE_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>

#include "kernels.h"

enum {
	VALIDATE_OK = 0,
	VALIDATE_EINVAL = -1,   /* a bad argument or an unsupported shape */
	VALIDATE_ENOMEM = -2,   /* host or device memory */
	VALIDATE_EDEVICE = -3,  /* CUDA or cuBLAS failure */
	VALIDATE_ECOMM = -4,    /* NCCL or MPI failure */
	VALIDATE_ETIMEOUT = -5, /* a collective did not complete in time and was aborted */
	VALIDATE_EIO = -6,      /* writing results */
	VALIDATE_ECHECK = -7,   /* a result differs from its reference */
	VALIDATE_ENODEV = -8,   /* no GPU, or a transport this build lacks */
};
const char *validate_strerror(int rc);

typedef enum validate_coll {
	VALIDATE_ALLTOALL,
	VALIDATE_ALLGATHER,
	VALIDATE_REDUCESCATTER,
	VALIDATE_ALLREDUCE,
	VALIDATE_COLL_COUNT
} validate_coll;
const char *validate_coll_name(validate_coll c);

typedef enum validate_dtype { VALIDATE_BF16, VALIDATE_F32 } validate_dtype;
static inline size_t validate_dtype_size(validate_dtype t) { return t == VALIDATE_BF16 ? 2 : 4; }

/* A communicator as seen by one local rank. Transports allocate it; impl is theirs. */
typedef struct validate_comm {
	int size;  /* ranks in the communicator */
	int rank;  /* this rank's index in it */
	int color; /* the split color that made it (-1 for the world) */
	void *impl;
} validate_comm;

#define VALIDATE_MAX_MARKS 64 /* timer slots per local rank */

/* A GPU's state beside a measurement (NVML). Fields are 0 / empty when unknown. */
typedef struct validate_gpu_state {
	char name[256];
	unsigned sm_mhz, mem_mhz;  /* current SM and memory clocks */
	unsigned max_sm_mhz;       /* the SM clock's maximum */
	unsigned temp_c;           /* GPU core temperature */
	size_t l2_bytes;           /* last-level cache */
} validate_gpu_state;

typedef struct validate_transport validate_transport;

typedef struct validate_transport_ops {
	const char *name;
	void (*destroy)(validate_transport *t);

	/* ---- memory (device memory for nccl) */
	int (*alloc)(validate_transport *t, int local, size_t bytes, void **out);
	void (*release)(validate_transport *t, int local, void *p); /* accepts NULL */
	/* Bytes that can still be allocated on the local rank's device. */
	int (*mem_available)(validate_transport *t, int local, size_t *bytes);
	int (*upload)(validate_transport *t, int local, void *dst, const void *src, size_t bytes);
	int (*download)(validate_transport *t, int local, void *dst, const void *src, size_t bytes);
	int (*zero)(validate_transport *t, int local, void *dst, size_t bytes);

	/* ---- kernels (kernels.h); buffers are the transport's memory */
	int (*gemm)(validate_transport *t, int local, const kernels_gemm *g, const void *a, const void *b, void *c);
	int (*permute)(validate_transport *t, int local, const kernels_permute *p, const void *src, void *dst);
	int (*attn_fwd)(validate_transport *t, int local, const kernels_attn_shape *s, const void *q, const void *k,
			const void *v, void *o, float *lse);
	/* workspace: kernels_attn_bwd_workspace(s) bytes */
	int (*attn_bwd)(validate_transport *t, int local, const kernels_attn_shape *s, const void *q, const void *k,
			const void *v, const void *o, const void *dout, const float *lse, void *dq, void *dk, void *dv,
			void *workspace);

	/* ---- communicators. split is collective over every rank of the parent: local rank i
	 * joins the communicator of color[i] (ranks ordered by global rank), or none when
	 * color[i] < 0 (out[i] = NULL). */
	int (*comm_split)(validate_transport *t, validate_comm *const *parent, const int *color, validate_comm **out);
	void (*comm_free)(validate_transport *t, validate_comm **comms); /* one per local rank; NULLs skipped */

	/* ---- collectives, issued for every local rank at once. count is in elements:
	 * all-to-all: per peer; all-gather: per rank (sent); reduce-scatter: per rank
	 * (received); all-reduce: the whole buffer. Reductions are sums. */
	int (*coll)(validate_transport *t, validate_coll c, validate_comm *const *comms, const void *const *send,
		    void *const *recv, size_t count, validate_dtype dt);

	/* ---- ordering and timing */
	int (*mark)(validate_transport *t, int local, int slot); /* a timestamp at this point of the stream */
	int (*sync)(validate_transport *t, int local);            /* wait for everything issued on local */
	/* Seconds between two marks; both must have completed (sync first). */
	int (*elapsed)(validate_transport *t, int local, int from, int to, double *seconds);

	/* ---- measurement hygiene (NULL where the machine has no such thing)
	 * Evicts the last-level cache before a timed call whose operands (operand_bytes in
	 * all) would otherwise stay resident from the previous one; a no-op for operands
	 * larger than the cache. Ordered on the local rank's stream, outside the marks. */
	int (*flush_cache)(validate_transport *t, int local, size_t operand_bytes);
	/* The device's name, clocks and temperature now (NVML), for recording beside a result. */
	int (*probe)(validate_transport *t, int local, validate_gpu_state *out);
	/* The attention kernel family attn_fwd (bwd 0) or attn_bwd (bwd 1) runs for this shape:
	 * "cudnn", "wmma-fallback" or "cpu-reference". */
	const char *(*attn_kernel)(validate_transport *t, int local, const kernels_attn_shape *s, int bwd);
} validate_transport_ops;

/* Cross-process host operations (MPI). A single process uses validate_launch_single(). */
typedef struct validate_launch {
	const char *name;
	int procs, proc; /* processes in the job and this one's index */
	int (*allreduce_max)(struct validate_launch *l, double *values, int n);
	int (*allreduce_sum)(struct validate_launch *l, double *values, int n);
	int (*bcast)(struct validate_launch *l, void *buf, size_t bytes, int root);
	/* Every process's `bytes` from mine into all (procs x bytes, process order). */
	int (*allgather)(struct validate_launch *l, const void *mine, void *all, size_t bytes);
	int (*barrier)(struct validate_launch *l);
	void (*finish)(struct validate_launch *l);
	/* Ends every process of the job now with this exit status (MPI_Abort; _exit alone). */
	void (*abort)(struct validate_launch *l, int status);
	void *impl;
} validate_launch;

validate_launch *validate_launch_single(void);
/* MPI launch (builds with OpenMPI only): MPI_Init, one process per GPU. Returns
 * VALIDATE_ENODEV when this build has no MPI. */
int validate_launch_mpi(int *argc, char ***argv, validate_launch **out);
/* True when the environment says this process was started by mpirun/srun with MPI. */
bool validate_launch_mpi_env(void);

struct validate_transport {
	const validate_transport_ops *ops;
	int world;       /* ranks in the job */
	int n_local;     /* ranks this process drives */
	int first_rank;  /* global rank of local rank 0 */
	int nodes;       /* distinct hosts */
	int *node_of;    /* world entries: the host index of each global rank */
	char host[64];
	double timeout_s; /* a collective not done after this long is aborted */
	validate_comm **world_comm; /* per local rank */
	validate_launch *launch;
	void *impl;
};

/* The CPU transport: `world` ranks in this process, pretending to sit on
 * ceil(world / ranks_per_node) hosts (for link classes in the tests); mem_limit bytes per
 * rank (0: no limit) so memory checks can be exercised. */
int validate_transport_cpu(int world, int ranks_per_node, size_t mem_limit, validate_transport **out);
/* A virtual clock for the CPU transport: instead of wall time, each rank's clock advances
 * by a synthetic cost per operation, so the whole measurement path (timers, sweeps, fits,
 * calibration, reports) can be tested with known answers. Costs:
 *   GEMM, attention: FLOPs / flops (the workload's FLOP accounting)
 *   permute: bytes read and written / hbm
 *   all-to-all (NCCL's direct one, as engine_collective_time models it): a collective
 *     starts when its last member arrives; with c = size / P to each peer, r members on
 *     this rank's host: latency + max((r-1)·c / intra_bw, (P-r)·c / inter_bw), latency
 *     of the inter-node class when the group spans hosts
 *   ring all-gather / reduce-scatter (P-1 steps), all-reduce (2(P-1)): steps x
 *     (latency + size/P / bandwidth) of the slowest link class the group uses
 * Bandwidths per GPU per direction. */
typedef struct validate_cpu_clock {
	double intra_latency, intra_bw;
	double inter_latency, inter_bw;
	double flops; /* FLOP/s */
	double hbm;   /* bytes/s */
} validate_cpu_clock;
/* Switches a CPU transport to the virtual clock (before any mark). */
int validate_transport_cpu_clock(validate_transport *t, const validate_cpu_clock *clock);

/* The NCCL transport. Single process (launch->procs == 1): `gpus` devices (0: all
 * visible). Under MPI: one device per process, chosen by the rank on its host. */
int validate_transport_nccl(validate_launch *launch, int gpus, double timeout_s, validate_transport **out);
/* True when this build has the NCCL transport. */
bool validate_have_nccl(void);
/* The attention kernel family the NCCL transport runs in this build: "cudnn" (cuDNN 9's
 * fused flash attention), "wmma-fallback" (kernels/attention.cu, built without cuDNN) or
 * "none" (no CUDA). */
const char *validate_attn_kernel_built(void);

void validate_transport_destroy(validate_transport *t); /* accepts NULL */

/* ------------------------------------------------------------- never hang ---
 * Every step of a run (a transport call that may block, a measured point, a cross-process
 * agreement) is named before it starts, so that whatever notices a stall can say which
 * rank was doing what. */
void validate_step_begin(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The current step's name and when it began (CLOCK_MONOTONIC seconds). */
const char *validate_step_current(double *began);
double validate_now(void);

/* The agreed status of a step: every process calls it with its own status and gets the
 * worst of all (the largest -rc), so a failure on any process ends the step on every
 * process instead of leaving the others waiting in the next collective (the failing
 * process is named once on each of the others). Single process: returns rc. */
int validate_agree(validate_launch *l, int rc);

/* Fault injection for the tests of these paths: SPSIM_VALIDATE_INJECT=PROC:error[:N]
 * makes process PROC fail its N-th agreed step (default the first) with
 * VALIDATE_EDEVICE; PROC:hang[:N] makes it stop there forever (only the watchdog ends
 * it). Returns false, with a sentence in err, when the variable is set but malformed. */
bool validate_inject_from_env(char *err, size_t errlen);

/* The watchdog: a thread that ends every process of the job (launch->abort, exit status 2)
 * when one step has run longer than step_timeout_s (> 0), or the whole run longer than
 * run_timeout_s (> 0), after printing the rank, host and step. The transports' own
 * deadlines (NCCL polling) come first and name the operation themselves; the watchdog
 * is the backstop for calls nothing else can interrupt (MPI collectives, a kernel that
 * never ends). */
int validate_watchdog_start(validate_launch *l, double step_timeout_s, double run_timeout_s);
void validate_watchdog_stop(void);
/* Grace the watchdog gives a step beyond step_timeout_s, so that a transport's own
 * deadline reports first: 10% plus 2 s. */
double validate_watchdog_grace(double step_timeout_s);

/* Ranks per host when uniform, else 0. */
int validate_transport_ranks_per_node(const validate_transport *t);
/* True when all ranks of every group of K contiguous ranks are on one host. */
bool validate_transport_groups_intra(const validate_transport *t, int K);

#endif
