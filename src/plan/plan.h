/* plan: many jobs at once. Sweeps over a grid of jobs (spec loader, grid expansion, a
 * forked worker pool, resumable CSV + JSON-lines output, an MPI split), the configuration
 * planner (search, memory filter, ranking, explanations) and figures drawn by gnuplot.
 *
 * Library code: nothing here exits; errors come back in a config_error. Only the worker
 * processes this module forks end themselves (with _exit), after handing back their rows.
 * docs/planning.md describes the spec format, the search space and the figures. */
#ifndef SPSIM_PLAN_PLAN_H
#define SPSIM_PLAN_PLAN_H

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>

#include "config/config.h"
#include "engine/engine.h"
#include "report/report.h"
#include "workload/workload.h"

/* ------------------------------------------------------ strategy variants --- */
/* The strategies sweeps and the planner know, in one table: adding a strategy (a new
 * config_strategy, or a setting of one such as basp_uneven) is one more row here.
 * `same_as_other` names a configuration of this variant that is by definition another
 * variant's (BASP at micro-batch 1 is Ulysses, basp.md "Edge cases"; basp-unequal with
 * B dividing N is BASP): the planner skips it so that one configuration is not ranked
 * twice. */
typedef struct plan_variant {
	const char *name; /* as written in specs and printed: "ulysses", "basp" */
	config_strategy strategy;
	bool (*same_as_other)(const config_job *job); /* NULL: never a duplicate */
	/* Settings of the variant's own knobs beyond SP and micro-batch (a free group size,
	 * say): the planner calls it with alt = 0, 1, ... on a job whose strategy, gpus, sp,
	 * micro_batch, grad_accum and seq_len are set, until it returns false. NULL: the job
	 * as it is, once. */
	bool (*expand)(config_job *job, int alt);
	const char *summary;
	/* Searched by the planner only when asked for (plan_query.variant_mask, `spsim plan
	 * --strategies`): ring attention and USP, whose programs hold a few ops per ring step
	 * and would slow the default search several-fold. */
	bool opt_in;
} plan_variant;

#define PLAN_MAX_VARIANTS 16
/* The longest ring (ring attention, USP's R) the planner searches (strategy.c). */
#define PLAN_MAX_RING 16
extern const plan_variant plan_variants[]; /* terminated by a NULL name; at most PLAN_MAX_VARIANTS */
const plan_variant *plan_variant_find(const char *name);
const plan_variant *plan_variant_of(config_strategy s);
/* "ulysses|basp|...", for messages. */
const char *plan_variant_names(void);
/* "direct", "pairwise", "hierarchical". */
const char *plan_a2a_name(config_a2a a);

/* A strategy as a sweep or compare names it: run's --strategy spelling (config_strategy_parse,
 * which reads it) or a row of plan_variants, optionally with :sp=N (SP domain of N GPUs,
 * W/N data-parallel replicas) or VARIANT:sp=N/B (SP = GPUs / micro-batch: basp.md's
 * "Ulysses with SP = N/B", which follows the micro-batch along a sweep); the run
 * spellings basp:inner=ring|usp and ring:comm=all_gather name their rows, and usp and
 * basp-usp take :u=U:r=R (without them the degrees are derived, U inside a node). */
typedef enum plan_sp_mode { PLAN_SP_ALL, PLAN_SP_FIXED, PLAN_SP_PER_BATCH } plan_sp_mode;
typedef struct plan_strategy {
	char label[CONFIG_NAME_MAX];
	const plan_variant *variant;
	plan_sp_mode sp_mode;
	int sp; /* PLAN_SP_FIXED */
	int u, r; /* USP's degrees (usp, basp-usp: :u=U:r=R); 0: derived (workload_check) */
	config_cp_split split; /* ring attention's split (:split=naive) */
} plan_strategy;

bool plan_strategy_parse(const char *text, plan_strategy *out, config_error *err);
/* Sets job->strategy and job->sp; job->gpus must be the resolved world size. False when
 * sp=N/B does not divide (the message says so). */
bool plan_strategy_apply(const plan_strategy *s, config_job *job, config_error *err);

/* ------------------------------------------------------------- one job --- */
/* A job run the way `spsim run` runs it: its composite (one part unless BASP with
 * N % B != 0, workload.h), every part through the engine, the step and the memory of the
 * fullest part. */
typedef struct plan_sim {
	workload_composite comp;
	engine_result res;
	const workload_plan *primary; /* the plan res belongs to (the slowest part) */
	workload_memory memory;       /* the part with the highest peak */
} plan_sim;

