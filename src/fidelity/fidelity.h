/* fidelity: a corpus of published measurements (nccl-tests curves, attention and GEMM
 * kernel throughputs, end-to-end training throughput) and spsim's prediction of each.
 *
 * The corpus is a directory of YAML files, one per source (a paper, a results page, an
 * issue thread with a log), each holding one or more cases:
 *
 *   source:
 *     id: azure-nd-a100-v4            # unique over the corpus
 *     title: Azure AI benchmarking guide, ND A100 v4 results
 *     url: https://github.com/...     # or arxiv: 2307.08691
 *     hardware: 8x A100-SXM4-80GB on NVSwitch
 *     cases:
 *       - id: nd-a100-gemm-4096       # unique over the corpus
 *         kind: gemm                  # collective | attention | gemm | step | sp_attention
 *         citation: 'table "GEMM CuBLASLt": | 4096 | 4096 | 4096 | 228.0 |'
 *         platform: dgx-a100          # shipped name, or a path relative to this file
 *         nodes: 1                    # optional: overrides the platform's node count
 *         gemm: {m: 4096, n: 4096, k: 4096}
 *         published: {value: 228.0, unit: TFLOP/s}
 *         note: free text             # optional
 *
 * Per kind, one configuration mapping and the units it may be compared in:
 *   collective: {op: all_reduce|all_gather|reduce_scatter|alltoall|sendrecv|broadcast,
 *                gpus: N, size: 8G (nccl-tests size syntax, bytes per rank),
 *                alg, proto (optional, as `spsim collective --alg/--proto`: alg ring|tree|nvls
 *                the algorithm the run forced with NCCL_ALGO, direct|pairwise|hierarchical
 *                spsim's all-to-all; proto LL|LL128|Simple the protocol it forced with
 *                NCCL_PROTO; NCCL's tuner's choice when absent),
 *                nccl_version (optional, "2.19" or "2.28": the tuner tables applied to the
 *                case's platform, as its nccl.version; only where the source states the
 *                NCCL release, the nearest earlier table for a release between them),
 *                processes (optional, per_gpu or per_node: how the run placed its ranks,
 *                as the platform's nccl.processes; per_node for nccl-tests -g N or -t N,
 *                one process driving all GPUs of a node; the platform's when absent)}
 *                                                                       units GB/s (busbw), us (time)
 *   attention:  {batch, seq_len, heads, head_dim, causal: bool, pass: fwd|bwd|fwd+bwd,
 *                kernel: flash-attn-2|flash-attn-3|cudnn|flash-attn-triton,
 *                kv_heads (optional, grouped-query K/V heads dividing heads; heads when
 *                absent): the FLOPs and the compute model follow the query heads, the
 *                K/V heads set the K, V (and dK, dV) bytes of the roofline; a kernel with
 *                no curve on the platform's GPU is refused, as a platform's attention_kernel is}
 *                                                                       units TFLOP/s, iter/s
 *                (iter/s: kernel calls per second, 1 / the kernel's time; fwd+bwd one forward
 *                and one backward call)
 *   gemm:       {m, n, k}                                               unit TFLOP/s
 *   step:       {model, gpus, sp, micro_batch, seq_len, ...}: every key of a job file's
 *                `job:` mapping (config_job_keys, read by config_job_read_fields, so
 *                strategy, zero, recompute, attention_kernel, impl, a2a, ... all work);
 *                model, gpus, sp, micro_batch and seq_len required; paths relative to
 *                this file; platform and nodes either here or at the case level, not
 *                both; calibration applied to the platform; what_if runs under the
 *                SimGrid engine (the analytic one: slow_gpu, slow_node, NIC/port degrade,
 *                fail_node)
 *                                         units tokens/s/GPU, MFU%, MFU-dense%, Megatron-TFLOP/s,
 *                                               GiB-allocated, GiB-reserved, GiB-device
 *                (MFU% counts causal attention at half its dense FLOPs, MFU-dense% dense,
 *                as MosaicML, PaLM and Megatron-LM report it; Megatron-TFLOP/s is the
 *                TFLOP/s per GPU that Megatron-DeepSpeed prints, megatron/utils.py
 *                throughput_calculator: 24 f B s L h^2 (1 + s/(6h) + V/(16 L h)) per
 *                iteration over its time and the world size, f = 4 with activation
 *                recomputation and 3 without (Narayanan et al., arXiv 2104.04473, eq. 3),
 *                i.e. the step's tokens/s per GPU times 24 f L h^2 (1 + s/(6h) + V/(16 L h)))
 *                Memory per GPU, GiB (2^30 bytes), the part of spsim's memory (`spsim run`'s
 *                memory_bytes, docs/model.md "Memory per GPU") that the measuring tool sees
 *                (fidelity_memory_measure):
 *                  GiB-allocated  torch.cuda.max_memory_allocated (DeepSpeed's "Max_MA"):
 *                                 the peak of the bytes PyTorch's caching allocator handed
 *                                 to tensors = spsim's peak less the CUDA context, the NCCL
 *                                 buffers and the fragmentation. The cuBLAS workspace stays
 *                                 in: PyTorch takes it from the caching allocator
 *                                 (aten/src/ATen/cuda/CublasHandlePool.cpp, getNewWorkspace:
 *                                 CUDACachingAllocator::get()->allocate, kept as an at::DataPtr
 *                                 in cublas_handle_stream_to_workspace), so it counts in
 *                                 memory_allocated; the context is the driver's and NCCL
 *                                 cudaMalloc's its buffers itself (src/init.cc), both outside
 *                                 the allocator.
 *                  GiB-reserved   torch.cuda.max_memory_reserved (DeepSpeed's "Max_CA"):
 *                                 the segments the allocator holds from cudaMalloc, i.e. the
 *                                 allocated bytes plus the split, unusable remainders of its
 *                                 blocks = allocated + spsim's fragmentation.
 *                  GiB-device     nvidia-smi's / NVML's used memory of the GPU: spsim's whole
 *                                 peak (context, NCCL and fragmentation included).
 *                With a declared memory_reserve (job or platform, which has no parts) the
 *                whole declared figure is taken as outside the allocator, as its definition
 *                (the device's used memory less memory_allocated) has it: allocated =
 *                reserved = peak - memory_reserve.
 *   sp_attention: {strategy: ring[:split=zigzag|naive][:comm=p2p|all_gather] | ulysses |
 *                usp[:u=U:r=R], gpus, seq_len (the global sequence), batch, heads, kv_heads,
 *                head_dim, causal: true, pass: fwd|fwd+bwd, kernel (as attention's)}
 *                the sequence-parallel attention core of one layer on `gpus` GPUs (one SP
 *                group): spsim's own op program for that section
 *                (workload_sp_attention_plan_make: the layer block's all-to-alls, ring blocks,
 *                KV transfers and corrections, backward ring and dK, dV returns) timed by
 *                the engine                                          unit iter/s
 *                (1 / the section's time; the programs model causal attention only)
 *
 * Kernel throughputs use the FLOP counts of the benchmarks they come from: GEMM 2mnk;
 * attention forward 4 b s^2 h d (halved when causal), backward 2.5x forward, forward +
 * backward 3.5x forward (FlashAttention's benchmarks/benchmark_flash_attention.py).
 *
 * Nothing here prints or exits: errors come back as "file:line:col: what is wrong, what
 * was expected" in a config_error. */
