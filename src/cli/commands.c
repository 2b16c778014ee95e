/* The subcommand table: what main() dispatches on and what the tests walk to hold every
 * parser's long options to its --help text. */
#include "cli/cli.h"
#include "cli/commands.h"

const cli_command cli_commands[] = {
	{"run", cli_cmd_run, "simulate one training step: time, breakdown, memory", cli_run_options, true},
	{"compare", cli_cmd_compare, "the same job under several strategies, side by side", cli_compare_options,
	 true},
	{"max-seq", cli_cmd_max_seq, "longest sequence that fits in memory for a job", cli_max_seq_options, true},
	{"models", cli_cmd_models, "list shipped models", cli_models_options, false},
	{"platforms", cli_cmd_platforms, "list shipped clusters", cli_platforms_options, false},
	{"platform", cli_cmd_platform, "show one cluster (--xml: its SimGrid platform)", cli_platform_options,
	 false},
	{"collective", cli_cmd_collective, "one collective in nccl-tests' format (--compare LOG: against a real log)",
	 cli_collective_options, false},
	{"calibrate", cli_cmd_calibrate, "calibration YAML fitted to nccl-tests logs", cli_calibrate_options, false},
	{"sweep", cli_cmd_sweep, "run a grid of jobs from a spec, in parallel, resumable (mpirun-aware)",
	 cli_sweep_options, false},
	{"plan", cli_cmd_plan, "search configurations for a model, GPU budget and batch; rank and explain",
	 cli_plan_options, false},
	{NULL, NULL, NULL, NULL, false},
};