/* job must have passed workload_check. */
bool plan_simulate(const config_model *m, const config_platform *p, const config_job *job, const engine_ops *e,
		   engine_options opt, plan_sim *out, config_error *err);
void plan_sim_finish(plan_sim *s);

/* --------------------------------------------------------------- the spec --- */
/* The axes of a sweep, slowest-varying first (point indices are mixed-radix in this
 * order, so the strategies of one configuration are neighbours). */
typedef enum plan_axis {
	PLAN_AXIS_MODEL,
	PLAN_AXIS_PLATFORM,
	PLAN_AXIS_NODES,
	PLAN_AXIS_GPUS_PER_NODE,
	PLAN_AXIS_NICS,
	PLAN_AXIS_NIC_BANDWIDTH,
	PLAN_AXIS_INTRA_BANDWIDTH,
	PLAN_AXIS_INTER_LATENCY,
	PLAN_AXIS_GPU_MEMORY,
	PLAN_AXIS_CALIBRATION,
	PLAN_AXIS_ENGINE,
	PLAN_AXIS_PLACEMENT, /* engine_placement_parse: contiguous, strided, random:SEED */
	PLAN_AXIS_WHAT_IF,   /* none, or a compare --what-if spec / a job file's what_if mapping */
	PLAN_AXIS_GPUS,
	PLAN_AXIS_ZERO,
	/* job settings read through the job file's table (config_job_setting_read) */
	PLAN_AXIS_RECOMPUTE,
	PLAN_AXIS_A2A,
	PLAN_AXIS_BASP_UNEVEN,
	PLAN_AXIS_CP_COMM_TYPE, /* applied after the strategy (config_job_apply_cp_comm_type) */
	PLAN_AXIS_ATTENTION_KERNEL,
	PLAN_AXIS_IMPL,
	PLAN_AXIS_ZERO3_PREFETCH,
	PLAN_AXIS_OFFLOAD_ACTIVATIONS,
	PLAN_AXIS_OFFLOAD_OPTIMIZER,
	PLAN_AXIS_TILE_MLP,
	PLAN_AXIS_TILE_LOGITS,
	PLAN_AXIS_MEMORY_RESERVE,
	PLAN_AXIS_ZERO_OVERLAP,
	PLAN_AXIS_FP32_GRAD_COMM,
	PLAN_AXIS_CONTIGUOUS_GRADIENTS,
	PLAN_AXIS_REDUCE_BUCKET,
	PLAN_AXIS_ALLGATHER_BUCKET,
	PLAN_AXIS_PREFETCH_BUCKET,
	PLAN_AXIS_DTYPE,
	PLAN_AXIS_GRAD_ACCUM,
	PLAN_AXIS_SEQ_LEN,
	PLAN_AXIS_MICRO_BATCH,
	PLAN_AXIS_STRATEGY,
	PLAN_AXIS_COUNT
} plan_axis;

/* The spec key of an axis ("model", "nic_bandwidth", ...). */
const char *plan_axis_key(plan_axis a);

typedef struct plan_value {
	char text[CONFIG_PATH_MAX]; /* as it appears in point keys and rows */
	double num;                 /* numeric axes: the value in SI base units or a count;
				     * cp_comm_type: the config_cp_comm_type */
	config_job job;             /* job-setting axes: the spec's base with this value read in */
} plan_value;

typedef struct plan_spec {
	char path[CONFIG_PATH_MAX];
	char name[CONFIG_NAME_MAX];
	char baseline[CONFIG_NAME_MAX]; /* strategy label speedups are relative to */
	/* n[a] values for axis a; an axis the spec leaves out has one default value and
	 * given[a] false (it is then left out of point keys). */
	int n[PLAN_AXIS_COUNT];
	bool given[PLAN_AXIS_COUNT];
	plan_value *values[PLAN_AXIS_COUNT];
	config_model *models;         /* n[PLAN_AXIS_MODEL] */
	config_platform *platforms;   /* n[PLAN_AXIS_PLATFORM], as loaded */
	config_calibration *cals;     /* n[PLAN_AXIS_CALIBRATION]; path "" = none */
	plan_strategy *strategies;    /* n[PLAN_AXIS_STRATEGY] */
	config_whatif *whatifs;       /* n[PLAN_AXIS_WHAT_IF]; n = 0: none */
	config_job base;              /* DeepSpeed's defaults (config_job_defaults) */
	long n_points;
} plan_spec;

