/* The subcommands; each takes argv[0] = its own name and returns an exit code. */
#ifndef SPSIM_CLI_COMMANDS_H
#define SPSIM_CLI_COMMANDS_H

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

#endif
