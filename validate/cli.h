/* spsim-validate: the command-line side of validate mode (main.c, cmd_*.c). Links the
 * simulator core for model and platform files, the calibration format and the predicted
 * side of measured-vs-predicted. */
#ifndef SPSIM_VALIDATE_CLI_H
#define SPSIM_VALIDATE_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "config/config.h"
#include "validate.h"

#define VCLI_MAX_LIST 32

typedef struct vcli_opts {
	const char *command;
	/* machine */
	const char *transport; /* "nccl" or "cpu" */
	const char *launch;    /* "auto", "local", "mpi" */
	int gpus;              /* nccl, one process: devices to drive (0: all) */
	int ranks, ranks_per_node; /* cpu transport */
	bool has_clock;            /* cpu transport: virtual clock (--cpu-clock) */
	validate_cpu_clock clock;
	double timeout_s;     /* per step (NCCL deadline, watchdog) */
	double run_timeout_s; /* whole run (watchdog); 0: none */
	/* files */
	const char *out_dir;
	const char *platform;
	const char *calibration;
	const char *model;
	/* timing */
	int warmup, iters;
	/* comm */
	size_t min_bytes, max_bytes;
	int factor;
	int group_sizes[VCLI_MAX_LIST], n_group_sizes;
	bool no_world, no_zero;
	validate_dtype dtype;
	int nics_per_node; /* 0: the platform's, else one per GPU */
	/* compute and layer */
	long seqs[VCLI_MAX_LIST];
	int n_seqs;
	int micro_batch;
	int sp;                /* compute: the job's N (default: the ranks running) */
	const char *strategy;  /* "basp", "ulysses" or (layer) "both" */
	int dims[4], has_dims; /* layer --dims hidden,heads,kv_heads,head_dim */
	double peak_flops, hbm_bw;
	bool no_backward, no_check;
	double tol;
	unsigned long long seed;
} vcli_opts;

/* Where results go: out_dir/measurements.jsonl (appended, line by line as measured),
 * out_dir/calibration.yaml (merged and rewritten after each command),
 * out_dir/report.md (a section appended per command). Process 0 writes; others no-op. */
typedef struct vcli_out {
	validate_log log;
	FILE *report;
	char dir[CONFIG_PATH_MAX];
	bool writer;
} vcli_out;

int vcli_out_open(vcli_out *o, const char *dir, bool writer);
void vcli_out_close(vcli_out *o);
/* Merges the fields set in `update` into out_dir/calibration.yaml (config.h's format). */
int vcli_calibration_merge(vcli_out *o, const config_calibration *update);
/* printf to stdout and the report (process 0 only). */
void vcli_say(vcli_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The GPU name a calibration records (config.h `gpu:`): the platform's gpu.name when the
 * device measured is that model, else the device's own name (with a warning that spsim
 * will refuse it for the platform); "" for the cpu transport. */
int vcli_gpu_of(const vcli_opts *opt, const validate_gpu_state *gpu, char *out, size_t len);

/* Peak FLOP/s and HBM bytes/s: the flags, else the platform's; 0 when unknown. */
void vcli_peaks(const vcli_opts *opt, double *flops, double *hbm);

int vcli_comm(const vcli_opts *opt, validate_transport *t, vcli_out *o);
int vcli_compute(const vcli_opts *opt, validate_transport *t, vcli_out *o);
int vcli_layer(const vcli_opts *opt, validate_transport *t, vcli_out *o);

#endif