/* Reads a sweep spec (docs/planning.md "Sweep specs"). Models, platforms and calibration
 * files are loaded here, so a bad name is reported at its line and column. Paths in the
 * spec are relative to the spec's directory. */
bool plan_spec_load(const char *path, plan_spec *out, config_error *err);
void plan_spec_finish(plan_spec *s);

typedef struct plan_point {
	long index;
	int at[PLAN_AXIS_COUNT]; /* value index per axis */
} plan_point;

void plan_point_at(const plan_spec *s, long index, plan_point *out);
/* "model=llama-3.1-8b;platform=a100-2x4-ib400;...": names the point independently of
 * its index, so resume survives an edited spec. */
void plan_point_key(const plan_spec *s, const plan_point *p, char *buf, size_t len);
/* The point's platform (nodes, overrides, calibration applied) and checked job; false
 * with the job check's sentence when the combination is not a valid job (or its engine
 * cannot run the point's placement or what-ifs). */
bool plan_point_job(const plan_spec *s, const plan_point *p, config_platform *platform, config_job *job,
		    config_error *err);
/* The engine options of a point: its placement and what-ifs (the what-ifs point into s). */
engine_options plan_point_options(const plan_spec *s, const plan_point *p);
/* Runs one point: a row (see below) with status "ok", "invalid" (the job check rejects
 * the combination) or "error" (the engine failed). Never NULL except out of memory. */
json_t *plan_point_eval(const plan_spec *s, long index);
/* The row of a point whose worker died or timed out: its description, status "error". */
json_t *plan_point_failed(const plan_spec *s, long index, const char *why);
/* Whether an engine must run in a process of its own (SimGrid can be initialised once
 * per process; every engine but the analytic one is treated so). */
bool plan_engine_isolated(const char *engine);

/* ------------------------------------------------------------------- rows --- */
/* A row: one JSON object per point, the same fields in the JSON-lines file and (in this
 * order) the CSV columns. Quantities are SI: seconds, bytes, bytes/s. */
extern const char *const plan_row_columns[]; /* NULL-terminated */
/* The CSV header names of those fields, with units where the key has none
 * (gpu_memory_bytes, mem_peak_bytes, nic_bandwidth_bytes_per_s, inter_latency_s). run,
 * compare and sweep all write this one column set. */
extern const char *const plan_row_csv_columns[];
json_t *plan_row_new(long index, const char *key);
/* Fills the point description (model ... label) from a job; calibration may be NULL. */
void plan_row_set_job(json_t *row, const config_model *m, const config_platform *p, const config_job *job,
		      const char *label, const char *engine, const char *calibration);
/* The engine options of a sweep point, as its spec writes them ("contiguous", "none"). */
void plan_row_set_options(json_t *row, const char *placement, const char *what_if);
void plan_row_set_result(json_t *row, const workload_plan *plan, const engine_result *res);
/* The same for a simulated job: the composite's memory and its number of parts. */
void plan_row_set_sim(json_t *row, const plan_sim *sim);
void plan_row_set_status(json_t *row, const char *status, const char *error);
/* A row for a finished report_run (compare --plot). */
json_t *plan_row_from_run(const report_run *r, long index);
void plan_row_csv_header(FILE *f);
void plan_row_csv(FILE *f, const json_t *row);
/* One CSV field: s as is, or quoted (RFC 4180: inner quotes doubled) when it holds a comma,
 * a quote or a line break; names from user files may. */
void plan_csv_string(FILE *f, const char *s);
/* Field access that tolerates missing fields: NAN / "" / false. */
double plan_row_num(const json_t *row, const char *key);
const char *plan_row_str(const json_t *row, const char *key);

/* ----------------------------------------------------------------- output --- */
/* DIR/points.jsonl (the record: one row per line, appended as points finish) and
 * DIR/points.csv (the same rows as CSV, rebuilt from the record on resume). */
typedef enum plan_output_mode {
	PLAN_OUTPUT_NEW,    /* refuse an existing non-empty output */
	PLAN_OUTPUT_RESUME, /* keep the complete rows already there; their points are done */
	PLAN_OUTPUT_FORCE,  /* start again, discarding what is there */
} plan_output_mode;

typedef struct plan_output plan_output;

/* Whether DIR can take a sweep's output in this mode: not a file, and (PLAN_OUTPUT_NEW)
 * holding no earlier sweep's rows. A bad answer is a usage error (checked before work). */
