/* The subcommands; each takes argv[0] = its own name and returns an exit code. */
#ifndef SPSIM_CLI_COMMANDS_H
#define SPSIM_CLI_COMMANDS_H

#include <getopt.h>
#include <stdbool.h>

int cli_cmd_run(int argc, char **argv);
int cli_cmd_compare(int argc, char **argv);
int cli_cmd_max_seq(int argc, char **argv);
int cli_cmd_models(int argc, char **argv);
int cli_cmd_platforms(int argc, char **argv);
int cli_cmd_platform(int argc, char **argv);
/* spsim collective OP: one collective in nccl-tests' format (cmd_collective.c) */
int cli_cmd_collective(int argc, char **argv);
/* spsim calibrate --from-nccl-tests LOG...: calibration YAML from nccl-tests logs (cmd_calibrate.c) */
int cli_cmd_calibrate(int argc, char **argv);
/* spsim sweep SPEC.yaml: a grid of jobs, parallel and resumable (cmd_sweep.c) */
int cli_cmd_sweep(int argc, char **argv);
/* spsim plan: configuration search for a model, budget and batch (cmd_plan.c) */
int cli_cmd_plan(int argc, char **argv);

/* The long options each getopt_long parser accepts (NULL-terminated). run, compare and
 * max-seq accept cli_job_options followed by their own table. */
extern const struct option cli_run_options[], cli_compare_options[], cli_max_seq_options[];
extern const struct option cli_collective_options[], cli_calibrate_options[];
extern const struct option cli_sweep_options[], cli_plan_options[];
extern const struct option cli_models_options[], cli_platforms_options[], cli_platform_options[];

typedef struct cli_command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
	const struct option *options; /* the command's own long options */
	bool job_options; /* cli_job_options come first */
} cli_command;

/* Every subcommand, in the order `spsim --help` lists them; NULL-terminated. */
extern const cli_command cli_commands[];

#endif
