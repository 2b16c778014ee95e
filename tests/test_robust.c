/* robust: every subcommand, every flag, bad values. The calls are generated from the
 * getopt tables the parsers use (cli_commands, cli_job_options), so a flag added later is
 * tested without a line here. Each call gets one bad value after a command line that is
 * otherwise valid and quick, and must end with exit 2 (bad input), a message on stderr
 * naming the flag, and no signal, hang or sanitizer report (the CI runs this suite under
 * ASan/UBSan too).
 *
 * Bad values: empty, negative, NaN, infinities, an overflowing and a huge number, a
 * number with junk after it, an unknown enum word, a list with an empty element, a missing
 * file, a directory where a file is expected, a device that never ends (/dev/zero).
 * Output paths (files or folders the command writes) take only the values that cannot be
 * written: any word is a valid file name for them.
 *
 * Calls run a few at a time, each in a forked child with an alarm (SPSIM_ROBUST_VERBOSE=1
 * prints each call as it starts), so the suite stays short under ASan. */
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../bench/bench.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "testutil.h"

#define MAX_ARGS 32
#define MAX_CALLS 4096
#define PARALLEL 4
#define CALL_TIMEOUT_S 10

/* LeakSanitizer's entry point when the suite runs under ASan; NULL otherwise. */
extern void __lsan_do_leak_check(void) __attribute__((weak));

static char tmpdir[] = "/tmp/spsim-robust-XXXXXX";
static char data_dir[1024];

typedef struct call {
	const char *argv[MAX_ARGS];
	int argc;
	const char *cmd;
	char flag[64];    /* "--name" the message must name ("" for positionals) */
	char alias[4][64]; /* other spellings of the same option (same val in its table) */
	int n_alias;
	const char *value;
	bool leak_check; /* under ASan: run LeakSanitizer when the call ends */
	char eq[72]; /* "--flag=1" for a flag that takes no value */
	char desc[256];
} call;

typedef struct slot {
	pid_t pid;
	int err_fd;
	char err_path[1100];
	call *c;
} slot;

static char cal_log[1100], cal_out[1100], spec[1100], sweep_out[1100];

/* The valid, quick command line each call starts from. */
static int base_args(const char *cmd, const char **argv)
{
	int n = 0;
	argv[n++] = cmd;
#define A(s) (argv[n++] = (s))
	if (strcmp(cmd, "run") == 0 || strcmp(cmd, "compare") == 0) {
		A("--model"), A("llama-3.2-1b"), A("--platform"), A("dgx-a100"), A("--seq-len"), A("4K");
		A("--engine"), A("analytic");
	} else if (strcmp(cmd, "max-seq") == 0) {
		A("--model"), A("llama-3.2-1b"), A("--platform"), A("dgx-a100");
	} else if (strcmp(cmd, "platform") == 0) {
		A("dgx-a100");
	} else if (strcmp(cmd, "collective") == 0) {
		A("allreduce"), A("--platform"), A("dgx-a100"), A("--engine"), A("analytic");
	} else if (strcmp(cmd, "calibrate") == 0) {
		A("--from-nccl-tests"), A(cal_log), A("--output"), A(cal_out);
	} else if (strcmp(cmd, "sweep") == 0) {
		A(spec), A("--output"), A(sweep_out), A("--dry-run"), A("--quiet");
	} else if (strcmp(cmd, "plan") == 0) {
		A("--model"), A("llama-3.2-1b"), A("--platform"), A("dgx-a100"), A("--gpus"), A("8");
		A("--seq-len"), A("4K"), A("--global-batch"), A("64K"), A("--verify"), A("none"), A("--quiet");
	}
#undef A
	return n;
}

/* Flags whose value is a file or folder the command writes: "bad" there means what cannot
 * be written (an empty name, a missing folder, the wrong kind of entry). */
typedef enum { V_ANY, V_OUT_FILE, V_OUT_DIR } value_kind;

static value_kind kind_of(const char *cmd, const char *flag)
{
	if (strcmp(flag, "trace") == 0)
		return V_OUT_FILE;
	if (strcmp(cmd, "calibrate") == 0 && (strcmp(flag, "output") == 0 || strcmp(flag, "out") == 0))
		return V_OUT_FILE;
	if (strcmp(flag, "plot") == 0 ||
	    (strcmp(cmd, "sweep") == 0 && (strcmp(flag, "output") == 0 || strcmp(flag, "out") == 0)))
		return V_OUT_DIR;
	return V_ANY;
}

static char missing_file[1100], a_dir[1100], a_file[1100], missing_dir_file[1100], under_file[1100];

static const char *const any_values[] = {"", "-1", "nan", "inf", "1e999", "99999999999999999999", "7x",
					 "no-such-choice", ",", "1,,2", missing_file, a_dir, "/dev/zero"};