/* Creates dir and every missing folder above it (mkdir -p); false with the reason. */
bool plan_mkdir_p(const char *dir, config_error *err);
bool plan_output_check(const char *dir, plan_output_mode mode, config_error *err);
/* retry_failed (resume only): rows with status "error" are dropped, so they run again. */
bool plan_output_open(const char *dir, plan_output_mode mode, bool retry_failed, plan_output **out,
		      config_error *err);
bool plan_output_done(const plan_output *o, const char *key);
long plan_output_count(const plan_output *o);
/* Appends one row to both files and flushes them (a row is on disk when this returns). */
bool plan_output_add(plan_output *o, const json_t *row, config_error *err);
/* Closes; with sort, rewrites both files ordered by point index. o may be NULL. */
bool plan_output_close(plan_output *o, bool sort, config_error *err);
/* Every complete row of DIR/points.jsonl, in file order. */
bool plan_rows_load(const char *dir, json_t **rows, config_error *err);

/* --------------------------------------------------------------- progress --- */
typedef struct plan_progress {
	FILE *f;
	const char *unit; /* what is counted ("points", "SimGrid runs"); NULL: points */
	bool tty, quiet;
	bool no_failures; /* what is counted cannot fail (a search's layouts, a run's blocks):
			   * no "N failed" on the line */
	long total, done, failed;
	long done_printed; /* done at the last line printed (logs) */
	double t0, last_print;
	int last_decile;
	int width;
} plan_progress;

/* A bar with rate and ETA redrawn in place when f is a terminal, otherwise a plain line
 * every 10% (and at least every 30 s). */
void plan_progress_start(plan_progress *p, FILE *f, long total, bool quiet);
void plan_progress_update(plan_progress *p, long done, long failed);
void plan_progress_end(plan_progress *p);

/* ------------------------------------------------------------ worker pool --- */
/* Runs tasks in forked worker processes, at most `jobs` at a time. Tasks that are not
 * isolated go to long-lived workers that take one task after another; isolated tasks get
 * a fresh process each. A row comes back as one JSON line per task over a pipe. A worker
 * that dies or overruns the timeout costs only its task, which is reported through
 * ops->failed; the pool goes on. Workers run with SIGINT at its default action.
 *
 * With opts->stop (a flag a SIGINT handler sets), the pool stops at an interrupt: once
 * *stop is set it hands out no more tasks, kills the workers in flight (SIGKILL) and
 * returns true; their tasks and those never handed out are reported through neither
 * ops->done nor ops->failed. A worker that dies of SIGINT (a terminal's Ctrl-C reaches
 * the whole process group) is taken as that interrupt: *stop is set and its task is not
 * reported as failed. Without opts->stop such a death fails its task like any other. */
typedef struct plan_pool_ops {
	void *ctx;
	json_t *(*eval)(void *ctx, long task);                      /* in the worker */
	bool (*isolated)(void *ctx, long task);                     /* NULL: none is */
	json_t *(*failed)(void *ctx, long task, const char *why);   /* in the parent */
	void (*done)(void *ctx, long task, const json_t *row);      /* in the parent */
	void (*tick)(void *ctx);                                    /* each poll round; may be NULL */
} plan_pool_ops;

typedef struct plan_pool_opts {
	int jobs;         /* <= 0: plan_default_jobs() */
	double timeout_s; /* per task; 0: none */
	double tick_s;    /* longest wait between tick calls (default 0.2 s) */
	volatile sig_atomic_t *stop; /* NULL: no interrupt (see above) */
} plan_pool_opts;

bool plan_pool_run(const long *tasks, long n, const plan_pool_opts *o, const plan_pool_ops *ops,
		   config_error *err);
/* CPUs this process may use, divided among the MPI ranks of this node when a launcher
 * started several here without binding them. */
int plan_default_jobs(void);

/* ---------------------------------------------------------- distribution --- */
/* How a sweep spreads over processes started by a launcher (mpirun, srun). Rank 0 owns
 * the output; the others send it their rows. The default (NULL) is one process. */
typedef struct plan_dist plan_dist;
struct plan_dist {
	int rank, size;
	void *impl;
	/* rank 0's len bytes at buf to every rank */
	bool (*bcast)(plan_dist *d, void *buf, size_t len, config_error *err);
	/* a row line to rank 0 (ranks > 0); NULL: this rank has finished */
	bool (*send)(plan_dist *d, const char *line, config_error *err);
	/* rank 0: hands every row received to cb; with wait, blocks until at least one
	 * message came. Returns how many other ranks have not finished, or -1 on error. */
	int (*recv)(plan_dist *d, bool wait, void (*cb)(void *ctx, const char *line), void *ctx, config_error *err);
};

