/* spsim: command dispatch. Only this file decides to exit. */
#include <stdio.h>
#include <string.h>

#include "spsim_build.h"
#include "cli/cli.h"
#include "cli/commands.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: spsim COMMAND [options]   (spsim COMMAND --help for its options)\n\n"
		   "Predicts step time, communication and memory of sequence-parallel LLM training\n"
		   "(DeepSpeed-Ulysses, BASP) on any cluster.\n\ncommands:\n");
	for (int i = 0; cli_commands[i].name; i++)
		fprintf(f, "  %-12s %s\n", cli_commands[i].name, cli_commands[i].summary);
	fprintf(f, "\nExample: spsim compare --model llama-3.1-8b --platform a100-2x4-ib400 \\\n"
		   "         --micro-batch 2 --seq-len 16K --zero 3 --recompute full\n");
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
	for (int i = 0; cli_commands[i].name; i++)
		if (strcmp(argv[1], cli_commands[i].name) == 0) {
			cli_set_command(cli_commands[i].name);
			return cli_commands[i].fn(argc - 1, argv + 1);
		}
	cli_errorf("unknown command '%s'\n\n", argv[1]);
	usage(stderr);
	return CLI_USAGE;
}