#define N_ANY (int)(sizeof any_values / sizeof any_values[0])
/* Under ASan (CI's sanitizer pass) a call costs several times more and a leak check more
 * still (all values: about 290 s on a 2-core machine at load 12): five values that take
 * different paths (empty, NaN, an unknown word, an empty list item, a missing file), and
 * the leak check on two of them (the empty value, refused while the flags are read; the
 * missing file, refused once the job loads). */
static const char *const sanitizer_values[] = {"", "nan", "no-such-choice", "1,,2", missing_file};
#define N_SANITIZER (int)(sizeof sanitizer_values / sizeof sanitizer_values[0])
#define UNDER_SANITIZER (__lsan_do_leak_check != NULL)

/* Appends the calls of one option (a long name of table t) of command cmd. */
static int add_option_calls(call *calls, int n, const cli_command *cmd, const struct option *t, int i)
{
	const struct option *o = &t[i];
	if (strcmp(o->name, "help") == 0)
		return n;
	const char *out_file_values[] = {"", a_dir, missing_dir_file};
	const char *out_dir_values[] = {"", a_file, under_file};
	const char *const *values = UNDER_SANITIZER ? sanitizer_values : any_values;
	int nv = UNDER_SANITIZER ? N_SANITIZER : N_ANY;
	value_kind k = kind_of(cmd->name, o->name);
	if (k == V_OUT_FILE)
		values = out_file_values, nv = 3;
	else if (k == V_OUT_DIR)
		values = out_dir_values, nv = 3;
	if (o->has_arg == no_argument)
		nv = 1; /* --flag=VALUE */
	for (int v = 0; v < nv; v++) {
		ck_assert_int_lt(n, MAX_CALLS);
		call *c = &calls[n++];
		memset(c, 0, sizeof *c);
		c->argc = base_args(cmd->name, c->argv);
		c->cmd = cmd->name;
		snprintf(c->flag, sizeof c->flag, "--%s", o->name);
		/* the other spellings of the option: the same id in the command's tables */
		const struct option *tables[2] = {cmd->job_options ? cli_job_options : NULL, cmd->options};
		for (int tt = 0; tt < 2; tt++)
			for (int j = 0; tables[tt] && tables[tt][j].name; j++)
				if (tables[tt][j].val == o->val && strcmp(tables[tt][j].name, o->name) != 0 && c->n_alias < 3)
					snprintf(c->alias[c->n_alias++], 64, "--%s", tables[tt][j].name);
		if (o->val > 0 && o->val < 128 && c->n_alias < 4)
			snprintf(c->alias[c->n_alias++], 64, "-%c", o->val);
		/* the base line's own value of this option goes: a second one is refused as given
		 * twice, and the call is about the bad value */
		if (o->has_arg != no_argument)
			for (int a = 1; a + 1 < c->argc;) {
				bool same = strcmp(c->argv[a], c->flag) == 0;
				for (int al = 0; al < c->n_alias && !same; al++)
					same = strcmp(c->argv[a], c->alias[al]) == 0;
				if (!same) {
					a++;
					continue;
				}
				memmove(&c->argv[a], &c->argv[a + 2], (size_t)(c->argc - a - 2) * sizeof c->argv[0]);
				c->argc -= 2;
			}
		if (o->has_arg == no_argument) {
			snprintf(c->eq, sizeof c->eq, "--%s=1", o->name);
			c->argv[c->argc++] = c->eq;
			c->value = "=1";
			c->leak_check = true;
		} else {
			c->argv[c->argc++] = c->flag;
			c->argv[c->argc++] = values[v];
			c->value = values[v];
			c->leak_check = v == 0 || values[v] == missing_file;
		}
		c->argv[c->argc] = NULL;
		snprintf(c->desc, sizeof c->desc, "spsim %s ... %s '%s'", cmd->name, c->flag, c->value);
	}
	return n;
}

/* Positional operands: platform NAME, collective OP, sweep SPEC. */
static int add_positional_calls(call *calls, int n)
{
	static const char *pos_values[] = {"", "no-such-thing", "-", "nan", missing_file, a_dir, "/dev/zero"};
	static const struct {
		const char *cmd;
		const char *rest[4];
	} pos[] = {
		{"platform", {NULL}},
		{"collective", {"--platform", "dgx-a100", NULL}},
		{"sweep", {"--dry-run", NULL}},
	};
	for (size_t p = 0; p < sizeof pos / sizeof pos[0]; p++)
		for (size_t v = 0; v < sizeof pos_values / sizeof pos_values[0]; v++) {
			ck_assert_int_lt(n, MAX_CALLS);
		call *c = &calls[n++];
			memset(c, 0, sizeof *c);
			c->cmd = pos[p].cmd;
			c->argv[c->argc++] = pos[p].cmd;
			c->argv[c->argc++] = pos_values[v];
			for (int r = 0; pos[p].rest[r]; r++)
				c->argv[c->argc++] = pos[p].rest[r];
			c->argv[c->argc] = NULL;
			c->value = pos_values[v];
			c->leak_check = v == 0;
			snprintf(c->desc, sizeof c->desc, "spsim %s '%s' (operand)", pos[p].cmd, pos_values[v]);
		}
	return n;
}