/* ----------------------------------------------------------------- sweeps --- */
typedef struct plan_sweep_opts {
	const char *out_dir;
	plan_output_mode mode;
	bool retry_failed;
	int jobs;
	double timeout_s;
	bool quiet;
	FILE *log;       /* progress and notes; NULL: stderr */
	plan_dist *dist; /* NULL: this process alone */
	/* Evaluates one point in a worker; NULL: plan_point_eval. A caller may wrap it (to
	 * add fields, or to exercise failure handling). */
	json_t *(*eval)(const plan_spec *s, long index, void *ctx);
	void *eval_ctx;
} plan_sweep_opts;

typedef struct plan_sweep_summary {
	long points;  /* in the grid */
	long already; /* found done in the output (resume) */
	long ran;     /* run now, by every rank */
	long ok, invalid, failed;
	double wall_s;
} plan_sweep_summary;

bool plan_sweep_run(const plan_spec *s, const plan_sweep_opts *o, plan_sweep_summary *sum, config_error *err);

/* ---------------------------------------------------------------- planner --- */
/* The question: a model, one or more platforms (what-if), GPU budgets, a sequence length
 * and a global batch in tokens. The search covers variant x SP degree x micro-batch
 * (hence BASP group size K = SP / B and gradient accumulation) x ZeRO stage x recompute.
 * Every configuration trains global_tokens per optimizer step, so step times compare. */
typedef struct plan_query {
	const config_model *model;
	const config_platform *platforms; /* nodes are set per budget: ceil(budget / gpus_per_node) */
	const double *price;              /* per GPU-hour for each platform; NULL or 0: no price */
	int n_platforms;
	const int *budgets;
	int n_budgets;
	long seq_len;
	long global_tokens;
	unsigned zero_mask;      /* bit z: try ZeRO stage z (0: all four) */
	unsigned recompute_mask; /* bit 0 none, bit 1 full, bit 2 selective (0: none and full) */
	unsigned a2a_mask;       /* bit per config_a2a: all-to-all algorithms for groups that span
				  * nodes (0: all three); groups inside a node use the first */
	int max_micro_batch;     /* 0: no limit */
	unsigned variant_mask;   /* bit per row of plan_variants to search (0: every row that is
				  * not opt_in) */
	const config_job *base;  /* other job settings (buckets, overlap); NULL: defaults */
	plan_progress *progress; /* started by the caller; the search sets its total (layouts:
				  * platform x budget x SP degree x micro-batch x strategy) and
				  * counts them; NULL: none */
	volatile sig_atomic_t *stop; /* set (by a SIGINT handler): the search stops before the next
				      * layout and keeps what it evaluated; the re-runs (plan_verify)
				      * stop as the worker pool does (opts->stop); NULL: never */
} plan_query;

typedef struct plan_candidate {
	long order;   /* enumeration order (the last tie-break) */
	int platform; /* index into the query's platforms */
	int nodes;    /* nodes the budget occupies on that platform */
	const plan_variant *variant;
	config_job job;
	workload_layout layout;
	workload_memory memory;
	engine_result analytic;
	engine_result verified; /* re-run on a second engine */
	bool has_verified;
	const char *placement; /* the placement of the verified run (static string), or NULL */
	/* plan_merge: the variants whose configurations are this same layout (bit per row of
	 * plan_variants) and how the others are written, e.g. "basp SP 8 B=2" */
	unsigned variant_mask;
	char also[160];
	char verify_error[256]; /* why the second engine has no result, when it has none */
	double tokens_per_s;  /* the ranking value: verified when present, else analytic */
	double step_time;
	double cost_per_mtok; /* price x GPUs x time per million tokens; 0 without a price */
} plan_candidate;

typedef struct plan_search_stats {
	long searched;  /* configurations enumerated */
	long invalid;   /* rejected by the job check */
	char invalid_why[CONFIG_ERROR_MAX]; /* the job check's reason for the first one rejected */
	long duplicate; /* identical to another variant's configuration */
	long no_fit;    /* valid but over GPU memory */
	long fit;       /* evaluated by the analytic engine */
	long no_batch;  /* SP degrees skipped: W/N replicas cannot share the global batch evenly */
	long skipped_budgets; /* (platform, budget) pairs skipped: not a whole number of nodes */
	/* per row of plan_variants: configurations the job check accepts, and those that fit */
	long variant_valid[PLAN_MAX_VARIANTS], variant_fit[PLAN_MAX_VARIANTS];
	long layouts;       /* layouts evaluated (each every ZeRO stage x recompute x all-to-all) */
	long layouts_total; /* layouts the query holds (counted only with a progress) */
	bool interrupted;   /* stopped by q->stop: the candidates are those of the first layouts */
} plan_search_stats;

