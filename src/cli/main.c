/* spsim: command dispatch. Only this file decides to exit. */
#include <stdio.h>
#include <string.h>

#include "spsim_build.h"
#include "cli/cli.h"
#include "cli/commands.h"

typedef struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
} command;

static const command commands[] = {
	{"run", cli_cmd_run, "simulate one training step: time, breakdown, memory"},
	{"compare", cli_cmd_compare, "the same job under several strategies, side by side"},
	{"max-seq", cli_cmd_max_seq, "longest sequence that fits in memory for a job"},
	{"models", cli_cmd_models, "list shipped models"},
	{"platforms", cli_cmd_platforms, "list shipped clusters"},
	{"platform", cli_cmd_platform, "show one cluster (--xml: its SimGrid platform)"},
	{"collective", cli_cmd_collective, "one collective in nccl-tests' format (--compare LOG: against a real log)"},
	{"calibrate", cli_cmd_calibrate, "calibration YAML fitted to nccl-tests logs"},
	{"sweep", cli_cmd_sweep, "run a grid of jobs from a spec, in parallel, resumable (mpirun-aware)"},
	{"plan", cli_cmd_plan, "search configurations for a model, GPU budget and batch; rank and explain"},
	{NULL, NULL, NULL},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: spsim COMMAND [options]   (spsim COMMAND --help for its options)\n\n"
		   "Predicts step time, communication and memory of sequence-parallel LLM training\n"
		   "(DeepSpeed-Ulysses, BASP) on any cluster.\n\ncommands:\n");
	for (int i = 0; commands[i].name; i++)
		fprintf(f, "  %-12s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\nExample: spsim compare --model llama-3.1-8b --platform a100-2x4-ib400 --micro-batch 2 --seq-len 16K\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return CLI_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return CLI_OK;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("spsim %s\n", SPSIM_VERSION);
		return CLI_OK;
	}
	for (int i = 0; commands[i].name; i++)
		if (strcmp(argv[1], commands[i].name) == 0)
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "spsim: unknown command '%s'\n\n", argv[1]);
	usage(stderr);
	return CLI_USAGE;
}