/* The command's entry point, as main() dispatches to it. */
static int (*command_fn(const char *name))(int, char **)
{
	for (const cli_command *c = cli_commands; c->name; c++)
		if (strcmp(c->name, name) == 0)
			return c->fn;
	return NULL;
}

/* Runs one call in a forked child of this process: the command's function with the argv
 * main() would hand it. No exec: a fresh spsim process costs ~75 ms of dynamic linking,
 * which over a thousand calls is minutes; the child starts from this process's clean state
 * (no command has run in it), so the call sees what spsim would. */
static void start(slot *s, call *c)
{
	int (*fn)(int, char **) = command_fn(c->cmd);
	ck_assert_ptr_nonnull(fn);
	if (getenv("SPSIM_ROBUST_VERBOSE")) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		fprintf(stderr, "start %ld.%03ld %s\n", (long)ts.tv_sec, ts.tv_nsec / 1000000, c->desc);
	}
	snprintf(s->err_path, sizeof s->err_path, "%s/err-XXXXXX", tmpdir);
	s->err_fd = mkstemp(s->err_path);
	ck_assert_int_ge(s->err_fd, 0);
	s->c = c;
	fflush(stdout);
	fflush(stderr);
	s->pid = fork();
	ck_assert_int_ge(s->pid, 0);
	if (s->pid == 0) {
		int null = open("/dev/null", O_RDWR);
		dup2(null, 0);
		dup2(null, 1);
		dup2(s->err_fd, 2);
		if (chdir(tmpdir) != 0) /* anything a call writes by mistake lands in the temp dir */
			_exit(127);
		alarm(UNDER_SANITIZER ? 3 * CALL_TIMEOUT_S : CALL_TIMEOUT_S); /* a hang ends in SIGALRM */
		char *argv[MAX_ARGS + 1];
		for (int i = 0; i < c->argc; i++)
			argv[i] = (char *)c->argv[i];
		argv[c->argc] = NULL;
		optind = 0; /* glibc: a full getopt reset, as in a new process */
		int rc = fn(c->argc, argv);
		fflush(NULL);
		/* _exit: the libraries' destructors would touch (copy) pages shared with this
		 * process, most of a call's cost; under ASan the leak check runs here instead */
		if (UNDER_SANITIZER && c->leak_check)
			__lsan_do_leak_check();
		_exit(rc);
	}
}

/* Judges a finished call; returns false (and says why in why) when it failed. */
static bool judge(slot *s, int status, char *why, size_t len)
{
	char err[4096];
	lseek(s->err_fd, 0, SEEK_SET);
	ssize_t got = read(s->err_fd, err, sizeof err - 1);
	err[got > 0 ? got : 0] = '\0';
	close(s->err_fd);
	unlink(s->err_path);
	call *c = s->c;
	if (WIFSIGNALED(status)) {
		snprintf(why, len, "%s: killed by signal %d%s; stderr: %.300s", c->desc, WTERMSIG(status),
			 WTERMSIG(status) == SIGALRM ? " (hang)" : "", err);
		return false;
	}
	if (strstr(err, "Sanitizer") || strstr(err, "runtime error:")) {
		snprintf(why, len, "%s: sanitizer report: %.600s", c->desc, err);
		return false;
	}
	int code = WEXITSTATUS(status);
	if (code != 2) {
		snprintf(why, len, "%s: exit %d, want 2; stderr: %.300s", c->desc, code, err);
		return false;
	}
	if (c->flag[0]) {
		bool named = strstr(err, c->flag) != NULL;
		for (int a = 0; a < c->n_alias && !named; a++)
			named = strstr(err, c->alias[a]) != NULL;
		if (!named) {
			snprintf(why, len, "%s: the message does not name %s: %.300s", c->desc, c->flag, err);
			return false;
		}
	}
	if (!strchr(err, '\n')) {
		snprintf(why, len, "%s: no message on stderr", c->desc);
		return false;
	}
	return true;
}

