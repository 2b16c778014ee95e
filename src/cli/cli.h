/* cli: command-line parsing shared by the subcommands. Only main() exits. */
#ifndef SPSIM_CLI_CLI_H
#define SPSIM_CLI_CLI_H

#include <getopt.h>
#include <stdio.h>

#include "config/config.h"
#include "config/ranges.h"
#include "engine/engine.h"
#include "report/report.h"

/* Exit codes: 0 success, 1 internal failure, 2 bad input (usage, YAML, job). */
enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2, CLI_INTERRUPTED = 130 /* 128 + SIGINT: partial results */ };

/* Everything that names a job: model, platform, job flags, engine and output. */
typedef struct cli_job_args {
	char model[CONFIG_PATH_MAX];
	char platform[CONFIG_PATH_MAX];
	char calibration[CONFIG_PATH_MAX];
	char job_file[CONFIG_PATH_MAX];
	int nodes;
	config_job job;
	/* which job fields were given on the command line (they override a job YAML) */
	unsigned set;
	const char *engine;
	bool engine_given; /* --engine was on the command line */
	report_format format;
	const char *trace;
	engine_options opt;
	int cp_comm_type;     /* --cp-comm-type (config_cp_comm_type), -1 when not given */
	config_whatif whatif; /* --slow-gpu, --slow-node, --degrade, --fail-node, --background (then the job file's) */
	/* loaded */
	config_model m;
	config_platform p;
	config_calibration cal;
	bool has_cal;
} cli_job_args;

/* getopt_long option ids for the shared job flags (>= 256 so they never clash with short options). */
enum {
	CLI_OPT_MODEL = 256,
	CLI_OPT_PLATFORM,
	CLI_OPT_NODES,
	CLI_OPT_CALIBRATION,
	CLI_OPT_JOB,
	CLI_OPT_GPUS,
	CLI_OPT_STRATEGY,
	CLI_OPT_SP,
	CLI_OPT_MICRO_BATCH,
	CLI_OPT_SEQ_LEN,
	CLI_OPT_GRAD_ACCUM,
	CLI_OPT_ZERO,
	CLI_OPT_RECOMPUTE,
	CLI_OPT_DTYPE,
	CLI_OPT_ZERO_OVERLAP,
	CLI_OPT_REDUCE_BUCKET,
	CLI_OPT_ALLGATHER_BUCKET,
	CLI_OPT_PREFETCH_BUCKET,
	CLI_OPT_FP32_GRAD_COMM,
	CLI_OPT_ENGINE,
	CLI_OPT_FORMAT,
	CLI_OPT_TRACE,
	CLI_OPT_PLACEMENT,
	CLI_OPT_HELP,
	CLI_OPT_A2A,
	CLI_OPT_BASP_UNEVEN,
	CLI_OPT_IMPL,
	CLI_OPT_ZERO3_PREFETCH,
	CLI_OPT_MEMORY_RESERVE,
	CLI_OPT_ATTENTION_KERNEL,
	CLI_OPT_ULYSSES_DEGREE,
	CLI_OPT_RING_DEGREE,
	CLI_OPT_CP_COMM_TYPE,
	CLI_OPT_SLOW_GPU, /* the four what-ifs, in config_whatif_kind order */
	CLI_OPT_SLOW_NODE,
	CLI_OPT_DEGRADE,
	CLI_OPT_FAIL_NODE,
	CLI_OPT_BACKGROUND,
	CLI_OPT_OFFLOAD_ACTIVATIONS,
	CLI_OPT_TILE_MLP,
	CLI_OPT_TILE_LOGITS,
	CLI_OPT_OFFLOAD_OPTIMIZER,
	CLI_OPT_CONTIGUOUS_GRADIENTS,
	CLI_OPT_FIRST_FREE, /* commands number their own options from here */
};

/* The shared job options, NULL-terminated, for building a command's option table. */
extern const struct option cli_job_options[];
/* "simgrid|analytic (default simgrid)\n": the engines built in, the first the default. */
void cli_engine_choices(FILE *f);
/* Help text for the shared job options. */
void cli_job_help(FILE *f);

void cli_job_init(cli_job_args *a);
/* Handles one getopt_long result; returns 1 if consumed, 0 if not a job option, -1 on
 * error (message printed). */
int cli_job_option(cli_job_args *a, int id, const char *arg);
/* Loads job YAML, applies flags over it, loads model/platform/calibration, checks the job.
 * Prints the error and returns false on failure. */
bool cli_job_resolve(cli_job_args *a, const char *cmd);
/* Checks, before any work, that a file can be written at path (its folder exists and is
 * writable, path is not a directory); prints a sentence naming flag and returns false. */
bool cli_check_output_file(const char *flag, const char *path);
/* The same for a folder the command creates or fills (--plot DIR, sweep's --output DIR):
 * not empty, not an existing file, and creatable: its parent exists (or, with
 * make_parents, its nearest existing ancestor is a folder) and is writable. */