/* Every configuration that fits, evaluated by the analytic engine, best tokens/s first.
 * *out is malloc'd (caller frees). Fails only on a malformed query or out of memory. */
bool plan_search(const plan_query *q, plan_candidate **out, long *n, plan_search_stats *st, config_error *err);

/* Whether two candidates are one configuration under two names: same platform and GPUs,
 * same all-to-all group size, sequences per group, tokens per GPU, micro-steps, ZeRO stage
 * and recompute, and the same analytic step time and memory. With a fixed global batch,
 * BASP with SP N and micro-batch B is exactly Ulysses with SP K = N/B over W/K replicas
 * of one sequence each (basp.md's groups, reached through data parallelism). */
bool plan_same_layout(const plan_candidate *a, const plan_candidate *b);
/* Merges, in place, the candidates of a ranked list that are one layout (the first keeps
 * its place and records the others in also / variant_mask). Returns the new count. */
long plan_merge(plan_candidate *c, long n);

typedef enum plan_rank_by { PLAN_RANK_THROUGHPUT, PLAN_RANK_COST } plan_rank_by;
/* Sorts by tokens/s (descending) or cost per million tokens (ascending); ties broken by
 * fewer GPUs, then lower memory, then the enumeration order. */
void plan_rank(plan_candidate *c, long n, plan_rank_by by);
/* Why c is behind best, in one phrase: the gap and the breakdown term that contributes
 * most to it, with the setting behind that term ("-12% tokens/s: SP all-to-all +0.41 s
 * (group of 8 GPUs vs 2)"). */
void plan_explain(const plan_query *q, const plan_candidate *c, const plan_candidate *best, plan_rank_by by,
		  char *buf, size_t len);
/* Re-runs the first n candidates on `engine` (each in its own process, jobs at a time),
 * sets verified and tokens_per_s, and leaves re-ranking to the caller. When q->stop is set
 * during the re-runs (or one dies of SIGINT, which sets it), the runs in flight are killed,
 * no more start, and every candidate left without a result says so in verify_error
 * (PLAN_VERIFY_INTERRUPTED); true is returned. */
#define PLAN_VERIFY_INTERRUPTED "interrupted before its re-run finished; analytic only"
bool plan_verify(const plan_query *q, plan_candidate *c, long n, const char *engine, const engine_options *opt,
		 int jobs, double timeout_s, config_error *err);
/* The same, counting each finished re-run in prog (started by the caller over every
 * re-run it will make; NULL: silent). */
bool plan_verify_progress(const plan_query *q, plan_candidate *c, long n, const char *engine,
			  const engine_options *opt, int jobs, double timeout_s, plan_progress *prog, config_error *err);
/* A candidate as a row (for JSON output and figures). */
json_t *plan_candidate_json(const plan_query *q, const plan_candidate *c);

/* ---------------------------------------------------------------- figures --- */
/* Figures are drawn by gnuplot (run as a program; $SPSIM_GNUPLOT overrides the name).
 * Each figure is DIR/<name>.svg and DIR/<name>.png, with the data (<name>.dat) and the
 * script (<name>.gp) next to them for editing:
 *   speedup-vs-micro-batch, speedup-vs-seq-len  tokens/s ratio over the baseline strategy
 *   breakdown                                   stacked step time per strategy
 *   scaling-vs-gpus                             tokens/s against GPU count
 *   memory-vs-seq-len                           peak memory per GPU and the capacity line
 *   throughput                                  tokens/s per hardware variant (what-ifs)
 * A figure whose axis does not vary in the rows is skipped (and said so in the log). */
bool plan_plot_available(config_error *err);
/* Figures from rows (status "ok" rows are used). Returns the number written in *written. */
bool plan_plot_rows(const json_t *rows, const char *baseline, const char *title, const char *dir, FILE *log,
		    int *written, config_error *err);
/* compare --plot: the breakdown and memory of the compared runs (whatever engine ran
 * them), plus curves around the job from the analytic engine: speedup against micro-batch
 * and sequence length, scaling against node count, memory against sequence length.
 * runs[0] is the baseline. */
bool plan_plot_compare(const report_run *runs, int n, const char *dir, FILE *log, config_error *err);

#endif
