/* The subcommands; each takes argv[0] = its own name and returns an exit code. */
#ifndef SPSIM_CLI_COMMANDS_H
#define SPSIM_CLI_COMMANDS_H

int cli_cmd_run(int argc, char **argv);
int cli_cmd_compare(int argc, char **argv);
int cli_cmd_max_seq(int argc, char **argv);
int cli_cmd_models(int argc, char **argv);
int cli_cmd_platforms(int argc, char **argv);
int cli_cmd_platform(int argc, char **argv);

#endif