bool cli_check_output_dir(const char *flag, const char *path, bool make_parents);
/* Checks that the output file at path is none of the n inputs (NULL or "" skipped): the
 * same file under any name would be overwritten. Prints a sentence naming flag and
 * returns false if it is one. */
bool cli_check_not_input(const char *flag, const char *path, const char *const *inputs, int n);
/* Whether a job flag (a CLI_OPT_* id) was given on the command line (--placement: set to
 * other than contiguous). */
bool cli_job_given(const cli_job_args *a, int opt_id);
/* Warns on stderr (does not fail) when seq_len exceeds the model's max_position. */
void cli_warn_max_position(const config_model *m, long seq_len, const char *cmd);

/* A comma list given to flag (sep: ',' or '+'): false, with "spsim CMD: FLAG ..." printed,
 * when it is empty, has an empty item ("1,,2", ",4", "4,") or is longer than max_len
 * characters (the buffers it is split in). strtok would skip the empty items silently. */
bool cli_check_list(const char *cmd, const char *flag, const char *list, char sep, size_t max_len);
/* False (said) when a checked list names one item twice: "spsim CMD: FLAG lists 'X' twice". */
bool cli_list_once(const char *cmd, const char *flag, const char *list, char sep);

/* Strict number parsing for flags: prints "--flag expects ..., got 'x'" on failure. */
bool cli_parse_int(const char *flag, const char *s, long min, long max, long *out);
bool cli_parse_double(const char *flag, const char *s, double lo, double hi, double *out);
/* A collective size in nccl-tests' syntax (8, 64K, 1M, 8G: powers of 1024) within the
 * range table's collective sizes; prints "spsim CMD: FLAG expects ..." on failure. */
bool cli_parse_coll_size(const char *cmd, const char *flag, const char *s, double *out);
/* A flag of the range table (config/ranges.h): parsed and checked as the YAML keys are;
 * prints "FLAG expects EXPECT, got 'x'" on failure. */
bool cli_parse_range(config_range_id id, const char *arg, double *out);
bool cli_parse_range_long(config_range_id id, const char *arg, long *out);
/* The same for a row read under another spelling of its flag (-g for --groups, -j for
 * --jobs, --point-timeout for --timeout); flag names it in the message. */
bool cli_parse_range_as(config_range_id id, const char *flag, const char *arg, double *out);
bool cli_parse_range_long_as(config_range_id id, const char *flag, const char *arg, long *out);

/* One simulated job: its composite (one part unless BASP with N % B != 0), the plan
 * whose result is reported, the result, and per-part results of unequal groups. */
typedef struct cli_sim {
	workload_composite comp;
	const workload_plan *plan;
	engine_result res;
	engine_result parts[WORKLOAD_MAX_PARTS];
} cli_sim;

/* Runs one job through the chosen engine. Caller calls cli_sim_finish. Prints errors. */
bool cli_simulate(const cli_job_args *a, const config_job *job, cli_sim *out);
void cli_sim_finish(cli_sim *s);
/* The report of a simulated job. */
report_run cli_sim_report(const cli_job_args *a, const config_job *job, const cli_sim *s, const char *label);

/* getopt_long returned ':' (a value missing) or '?' (an unknown option) for argv, whose
 * argv[0] is the command: prints the sentence and returns CLI_USAGE. */
/* The command being run ("run", "plan", ...), set once by the dispatcher, so that errors
 * raised by the shared parsers name it: "spsim plan: --gpus expects ..." (NULL: "spsim: "). */
void cli_set_command(const char *name);
/* An error line on stderr prefixed "spsim CMD: " (the command set above). */
void cli_errorf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* --processes per_gpu|per_node (collective, calibrate): *out becomes the CONFIG_NCCL_PROCS_*
 * value; anything else is refused with "spsim CMD: --processes 'x' is not a process layout". */
bool cli_parse_processes(const char *arg, int *out);
/* --progress (progress true) or --quiet: *mode becomes 1 or 0 from -1 (neither given yet);
 * both given is refused with a message (the second would undo the first in silence). */
bool cli_progress_flag(int *mode, bool progress);
int cli_getopt_refused(int c, char **argv);
/* The value-taking options a command has seen, for cli_option_once (zero-initialise). */
#define CLI_SEEN_IDS 1024
typedef struct cli_seen {
	const char *value[CLI_SEEN_IDS];
	bool seen[CLI_SEEN_IDS];
} cli_seen;
/* False, with "spsim CMD: --flag given twice ('a', then 'b'), expected it once ..." printed,
 * when option id, one of opts that takes a value, was given before under any of its
 * spellings: the later value would replace the earlier without a word. Options that
 * accumulate (the what-ifs, list flags that append) are named in repeatable, a 0-terminated
 * list (NULL: none). */
bool cli_option_once(cli_seen *s, const struct option *opts, int id, const char *arg, const char *cmd,
		     const int *repeatable);

/* Fills out the option table: cli_job_options followed by extra (NULL-terminated). */
struct option *cli_options_concat(const struct option *extra);

#endif