START_TEST(every_flag_refuses_bad_values)
{
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	const char *d = getenv("SPSIM_DATA_DIR");
	ck_assert_ptr_nonnull(d);
	snprintf(data_dir, sizeof data_dir, "%s", d);
	snprintf(missing_file, sizeof missing_file, "%s/no-such-file.yaml", tmpdir);
	snprintf(a_dir, sizeof a_dir, "%s/a-dir", tmpdir);
	snprintf(a_file, sizeof a_file, "%s/a-file", tmpdir);
	snprintf(missing_dir_file, sizeof missing_dir_file, "%s/no-such-dir/out", tmpdir);
	snprintf(under_file, sizeof under_file, "%s/a-file/out", tmpdir); /* a folder that cannot be made */
	ck_assert_int_eq(mkdir(a_dir, 0755), 0);
	tu_write_file(a_file, "not a folder\n");
	snprintf(cal_log, sizeof cal_log, "%s/tests/data/nccltests/all_reduce_perf.1x8.log", data_dir);
	snprintf(cal_out, sizeof cal_out, "%s/cal.yaml", tmpdir);
	snprintf(sweep_out, sizeof sweep_out, "%s/sweep-out", tmpdir);
	snprintf(spec, sizeof spec, "%s/spec.yaml", tmpdir);
	tu_write_file(spec, "sweep:\n  model: llama-3.2-1b\n  platform: dgx-a100\n  seq_len: 4K\n  engine: analytic\n");

	call *calls = calloc(MAX_CALLS, sizeof *calls);
	ck_assert_ptr_nonnull(calls);
	int n = 0;
	for (const cli_command *cmd = cli_commands; cmd->name; cmd++) {
		const struct option *tables[2] = {cmd->job_options ? cli_job_options : NULL, cmd->options};
		for (int t = 0; t < 2; t++)
			for (int i = 0; tables[t] && tables[t][i].name; i++)
				n = add_option_calls(calls, n, cmd, tables[t], i);
	}
	n = add_positional_calls(calls, n);
	ck_assert_int_gt(n, UNDER_SANITIZER ? 500 : 1000);

	slot slots[PARALLEL] = {0};
	int next = 0, running = 0, failures = 0;
	char why[1024];
	while (next < n || running > 0) {
		while (running < PARALLEL && next < n) {
			for (int s = 0; s < PARALLEL; s++)
				if (!slots[s].pid) {
					start(&slots[s], &calls[next++]);
					running++;
					break;
				}
		}
		int status;
		pid_t pid = wait(&status);
		ck_assert_int_gt(pid, 0);
		for (int s = 0; s < PARALLEL; s++)
			if (slots[s].pid == pid) {
				if (!judge(&slots[s], status, why, sizeof why)) {
					if (failures < 400)
						fprintf(stderr, "FAIL %s\n", why);
					failures++;
				}
				slots[s].pid = 0;
				running--;
			}
	}
	fprintf(stderr, "%d calls, %d failed\n", n, failures);
	char cmdline[1200];
	snprintf(cmdline, sizeof cmdline, "rm -rf '%s'", tmpdir);
	ck_assert_int_eq(system(cmdline), 0);
	free(calls);
	ck_assert_msg(failures == 0, "%d of %d bad-value calls were not refused cleanly (listed above)", failures, n);
}
END_TEST

/* The benchmarks' numeric arguments (bench/bench.h): the whole text a number in range, so
 * that `--sizes 16k` or `--zero 2x` is refused instead of read as 16 or 2 (atoi's reading). */
START_TEST(bench_arguments_are_strict)
{
	long v = -7;
	ck_assert(bench_long("t", "x", "3", 0, 3, &v) && v == 3);
	ck_assert(bench_long("t", "x", "1048576", 1, 1048576, &v) && v == 1048576);
	const char *bad_long[] = {"16k", "2x", "", " 3", "3 ", "4", "-1", "1.5", "0x3", "99999999999999999999999"};
	for (size_t i = 0; i < sizeof bad_long / sizeof *bad_long; i++) {
		v = -7;
		ck_assert_msg(!bench_long("t", "x", bad_long[i], 0, 3, &v), "'%s' taken", bad_long[i]);
		ck_assert_int_eq(v, -7); /* untouched on error */
	}
	ck_assert(!bench_long("t", "x", NULL, 0, 3, &v));
	double d = -7;
	ck_assert(bench_double("t", "x", "600", 1e-3, 1e7, &d) && d == 600);
	ck_assert(bench_double("t", "x", "2.5e1", 1e-3, 1e7, &d) && d == 25);
	const char *bad_double[] = {"nan", "inf", "-inf", "1e400", "0", "-5", "1e8", "600s", ""};
	for (size_t i = 0; i < sizeof bad_double / sizeof *bad_double; i++) {
		d = -7;
		ck_assert_msg(!bench_double("t", "x", bad_double[i], 1e-3, 1e7, &d), "'%s' taken", bad_double[i]);
		ck_assert(d == -7);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("robust");
	TCase *tc = tcase_create("robust");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, every_flag_refuses_bad_values);
	tcase_add_test(tc, bench_arguments_are_strict);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