#ifndef SPSIM_FIDELITY_FIDELITY_H
#define SPSIM_FIDELITY_FIDELITY_H

#include "config/config.h"
#include "workload/workload.h"

#define FIDELITY_TEXT_MAX 2048

typedef enum fidelity_kind {
	FID_COLLECTIVE,
	FID_ATTENTION,
	FID_GEMM,
	FID_STEP,
	FID_SP_ATTENTION,
	FID_KIND_COUNT
} fidelity_kind;
typedef enum fidelity_metric {
	FID_BUSBW,      /* GB/s, nccl-tests bus bandwidth */
	FID_TIME_US,    /* us, nccl-tests time */
	FID_TFLOPS,     /* TFLOP/s of one kernel */
	FID_TOKENS_GPU, /* tokens/s per GPU of a training step */
	FID_MFU_PCT,    /* model FLOPs utilisation, percent (causal attention halved) */
	FID_MFU_DENSE_PCT, /* the same with attention counted dense (MosaicML, PaLM, Megatron-LM) */
	FID_MEGATRON_TFLOPS, /* TFLOP/s per GPU of a step as Megatron-DeepSpeed's throughput_calculator counts */
	FID_ITER_S,     /* iterations per second of a benchmark loop (attention, sp_attention) */
	FID_GIB_ALLOCATED, /* GiB per GPU, torch.cuda.max_memory_allocated of a step */
	FID_GIB_RESERVED,  /* GiB per GPU, torch.cuda.max_memory_reserved of a step */
	FID_GIB_DEVICE,    /* GiB per GPU, nvidia-smi / NVML used memory during a step */
	FID_METRIC_COUNT
} fidelity_metric;
typedef enum fidelity_pass { FID_PASS_FWD, FID_PASS_BWD, FID_PASS_FWD_BWD } fidelity_pass;

extern const char *const fidelity_kind_names[FID_KIND_COUNT];
extern const char *const fidelity_metric_units[FID_METRIC_COUNT];

/* A kernel as the corpus describes it: the one place the runner turns a published kernel
 * configuration into spsim's op (see fidelity_kernel_time). */
typedef struct fidelity_kernel {
	workload_kernel kernel; /* WL_KERNEL_GEMM or WL_KERNEL_ATTENTION */
	/* gemm */
	double m, n, k;
	/* attention */
	int batch, heads, head_dim;
	int kv_heads; /* K/V heads (grouped-query attention); 0: heads */
	long seq_len;
	bool causal;
	fidelity_pass pass;
	char family[CONFIG_NAME_MAX]; /* a config_attn_kernel_names entry */
} fidelity_kernel;

typedef struct fidelity_case {
	char id[CONFIG_NAME_MAX];
	char source[CONFIG_NAME_MAX];
	char file[CONFIG_PATH_MAX];
	int line, col;
	fidelity_kind kind;
	fidelity_metric metric;
	double published;
	char citation[FIDELITY_TEXT_MAX];
	char platform[CONFIG_PATH_MAX]; /* shipped name or resolved path */
	int nodes;                      /* 0: the platform's own */
	/* collective */
	workload_coll coll;
	bool alg_set;
	workload_alg alg;
	int force_algo;  /* 1 + nccl_algo the run forced (NCCL_ALGO), 0: NCCL's choice */
	int force_proto; /* 1 + nccl_proto the run forced (NCCL_PROTO), 0: NCCL's choice */
	int nccl_release; /* 1 + the NCCL tuner release (nccl_version) set on the platform, 0: the platform's */
	int nccl_processes; /* 1 + CONFIG_NCCL_PROCS_* (processes) set on the platform, 0: the platform's */
	int gpus;
	double size;
	/* attention, gemm */
	fidelity_kernel kern;
	/* sp_attention: kern (batch, seq_len the global sequence, heads, kv_heads, head_dim,
	 * causal, pass, family), gpus, and job (strategy, gpus, sp, micro-batch, sequence,
	 * kernel); the model is fidelity_sp_attention_model's */
	/* step */
	char model[CONFIG_PATH_MAX];
	config_job job;
	char calibration[CONFIG_PATH_MAX]; /* "" for none; applied to the platform */
	config_whatif whatif;              /* the step's what_if: (engine_whatif_supported) */
} fidelity_case;

typedef struct fidelity_corpus {
	fidelity_case *cases;
	int n, cap;
	int n_sources;
} fidelity_corpus;

/* Appends the cases of one source file; checks every key, unit and range, and that the
 * platform and model load and the job fits them. On failure nothing is appended. */
bool fidelity_load_file(const char *path, fidelity_corpus *c, config_error *err);
/* Loads every *.yaml file directly under dir in name order (subdirectories such as
 * platforms/ and models/ hold the files cases refer to). Fails on the first bad file, on
 * an id used twice, and on a directory with no cases. Free the corpus with
 * fidelity_corpus_free whether loading succeeded or not. */
bool fidelity_load_dir(const char *dir, fidelity_corpus *c, config_error *err);
void fidelity_corpus_free(fidelity_corpus *c);

/* The case's platform with its node count and its step's calibration applied. */
bool fidelity_case_platform(const fidelity_case *k, config_platform *p, config_error *err);

/* spsim's prediction of a case, in the case's unit, with the named engine for steps
 * ("analytic" or "simgrid"). */
bool fidelity_predict(const fidelity_case *k, const char *engine, double *predicted, config_error *err);

/* The model an sp_attention case's op program is built for: one layer of the case's
 * heads, kv heads and head dimension (hidden = heads x head_dim); its projection, MLP and
 * vocabulary sizes are set but unused, the section having none of those ops. */
void fidelity_sp_attention_model(const fidelity_case *k, config_model *m);

/* Seconds spsim gives one kernel on a platform (today engine_compute_time on a synthetic
 * op); FLOPs by the benchmark convention above in *flops. */
double fidelity_kernel_time(const config_platform *p, const fidelity_kernel *k, double *flops);

/* FLOPs per token of a training step as Megatron-DeepSpeed's throughput_calculator counts
 * them for the TFLOP/s it prints (the Megatron-TFLOP/s unit): 24 f L h^2 (1 + s/(6h) +
 * V/(16 L h)), f = 4 with recomputation, 3 without. */
double fidelity_megatron_flops_per_token(const config_model *m, const config_job *job);
/* The bytes of spsim's memory per GPU that a memory unit's tool sees (the mapping above):
 * GiB-allocated peak - context - NCCL - fragmentation (the declared reserve when one is);
 * GiB-reserved that + fragmentation; GiB-device the peak. 0 for a unit that is not memory. */
double fidelity_memory_measure(const workload_memory *mem, fidelity_metric metric);
/* Whether a unit is one of the memory units. */
bool fidelity_metric_is_memory(fidelity_metric metric);

/* Signed error of a prediction, percent: 100 (predicted - published) / published. */
double fidelity_err_pct(double predicted, double published);

typedef struct fidelity_summary {
	int n;
	double geomean_abs_error_pct; /* 100 (exp(mean |ln(predicted / published)|) - 1) */
	double max_abs_error_pct;     /* max |fidelity_err_pct| */
} fidelity_summary;
/* Summary over n (predicted, published) pairs, all positive. */
fidelity_summary fidelity_summarize(const double *predicted, const double *published, int n);

#endif
