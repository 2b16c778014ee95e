/* spsim run, compare, max-seq */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "plan/plan.h"

enum { OPT_STRATEGIES = CLI_OPT_FIRST_FREE, OPT_GRANULE, OPT_PLOT, OPT_PROGRESS, OPT_QUIET, OPT_WHAT_IF, OPT_TECHNIQUES };

static void run_help(FILE *f)
{
	fputs("usage: spsim run --model NAME --platform NAME --seq-len S [options]\n"
	      "Simulates one training step and reports step time, its breakdown and memory per GPU.\n\n"
	      "  --progress               a SimGrid run's blocks simulated, rate and ETA on stderr even when it\n"
	      "                           is not a terminal (on a terminal a bar once a run passes 1 s)\n"
	      "  --quiet                  no progress (not with --progress)\n",
	      f);
	cli_job_help(f);
}

/* Progress of one SimGrid run (engine_options.progress): the blocks of the program the
 * first GPU stream has walked. Called inside the simulation, which may be a child process
 * with its own copy of this state. */
typedef struct run_progress {
	int mode; /* 1 --progress: lines in logs; -1: a bar once past 1 s on a terminal; 0 none */
	bool started;
	double t0;
	plan_progress p;
} run_progress;

static double run_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void run_progress_cb(void *ctx, long done, long total)
{
	run_progress *rp = ctx;
	if (!rp->started) {
		rp->started = true;
		rp->t0 = run_now();
	}
	if (rp->mode < 0 && run_now() - rp->t0 < 1 && !rp->p.f)
		return; /* a run under a second says nothing */
	if (!rp->p.f) {
		plan_progress_start(&rp->p, stderr, total, false);
		rp->p.unit = "blocks";
		rp->p.no_failures = true;
	}
	plan_progress_update(&rp->p, done, 0);
	if (done >= total)
		plan_progress_end(&rp->p);
}

static int run_opt(void *ctx, int id, const char *arg)
{
	(void)arg;
	if (id == OPT_PROGRESS || id == OPT_QUIET) {
		return cli_progress_flag(&((run_progress *)ctx)->mode, id == OPT_PROGRESS) ? 1 : -1;
	}
	return 0;
}

/* CSV: the sweep's row columns (docs/planning.md "Rows"), one row per run. */
static void emit_csv(const report_run *runs, int n)
{
	plan_row_csv_header(stdout);
	for (int i = 0; i < n; i++) {
		json_t *row = plan_row_from_run(&runs[i], i);
		if (row)
			plan_row_csv(stdout, row);
		json_decref(row);
	}
}

static void emit_run(const cli_job_args *a, const report_run *r)
{
	if (a->format == REPORT_JSON) {
		json_t *j = report_run_json(r);
		report_json_print(stdout, j);
		json_decref(j);
	} else if (a->format == REPORT_CSV) {
		emit_csv(r, 1);
	} else {
		report_run_table(stdout, r);
	}
}

/* Parses argv into a; returns -1 to continue, else the exit code. extra_cb handles
 * command-specific options. */
typedef int (*extra_fn)(void *ctx, int id, const char *arg);
static int parse(int argc, char **argv, cli_job_args *a, const struct option *extra, extra_fn cb, void *ctx,
		 void (*help)(FILE *))
{
	struct option *opts = cli_options_concat(extra);
	if (!opts) {
		cli_errorf("out of memory\n");
		return CLI_FAIL;
	}
	/* the what-ifs add up; every other value-taking option is given once */
	static const int repeatable[] = {CLI_OPT_SLOW_GPU, CLI_OPT_SLOW_NODE, CLI_OPT_DEGRADE, CLI_OPT_FAIL_NODE,
					 CLI_OPT_BACKGROUND, OPT_WHAT_IF, 0};
	cli_seen *seen = calloc(1, sizeof *seen);
	int c, rc = seen ? -1 : CLI_FAIL;
	optind = 1;
	opterr = 0;
	while (rc < 0 && (c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
		if (c == CLI_OPT_HELP) {
			help(stdout);
			rc = CLI_OK;
		} else if (c == '?' || c == ':') {
			rc = cli_getopt_refused(c, argv);
		} else if (!cli_option_once(seen, opts, c, optarg, argv[0], repeatable)) {
			rc = CLI_USAGE;
		} else {
			/* the command's own options first: max-seq takes lists where run takes one value */
			int r = cb ? cb(ctx, c, optarg) : 0;
			if (r == 0)
				r = cli_job_option(a, c, optarg);
			if (r <= 0)
				rc = CLI_USAGE;
		}
	}
	if (rc < 0 && optind < argc) {
		fprintf(stderr, "spsim %s: unexpected argument '%s' (see spsim %s --help)\n", argv[0], argv[optind],
			argv[0]);
		rc = CLI_USAGE;
	}
	free(seen);
	free(opts);
	return rc;
}

/* run's own options; the job options (cli_job_options) come before them */
const struct option cli_run_options[] = {
	{"progress", no_argument, NULL, OPT_PROGRESS},
	{"quiet", no_argument, NULL, OPT_QUIET},
	{NULL, 0, NULL, 0},
};

int cli_cmd_run(int argc, char **argv)
{
	cli_job_args a;
	cli_job_init(&a);
	run_progress prog = {.mode = -1};
	int rc = parse(argc, argv, &a, cli_run_options, run_opt, &prog, run_help);
	if (rc >= 0)
		return rc;
	if (!cli_job_resolve(&a, "run"))
		return CLI_USAGE;
	/* the planner's convention: --progress lines anywhere, a bar on a terminal, pipes clean */
	if (prog.mode < 0 && !isatty(fileno(stderr)))
		prog.mode = 0;
	if (prog.mode != 0) {
		a.opt.progress = run_progress_cb;
		a.opt.progress_ctx = &prog;
	}
	cli_sim *sim = malloc(sizeof *sim);
	if (!sim)
		return CLI_FAIL;
	if (!cli_simulate(&a, &a.job, sim)) {
		free(sim);
		return CLI_FAIL;
	}
	report_run r = cli_sim_report(&a, &a.job, sim, NULL);
	emit_run(&a, &r);
	cli_sim_finish(sim);
	free(sim);
	return CLI_OK;
}

/* ------------------------------------------------------------------ compare */
#define MAX_STRATEGIES 16

typedef struct compare_ctx {
	char *strategies;
	const char *plot; /* --plot DIR */
	const char *what_if[MAX_STRATEGIES]; /* --what-if SPEC, one column each */
	int n_what_if;
	int progress;     /* 1 --progress, 0 --quiet, -1 when stderr is a terminal */
} compare_ctx;

static int compare_opt(void *ctx, int id, const char *arg)
{
	compare_ctx *c = ctx;
	if (id == OPT_PLOT) {
		c->plot = arg;
		return cli_check_output_dir("--plot", arg, true) ? 1 : -1;
	}
	if (id == OPT_WHAT_IF) {
		if (c->n_what_if == MAX_STRATEGIES - 1) {
			fprintf(stderr, "spsim compare: --what-if: at most %d\n", MAX_STRATEGIES - 1);
			return -1;
		}
		c->what_if[c->n_what_if++] = arg;
		return 1;
	}
	if (id == OPT_PROGRESS || id == OPT_QUIET) {
		return cli_progress_flag(&c->progress, id == OPT_PROGRESS) ? 1 : -1;
	}
	if (id == OPT_STRATEGIES) {
		if (!cli_check_list("compare", "--strategies", arg, ',', 4096))
			return -1;
		free(c->strategies);
		c->strategies = strdup(arg);
		return c->strategies ? 1 : -1;
	}
	return 0;
}

static void compare_help(FILE *f)
{
	fputs("usage: spsim compare --model NAME --platform NAME --seq-len S [--strategies LIST] [options]\n"
	      "Runs the same job under several strategies and prints them side by side, with speedups\n"
	      "over the first.\n\n"
	      "  --strategies LIST        comma-separated, default ulysses,basp. Each entry is a --strategy spec\n"
	      "                           (ulysses, basp, ring[:split=..][:comm=p2p|all_gather], usp[:u=U:r=R],\n"
	      "                           basp:inner=ring|usp[...]), optionally with its own SP size: ulysses:sp=4\n"
	      "                           is Ulysses with SP 4 and W/4 data-parallel replicas, each taking\n"
	      "                           micro-batch B (basp.md's 'Ulysses with SP = N/B' alternative)\n"
	      "  --trace FILE             one trace per strategy: FILE with the label before the extension\n"
	      "  --what-if SPEC           a column beside the baseline (the first strategy) with asymmetric\n"
	      "                           what-ifs: KIND=VALUE joined by '+', KIND slow-gpu, slow-node, degrade,\n"
	      "                           fail-node or background, e.g. slow-gpu=3:2+degrade=nic:0:2 (repeatable; simgrid\n"
	      "                           engine, or analytic for slow-gpu, slow-node, NIC or port degrade and fail-node;\n"
	      "                           without --strategies the baseline is the job's strategy)\n"
	      "  --plot DIR               figures (SVG, PNG; gnuplot) of the comparison and, from the analytic\n"
	      "                           engine, of speedup and memory around it (docs/planning.md)\n"
	      "  --progress               runs done, rate and ETA on stderr even when it is not a terminal (on a\n"
	      "                           terminal they are shown for the simgrid engine; --quiet: never; not both)\n\n",
	      f);
	cli_job_help(f);
}

/* "ulysses", "basp", "ulysses:sp=4" */
static bool parse_strategy(const char *cmd, const char *flag, const char *spec, config_job *job)
{
	config_error e;
	if (!config_strategy_parse(spec, job, &job->sp, &e)) {
		fprintf(stderr, "spsim %s: %s: %s\n", cmd, flag, e.msg);
		return false;
	}
	if (!config_job_usp(job)) /* USP's degrees */
		job->ulysses_degree = job->ring_degree = 0;
	else if (strstr(spec, ":u=") || strstr(spec, ":r="))
		; /* the spec's own */
	else
		job->ulysses_degree = job->ring_degree = 0; /* derived per entry */
	return true;
}

static void trace_name(const char *base, const char *label, char *out, size_t len)
{
	const char *dot = strrchr(base, '.');
	const char *slash = strrchr(base, '/');
	if (!dot || (slash && dot < slash))
		dot = base + strlen(base);
	char clean[64];
	size_t k = 0;
	for (const char *s = label; *s && k + 1 < sizeof clean; s++)
		clean[k++] = (*s == ':' || *s == '=' || *s == '/') ? '-' : *s;
	clean[k] = '\0';
	snprintf(out, len, "%.*s-%s%s", (int)(dot - base), base, clean, dot);
}

/* compare's own options, after the job options */
const struct option cli_compare_options[] = {
	{"strategies", required_argument, NULL, OPT_STRATEGIES},
	{"plot", required_argument, NULL, OPT_PLOT},
	{"what-if", required_argument, NULL, OPT_WHAT_IF},
	{"progress", no_argument, NULL, OPT_PROGRESS},
	{"quiet", no_argument, NULL, OPT_QUIET},
	{NULL, 0, NULL, 0},
};

/* A column is keyed by its label (JSON's speedups, --trace's file names): a label given
 * twice would share the first's key. Says so, naming the flag. */
static bool repeated_label(char *const *labels, int n, const char *label, const char *flag)
{
	for (int i = 0; i < n; i++)
		if (strcmp(labels[i], label) == 0) {
			fprintf(stderr, "spsim compare: %s lists '%s' twice, expected each spec once (its column is keyed by "
					"it: the JSON speedups, the --trace file names)\n", flag, label);
			return true;
		}
	return false;
}

int cli_cmd_compare(int argc, char **argv)
{
	cli_job_args a;
	compare_ctx ctx = {.progress = -1};
	cli_job_init(&a);
	int rc = parse(argc, argv, &a, cli_compare_options, compare_opt, &ctx, compare_help);
	if (rc >= 0) {
		free(ctx.strategies);
		return rc;
	}
	if (cli_job_given(&a, CLI_OPT_STRATEGY) || cli_job_given(&a, CLI_OPT_CP_COMM_TYPE)) {
		fprintf(stderr, "spsim compare: --%s names one job's strategy; compare runs the list given by "
				"--strategies (e.g. --strategies ulysses,basp,ring,ring:comm=all_gather,usp)\n",
			cli_job_given(&a, CLI_OPT_STRATEGY) ? "strategy" : "cp-comm-type");
		free(ctx.strategies);
		return CLI_USAGE;
	}
	if (!cli_job_resolve(&a, "compare")) {
		free(ctx.strategies);
		return CLI_USAGE;
	}
	char job_label[64]; /* the job's whole spec: basp:inner=ring:comm=all_gather, usp:u=4:r=2 */
	char *list = ctx.strategies		? ctx.strategies
		     : ctx.n_what_if > 0 ? strdup(config_strategy_label(&a.job, job_label, sizeof job_label))
					  : strdup("ulysses,basp");
	if (!list)
		return CLI_FAIL;
	char *labels[MAX_STRATEGIES];
	config_job jobs[MAX_STRATEGIES];
	cli_sim *sims = calloc(MAX_STRATEGIES, sizeof *sims);
	if (!sims) {
		free(list);
		return CLI_FAIL;
	}
	char traces[MAX_STRATEGIES][CONFIG_PATH_MAX + 64];
	report_run runs[MAX_STRATEGIES];
	int n = 0;
	rc = CLI_OK;
	char *save = NULL;
	for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n == MAX_STRATEGIES) {
			fprintf(stderr, "spsim compare: at most %d strategies\n", MAX_STRATEGIES);
			rc = CLI_USAGE;
			break;
		}
		if (repeated_label(labels, n, tok, "--strategies")) {
			rc = CLI_USAGE;
			break;
		}
		jobs[n] = a.job;
		if (!parse_strategy("compare", "--strategies", tok, &jobs[n])) {
			rc = CLI_USAGE;
			break;
		}
		config_error err;
		if (!workload_check(&a.m, &a.p, &jobs[n], &err)) {
			fprintf(stderr, "spsim compare: %s: %s\n", tok, err.msg);
			rc = CLI_USAGE;
			break;
		}
		labels[n] = tok;
		n++;
	}
	if (rc == CLI_OK && n == 0) {
		fprintf(stderr, "spsim compare: --strategies is empty\n");
		rc = CLI_USAGE;
	}
	/* what-if columns: the first strategy's job with the run's what-ifs and the column's */
	config_whatif *wi = calloc(MAX_STRATEGIES, sizeof *wi);
	if (!wi)
		rc = CLI_FAIL;
	for (int k = 0; rc == CLI_OK && k < ctx.n_what_if; k++) {
		if (n == MAX_STRATEGIES) {
			fprintf(stderr, "spsim compare: at most %d strategies and what-ifs together\n", MAX_STRATEGIES);
			rc = CLI_USAGE;
			break;
		}
		if (repeated_label(labels, n, ctx.what_if[k], "--what-if")) {
			rc = CLI_USAGE;
			break;
		}
		config_error err;
		wi[n] = a.whatif;
		engine_options o = a.opt;
		o.whatif = &wi[n];
		if (!config_whatif_parse_spec(&wi[n], ctx.what_if[k], &err) ||
		    !config_whatif_check(&wi[n], &a.p, jobs[0].gpus, &err) || !engine_whatif_supported(a.engine, &o, &err)) {
			fprintf(stderr, "spsim compare: %s\n", err.msg);
			rc = CLI_USAGE;
			break;
		}
		jobs[n] = jobs[0];
		labels[n] = (char *)ctx.what_if[k];
		n++;
	}
	int done = 0;
	/* SimGrid runs take seconds to minutes each: their count, rate and ETA on a terminal
	 * (or with --progress); the analytic engine's take microseconds and say nothing. */
	plan_progress prog;
	bool show = ctx.progress == 1 ||
		    (ctx.progress < 0 && strcmp(a.engine, "analytic") != 0 && isatty(fileno(stderr)));
	plan_progress_start(&prog, stderr, n, !show || rc != CLI_OK);
	prog.unit = "runs";
	for (int i = 0; rc == CLI_OK && i < n; i++) {
		cli_job_args ai = a;
		if (wi && wi[i].n > 0)
			ai.opt.whatif = &wi[i];
		if (a.trace) {
			trace_name(a.trace, labels[i], traces[i], sizeof traces[i]);
			ai.opt.trace_path = traces[i];
		}
		if (!cli_simulate(&ai, &jobs[i], &sims[i])) {
			rc = CLI_FAIL;
			break;
		}
		done++;
		plan_progress_update(&prog, done, 0);
		runs[i] = cli_sim_report(&a, &jobs[i], &sims[i], labels[i]);
		runs[i].whatif = ai.opt.whatif; /* the column's own (wi[i] outlives the loop) */
	}
	if (rc == CLI_OK)
		plan_progress_end(&prog);
	if (rc == CLI_OK) {
		if (a.format == REPORT_JSON) {
			json_t *j = report_compare_json(runs, n);
			report_json_print(stdout, j);
			json_decref(j);
		} else if (a.format == REPORT_CSV) {
			emit_csv(runs, n);
		} else {
			report_compare_table(stdout, runs, n);
		}
		config_error perr;
		if (ctx.plot && !plan_plot_compare(runs, n, ctx.plot, stderr, &perr)) {
			fprintf(stderr, "spsim compare: --plot: %s\n", perr.msg);
			rc = CLI_FAIL;
		}
	}
	for (int i = 0; i < done; i++)
		cli_sim_finish(&sims[i]);
	free(sims);
	free(wi);
	free(list);
	return rc;
}

/* ------------------------------------------------------------------ max-seq */
static void maxseq_help(FILE *f)
{
	fputs("usage: spsim max-seq --model NAME --platform NAME [options]\n"
	      "Prints the longest sequence that fits in GPU memory for the job, searched in steps of\n"
	      "--granule tokens (default 1024, rounded up to a multiple of the sequence shard count), and\n"
	      "what blocks a longer one: the model states (parameters, gradients, optimizer; they do not\n"
	      "shrink with the sequence) or the activations, with the setting that would go further (or\n"
	      "the search limit: lengths past 2^30 tokens are not searched; the answer is then a floor).\n"
	      "--strategy, --zero and --recompute take comma lists; every combination is one row:\n"
	      "  spsim max-seq ... --strategy ulysses,basp --zero 2,3 --recompute none,full\n"
	      "The answer is a memory bound, the same for every engine (--engine and --seq-len are not used,\n"
	      "with a note); --trace is an error (nothing is simulated).\n\n"
	      "  --granule T              search step in tokens (default 1024)\n"
	      "  --strategy LIST          ulysses, basp, ring, usp (spellings as in spsim run --help), or\n"
	      "                           NAME:sp=N (alias --strategies)\n"
	      "  --zero LIST              ZeRO stages, e.g. 2,3\n"
	      "  --recompute LIST         none, selective, full, or a list of them\n"
	      "  --techniques LIST        one table instead: rows the strategies (x ZeRO stages), one column per\n"
	      "                           technique set, each the longest sequence: which technique buys how\n"
	      "                           much. A set is none, selective, full, offload (full + activation\n"
	      "                           offload), tiling (full + tiled MLP and logits), all (full + offload\n"
	      "                           + tiling), or names joined by '+' (e.g. selective+tiling); 'table'\n"
	      "                           is none,selective,full,offload,tiling,all. Tiles: --tile-mlp and\n"
	      "                           --tile-logits, else 16 each\n\n",
	      f);
	cli_job_help(f);
}

#define MAXSEQ_MAX_ROWS 64

typedef struct maxseq_ctx {
	long granule;
	char *strategies; /* comma list, or NULL: the job's */
	char *zeros;      /* comma list, or NULL */
	char *recomputes; /* comma list, or NULL */
	char *techniques; /* comma list of technique sets, or NULL: no technique table */
	const char *strategies_flag; /* "--strategy" or "--strategies", whichever gave the list */
} maxseq_ctx;

/* Keeps a comma list for the rows; refuses an empty list or item and one longer than the
 * buffers maxseq_rows splits it in. */
static int maxseq_keep(char **slot, const char *flag, const char *arg, size_t max_len)
{
	/* a value twice would print its rows twice */
	if (!cli_check_list("max-seq", flag, arg, ',', max_len) || !cli_list_once("max-seq", flag, arg, ','))
		return -1;
	if (*slot) { /* --strategy, then --strategies (one list, two names): the second replaced the first */
		fprintf(stderr, "spsim max-seq: %s '%s': a list was given already ('%s'), expected one list\n", flag, arg,
			*slot);
		return -1;
	}
	free(*slot);
	*slot = strdup(arg);
	return *slot ? 1 : -1;
}

static int maxseq_opt(void *ctx, int id, const char *arg)
{
	maxseq_ctx *c = ctx;
	switch (id) {
	case OPT_GRANULE: return cli_parse_range_long(CONFIG_R_GRANULE, arg, &c->granule) ? 1 : -1;
	case OPT_STRATEGIES:
	case CLI_OPT_STRATEGY:
		c->strategies_flag = id == OPT_STRATEGIES ? "--strategies" : "--strategy";
		return maxseq_keep(&c->strategies, c->strategies_flag, arg, 511);
	case CLI_OPT_ZERO: return maxseq_keep(&c->zeros, "--zero", arg, 63);
	case CLI_OPT_RECOMPUTE: return maxseq_keep(&c->recomputes, "--recompute", arg, 63);
	case OPT_TECHNIQUES: return maxseq_keep(&c->techniques, "--techniques", arg, 511);
	case CLI_OPT_SEQ_LEN: {
		long unused; /* not used, but a bad value is still an error, not a note */
		if (!cli_parse_range_long(CONFIG_R_SEQ_LEN, arg, &unused))
			return -1;
		fprintf(stderr, "spsim max-seq: note: --seq-len %s is not used: the sequence length is what max-seq "
				"searches\n", arg);
		return 1;
	}
	case CLI_OPT_TRACE:
		fprintf(stderr, "spsim max-seq: --trace: max-seq simulates no step (it bounds memory); use spsim run "
				"--seq-len S --trace FILE for a timeline\n");
		return -1;
	default: return 0;
	}
}

/* One row of the answer: a job, its longest fitting sequence and what stops it. */
typedef struct maxseq_row {
	char strategy[48];
	config_job job;
	char invalid[CONFIG_ERROR_MAX];
	long granule, best;
	workload_memory at_limit; /* memory of the first length that does not fit */
	const char *blocked_by;   /* "model states", "activations" or "search limit" */
	char unblock[96];         /* the setting that would go further, or "" */
	long unblock_best;        /* its longest sequence (0: none) */
} maxseq_row;

static long maxseq_granule(const config_job *j, long granule)
{
	long shards = j->strategy == CONFIG_STRATEGY_BASP ? j->sp / j->micro_batch : j->sp;
	if (config_job_ring(j) && j->cp_split == CONFIG_CP_SPLIT_ZIGZAG)
		shards *= 2; /* ring attention's zigzag: two chunks per rank */
	if (shards < 1)
		shards = 1;
	return ((granule + shards - 1) / shards) * shards;
}

static void maxseq_eval(const cli_job_args *a, long granule, maxseq_row *r)
{
	config_job j = r->job;
	r->granule = maxseq_granule(&j, granule);
	r->best = workload_max_seq(&a->m, &a->p, &j, r->granule);
	workload_layout l;
	j.seq_len = r->best + r->granule;
	memset(&r->at_limit, 0, sizeof r->at_limit);
	if (workload_layout_make(&a->m, &j, &l, NULL))
		workload_memory_compute(&a->m, &a->p, &j, &l, &r->at_limit);
	/* With no length fitting, the states that do not depend on the sequence are what
	 * leaves no room; otherwise the next step's activations are what overflows, unless the
	 * next step fits too: the search stopped at its cap (workload_max_seq, 2^30 tokens)
	 * and said "activations" and "more GPUs would fit" the same length. */
	r->blocked_by = r->best == 0 ? "model states" : "activations";
	if (r->best > 0 && r->at_limit.fits) {
		r->blocked_by = "search limit";
		snprintf(r->unblock, sizeof r->unblock, "none: longer sequences are not searched");
		r->unblock_best = 0;
		return;
	}
	/* The one setting to change, in the order that costs least step time: recompute frees
	 * activations (one more forward), ZeRO-3 frees parameters, gradients and optimizer. */
	config_job alt = r->job;
	r->unblock[0] = '\0';
	r->unblock_best = 0;
	if (r->best > 0 && alt.recompute == CONFIG_RECOMPUTE_NONE) {
		alt.recompute = CONFIG_RECOMPUTE_FULL;
		snprintf(r->unblock, sizeof r->unblock, "--recompute full");
	} else if (alt.zero_stage < 3) {
		alt.zero_stage = 3;
		snprintf(r->unblock, sizeof r->unblock, "--zero 3");
	}
	if (r->unblock[0]) {
		r->unblock_best = workload_max_seq(&a->m, &a->p, &alt, maxseq_granule(&alt, granule));
		if (r->unblock_best <= r->best) {
			r->unblock[0] = '\0';
			r->unblock_best = 0; /* "more GPUs" below: no length computed for it */
		}
	}
	if (!r->unblock[0])
		snprintf(r->unblock, sizeof r->unblock, "more GPUs (a larger --sp)");
}

/* Expands the lists into rows; false (message printed) on a bad item. */
static bool maxseq_rows(const cli_job_args *a, const maxseq_ctx *c, maxseq_row *rows, int *n)
{
	char strategies[512], zeros[64], recomputes[64], label[64];
	snprintf(strategies, sizeof strategies, "%s",
		 c->strategies ? c->strategies : config_strategy_label(&a->job, label, sizeof label));
	snprintf(zeros, sizeof zeros, "%s", c->zeros ? c->zeros : "");
	snprintf(recomputes, sizeof recomputes, "%s", c->recomputes ? c->recomputes : "");
	if (!zeros[0])
		snprintf(zeros, sizeof zeros, "%d", a->job.zero_stage);
	if (!recomputes[0])
		snprintf(recomputes, sizeof recomputes, "%s", config_recompute_names[a->job.recompute]);
	*n = 0;
	char *s1 = NULL;
	for (char *st = strtok_r(strategies, ",", &s1); st; st = strtok_r(NULL, ",", &s1)) {
		char zl[64], *s2 = NULL;
		memcpy(zl, zeros, sizeof zl);
		for (char *z = strtok_r(zl, ",", &s2); z; z = strtok_r(NULL, ",", &s2)) {
			char rl[64], *s3 = NULL;
			memcpy(rl, recomputes, sizeof rl);
			for (char *rc = strtok_r(rl, ",", &s3); rc; rc = strtok_r(NULL, ",", &s3)) {
				if (*n == MAXSEQ_MAX_ROWS) {
					fprintf(stderr, "spsim max-seq: at most %d combinations\n", MAXSEQ_MAX_ROWS);
					return false;
				}
				maxseq_row *r = &rows[*n];
				memset(r, 0, sizeof *r);
				r->job = a->job;
				long zv;
				if (!parse_strategy("max-seq", c->strategies_flag, st, &r->job) || !cli_parse_int("--zero", z, 0, 3, &zv))
					return false;
				r->job.zero_stage = (int)zv;
				if (strcmp(rc, "none") == 0)
					r->job.recompute = CONFIG_RECOMPUTE_NONE;
				else if (strcmp(rc, "full") == 0)
					r->job.recompute = CONFIG_RECOMPUTE_FULL;
				else if (strcmp(rc, "selective") == 0)
					r->job.recompute = CONFIG_RECOMPUTE_SELECTIVE;
				else {
					fprintf(stderr, "spsim max-seq: --recompute expects none, selective or full "
							"(comma-separated), got '%s'\n", rc);
					return false;
				}
				snprintf(r->strategy, sizeof r->strategy, "%s", st);
				config_error err;
				if (!workload_check(&a->m, &a->p, &r->job, &err))
					snprintf(r->invalid, sizeof r->invalid, "%s", err.msg);
				(*n)++;
			}
		}
	}
	if (*n == 0) {
		fprintf(stderr, "spsim max-seq: --strategy is empty\n");
		return false;
	}
	return true;
}

static json_t *maxseq_json(const cli_job_args *a, const maxseq_row *r)
{
	json_t *j = json_pack("{s:s, s:s, s:s, s:i, s:i, s:i, s:i, s:i, s:s, s:I, s:I}", "model", a->m.name, "platform",
			      a->p.name, "strategy", r->strategy, "gpus", r->job.gpus, "sp", r->job.sp, "micro_batch",
			      r->job.micro_batch, "zero_stage", r->job.zero_stage, "nodes", a->p.nodes, "recompute",
			      config_recompute_names[r->job.recompute], "granule", (json_int_t)r->granule, "max_seq_len",
			      (json_int_t)r->best);
	if (r->invalid[0]) {
		json_object_set_new(j, "invalid", json_string(r->invalid));
		return j;
	}
	json_object_set_new(j, "blocked_by", json_string(r->blocked_by));
	json_object_set_new(j, "model_states_bytes",
			    json_real(r->at_limit.params + r->at_limit.grads + r->at_limit.optimizer));
	json_object_set_new(j, "activation_bytes_at_limit", json_real(r->at_limit.activations));
	json_object_set_new(j, "unblock", json_string(r->unblock));
	json_object_set_new(j, "unblock_max_seq_len", json_integer((json_int_t)r->unblock_best));
	return j;
}

/* ---- the technique table (--techniques) ---- */
#define MAXSEQ_MAX_TECH 12
/* Tiles of the table's tiling sets when --tile-mlp/--tile-logits are not given: 16, which
 * keeps an MLP tile of a 64K-token shard at 4K tokens, ALST's own tile of one hidden size's
 * tokens for an 8B model (arXiv 2506.13996, TiledMLP: shards = ceil(seqlen / hidden)). */
#define MAXSEQ_DEFAULT_TILES 16

typedef struct maxseq_tech {
	char name[48];
	config_recompute recompute;
	bool offload, tiling;
} maxseq_tech;

/* Parses one set: none, selective, full, offload, tiling, all, or names joined by '+'
 * (offload and tiling alone imply full recompute). */
static bool maxseq_tech_parse(const char *spec, maxseq_tech *t)
{
	memset(t, 0, sizeof *t);
	snprintf(t->name, sizeof t->name, "%s", spec);
	char buf[96];
	snprintf(buf, sizeof buf, "%s", spec);
	bool has_recompute = false;
	char *save = NULL;
	for (char *w = strtok_r(buf, "+", &save); w; w = strtok_r(NULL, "+", &save)) {
		if (strcmp(w, "none") == 0)
			t->recompute = CONFIG_RECOMPUTE_NONE, has_recompute = true;
		else if (strcmp(w, "selective") == 0)
			t->recompute = CONFIG_RECOMPUTE_SELECTIVE, has_recompute = true;
		else if (strcmp(w, "full") == 0)
			t->recompute = CONFIG_RECOMPUTE_FULL, has_recompute = true;
		else if (strcmp(w, "offload") == 0)
			t->offload = true;
		else if (strcmp(w, "tiling") == 0)
			t->tiling = true;
		else if (strcmp(w, "all") == 0)
			t->offload = t->tiling = true;
		else {
			fprintf(stderr, "spsim max-seq: --techniques: unknown technique '%s' in '%s'; expected none, "
					"selective, full, offload, tiling or all (joined by '+'), or 'table'\n", w, spec);
			return false;
		}
	}
	if (!has_recompute && (t->offload || t->tiling))
		t->recompute = CONFIG_RECOMPUTE_FULL;
	return true;
}

static bool maxseq_techs(const char *list, maxseq_tech *out, int *n)
{
	char buf[512];
	snprintf(buf, sizeof buf, "%s", strcmp(list, "table") == 0 ? "none,selective,full,offload,tiling,all" : list);
	*n = 0;
	char *save = NULL;
	for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		if (*n == MAXSEQ_MAX_TECH) {
			fprintf(stderr, "spsim max-seq: --techniques: at most %d sets\n", MAXSEQ_MAX_TECH);
			return false;
		}
		if (!maxseq_tech_parse(w, &out[(*n)++]))
			return false;
	}
	if (*n == 0) {
		fprintf(stderr, "spsim max-seq: --techniques is empty; expected e.g. 'table' or none,full,offload\n");
		return false;
	}
	return true;
}

/* The job of a row under a technique set. */
static config_job maxseq_tech_job(const config_job *row, const maxseq_tech *t, const config_job *given)
{
	config_job j = *row;
	j.recompute = t->recompute;
	j.offload_activations = t->offload;
	j.tile_mlp = t->tiling ? (given->tile_mlp > 1 ? given->tile_mlp : MAXSEQ_DEFAULT_TILES) : 1;
	j.tile_logits = t->tiling ? (given->tile_logits > 1 ? given->tile_logits : MAXSEQ_DEFAULT_TILES) : 1;
	return j;
}

/* Prints the table (or JSON/CSV) of rows x technique sets; returns the exit code. */
/* A max-seq CSV row's first fields, the model and platform names (quoted when a user file's
 * name holds a comma or a quote), each followed by a comma. */
static void maxseq_csv_names(const cli_job_args *a)
{
	plan_csv_string(stdout, a->m.name);
	putchar(',');
	plan_csv_string(stdout, a->p.name);
	putchar(',');
}

static int maxseq_tech_table(const cli_job_args *a, const maxseq_ctx *c, const maxseq_row *rows, int n)
{
	maxseq_tech techs[MAXSEQ_MAX_TECH];
	int nt;
	if (!maxseq_techs(c->techniques, techs, &nt))
		return CLI_USAGE;
	static long best[MAXSEQ_MAX_ROWS][MAXSEQ_MAX_TECH];
	static char why[MAXSEQ_MAX_ROWS][MAXSEQ_MAX_TECH][CONFIG_ERROR_MAX];
	long longest = 0;
	for (int i = 0; i < n; i++)
		for (int k = 0; k < nt; k++) {
			best[i][k] = -1;
			why[i][k][0] = '\0';
			if (rows[i].invalid[0]) {
				snprintf(why[i][k], sizeof why[i][k], "%s", rows[i].invalid);
				continue;
			}
			config_job j = maxseq_tech_job(&rows[i].job, &techs[k], &a->job);
			config_error err;
			/* the technique's own requirements (host link, full recompute); tile counts are
			 * checked against the length found */
			config_job chk = j;
			chk.tile_mlp = chk.tile_logits = 1;
			if (!workload_check_techniques(&a->p, &chk, &err)) {
				snprintf(why[i][k], sizeof why[i][k], "%s", err.msg);
				continue;
			}
			best[i][k] = workload_max_seq(&a->m, &a->p, &j, maxseq_granule(&j, c->granule));
			if (best[i][k] > longest)
				longest = best[i][k];
		}
	cli_warn_max_position(&a->m, longest, "max-seq");
	if (a->format == REPORT_JSON) {
		json_t *arr = json_array(), *cols = json_array();
		for (int k = 0; k < nt; k++)
			json_array_append_new(cols, json_pack("{s:s, s:s, s:b, s:i, s:i}", "name", techs[k].name, "recompute",
							      config_recompute_names[techs[k].recompute], "offload_activations",
							      techs[k].offload,
							      "tile_mlp", maxseq_tech_job(&rows[0].job, &techs[k], &a->job).tile_mlp,
							      "tile_logits",
							      maxseq_tech_job(&rows[0].job, &techs[k], &a->job).tile_logits));
		for (int i = 0; i < n; i++) {
			json_t *cells = json_object();
			for (int k = 0; k < nt; k++)
				json_object_set_new(cells, techs[k].name,
						    best[i][k] < 0 ? json_null() : json_integer((json_int_t)best[i][k]));
			json_t *row = json_pack("{s:s, s:i, s:i, s:i, s:o}", "strategy", rows[i].strategy, "gpus",
						rows[i].job.gpus, "sp", rows[i].job.sp, "zero_stage", rows[i].job.zero_stage,
						"max_seq_len", cells);
			json_t *notes = json_object();
			for (int k = 0; k < nt; k++)
				if (why[i][k][0])
					json_object_set_new(notes, techs[k].name, json_string(why[i][k]));
			if (json_object_size(notes))
				json_object_set_new(row, "not_applicable", notes);
			else
				json_decref(notes);
			json_array_append_new(arr, row);
		}
		json_t *j = json_pack("{s:s, s:s, s:i, s:i, s:i, s:o, s:o}", "model", a->m.name, "platform", a->p.name,
				      "nodes", a->p.nodes, "micro_batch", a->job.micro_batch, "granule", (int)c->granule,
				      "techniques", cols, "rows", arr);
		report_json_print(stdout, j);
		json_decref(j);
		return CLI_OK;
	}
	if (a->format == REPORT_CSV) {
		printf("model,platform,strategy,gpus,sp,zero_stage,technique,recompute,offload_activations,tile_mlp,"
		       "tile_logits,max_seq_len\n");
		for (int i = 0; i < n; i++)
			for (int k = 0; k < nt; k++) {
				config_job j = maxseq_tech_job(&rows[i].job, &techs[k], &a->job);
				maxseq_csv_names(a);
				printf("%s,%d,%d,%d,%s,%s,%s,%d,%d,", rows[i].strategy,
				       rows[i].job.gpus, rows[i].job.sp, rows[i].job.zero_stage, techs[k].name,
				       config_recompute_names[j.recompute], j.offload_activations ? "true" : "false",
				       j.tile_mlp, j.tile_logits);
				if (best[i][k] < 0)
					printf("\n");
				else
					printf("%ld\n", best[i][k]);
			}
		return CLI_OK;
	}
	printf("%s on %s (%d node%s x %d GPUs), micro-batch %d: longest sequence that fits in memory per\n"
	       "technique set (offload and tiling add full recompute; tiles: MLP %d, logits %d)\n\n",
	       a->m.name, a->p.name, a->p.nodes, a->p.nodes == 1 ? "" : "s", a->p.gpus_per_node, a->job.micro_batch,
	       a->job.tile_mlp > 1 ? a->job.tile_mlp : MAXSEQ_DEFAULT_TILES,
	       a->job.tile_logits > 1 ? a->job.tile_logits : MAXSEQ_DEFAULT_TILES);
	printf("%-18s %4s %4s", "strategy", "SP", "ZeRO");
	for (int k = 0; k < nt; k++)
		printf(" %11s", techs[k].name);
	printf("\n");
	const char *note = NULL;
	for (int i = 0; i < n; i++) {
		printf("%-18s %4d %4d", rows[i].strategy, rows[i].job.sp, rows[i].job.zero_stage);
		for (int k = 0; k < nt; k++) {
			if (best[i][k] < 0) {
				printf(" %11s", "n/a");
				if (!note)
					note = why[i][k];
			} else {
				printf(" %11ld", best[i][k]);
			}
		}
		printf("\n");
	}
	if (note)
		printf("\nn/a: %s\n", note);
	return CLI_OK;
}

/* max-seq's own options, after the job options */
const struct option cli_max_seq_options[] = {
	{"granule", required_argument, NULL, OPT_GRANULE},
	{"strategies", required_argument, NULL, OPT_STRATEGIES},
	{"techniques", required_argument, NULL, OPT_TECHNIQUES},
	{NULL, 0, NULL, 0},
};

int cli_cmd_max_seq(int argc, char **argv)
{
	cli_job_args a;
	maxseq_ctx ctx = {.granule = 1024, .strategies_flag = "--strategy"};
	maxseq_row *rows = NULL;
	cli_job_init(&a);
	int rc = parse(argc, argv, &a, cli_max_seq_options, maxseq_opt, &ctx, maxseq_help);
	if (rc >= 0)
		goto out;
	rc = CLI_USAGE;
	if (a.engine_given)
		fprintf(stderr, "spsim max-seq: note: --engine is not used: the longest sequence is a memory bound, the "
				"same for every engine\n");
	/* The sequence is what we search: check the job with a length every shard count up to
	 * 16 (and powers of two up to 2^14) divides: 720720 = lcm(1..16). */
	a.job.seq_len = 720720L * 1024;
	if (ctx.techniques && ctx.recomputes) {
		fprintf(stderr, "spsim max-seq: --recompute does not apply with --techniques: each technique set "
				"sets its own recompute (none, selective, full); drop --recompute, or name the sets "
				"(e.g. --techniques none,full,offload)\n");
		goto out;
	}
	if (ctx.strategies && cli_job_given(&a, CLI_OPT_CP_COMM_TYPE)) {
		fprintf(stderr, "spsim max-seq: --cp-comm-type names one strategy and --strategy lists them; give the "
				"list alone (e.g. --strategy ring,ring:comm=all_gather,ulysses,usp)\n");
		goto out;
	}
	if (ctx.strategies && !strchr(ctx.strategies, ',') && !strchr(ctx.strategies, ':'))
		parse_strategy("max-seq", ctx.strategies_flag, ctx.strategies, &a.job);
	else if (ctx.strategies) {
		/* A list: its first item, when a plain ulysses, basp or ring, stands for the job in
		 * the check below (ring first lets a list reach GPU counts that Ulysses' heads do
		 * not divide: its rows then say why they are invalid); each row is checked on its
		 * own. USP and NAME:key=value items would leave their degrees and sizes in the job
		 * every row starts from, so they do not stand in. */
		size_t n = strcspn(ctx.strategies, ",");
		char first[16];
		if (n < sizeof first) {
			memcpy(first, ctx.strategies, n);
			first[n] = '\0';
			if (strcmp(first, "ulysses") == 0 || strcmp(first, "basp") == 0 || strcmp(first, "ring") == 0)
				parse_strategy("max-seq", ctx.strategies_flag, first, &a.job);
		}
	}
	if (!cli_job_resolve(&a, "max-seq"))
		goto out;
	/* what-ifs change time, not memory (a failed node only moves ranks, which the memory
	 * check of node groups already follows): refuse them rather than ignore them */
	for (int i = 0; i < a.whatif.n; i++)
		if (a.whatif.item[i].kind != CONFIG_WHATIF_FAIL_NODE) {
			char what[96];
			config_whatif_label(&a.whatif.item[i], what, sizeof what);
			fprintf(stderr, "spsim max-seq: --%s changes step time, not memory per GPU, which max-seq "
					"searches; drop it\n", what);
			goto out;
		}
	/* settings that change time only, like --engine: said, not silently dropped */
	if (cli_job_given(&a, CLI_OPT_A2A))
		fprintf(stderr, "spsim max-seq: note: --a2a is not used: the all-to-all algorithm changes step time, not "
				"memory per GPU\n");
	if (cli_job_given(&a, CLI_OPT_PLACEMENT) && a.p.n_node_groups == 0)
		fprintf(stderr, "spsim max-seq: note: --placement is not used: on '%s', whose GPUs are all alike, where "
				"a rank runs does not change its memory\n", a.p.name);
	rows = calloc(MAXSEQ_MAX_ROWS, sizeof *rows);
	int n = 0;
	if (!rows) {
		rc = CLI_FAIL;
		goto out;
	}
	if (!maxseq_rows(&a, &ctx, rows, &n))
		goto out;
	if (ctx.techniques) {
		rc = maxseq_tech_table(&a, &ctx, rows, n);
		goto out;
	}
	rc = CLI_OK;
	for (int i = 0; i < n; i++)
		if (!rows[i].invalid[0])
			maxseq_eval(&a, ctx.granule, &rows[i]);
	/* the longest answer against the model's max_position */
	long longest = 0;
	for (int i = 0; i < n; i++)
		if (!rows[i].invalid[0] && rows[i].best > longest)
			longest = rows[i].best;
	cli_warn_max_position(&a.m, longest, "max-seq");
	if (a.format == REPORT_JSON) {
		json_t *j;
		if (n == 1) {
			j = maxseq_json(&a, &rows[0]);
		} else {
			json_t *arr = json_array();
			for (int i = 0; i < n; i++)
				json_array_append_new(arr, maxseq_json(&a, &rows[i]));
			j = json_pack("{s:s, s:s, s:i, s:o}", "model", a.m.name, "platform", a.p.name, "nodes", a.p.nodes,
				      "rows", arr);
		}
		report_json_print(stdout, j);
		json_decref(j);
	} else if (a.format == REPORT_CSV) {
		printf("model,platform,strategy,gpus,sp,micro_batch,zero_stage,recompute,max_seq_len,blocked_by,"
		       "model_states_bytes,unblock,unblock_max_seq_len\n");
		for (int i = 0; i < n; i++) {
			const maxseq_row *r = &rows[i];
			maxseq_csv_names(&a);
			printf("%s,%d,%d,%d,%d,%s,%ld,%s,%.0f,%s,%ld\n", r->strategy, r->job.gpus,
			       r->job.sp, r->job.micro_batch, r->job.zero_stage, config_recompute_names[r->job.recompute],
			       r->best, r->invalid[0] ? "invalid" : r->blocked_by,
			       r->at_limit.params + r->at_limit.grads + r->at_limit.optimizer, r->invalid[0] ? "" : r->unblock,
			       r->unblock_best);
		}
	} else if (n == 1 && !rows[0].invalid[0]) {
		const maxseq_row *r = &rows[0];
		char ms[32], cap[32];
		printf("%s on %s, %s, %d GPUs, SP %d, micro-batch %d, ZeRO-%d, recompute %s\n", a.m.name, a.p.name,
		       r->strategy, r->job.gpus, r->job.sp, r->job.micro_batch, r->job.zero_stage,
		       config_recompute_names[r->job.recompute]);
		report_bytes(r->at_limit.params + r->at_limit.grads + r->at_limit.optimizer, ms, sizeof ms);
		report_bytes(r->at_limit.capacity, cap, sizeof cap);
		if (r->best > 0)
			printf("longest sequence that fits: %ld tokens (searched in steps of %ld)\n", r->best, r->granule);
		else
			printf("no sequence of %ld tokens or more fits: model states alone exceed memory\n", r->granule);
		printf("blocked by: %s (the model states take %s of %s per GPU)", r->blocked_by, ms, cap);
		if (r->unblock_best > 0)
			printf("; %s would fit %ld tokens\n", r->unblock, r->unblock_best);
		else
			printf("; next: %s\n", r->unblock);
	} else {
		printf("%s on %s (%d node%s x %d GPUs), micro-batch %d; longest sequence that fits in memory\n\n",
		       a.m.name, a.p.name, a.p.nodes, a.p.nodes == 1 ? "" : "s", a.p.gpus_per_node, a.job.micro_batch);
		int w = 16; /* the strategy column: as wide as its longest spec */
		for (int i = 0; i < n; i++)
			if ((int)strlen(rows[i].strategy) > w)
				w = (int)strlen(rows[i].strategy);
		printf("%-*s %4s %4s %-9s %12s %12s  %-13s %s\n", w, "strategy", "SP", "ZeRO", "recompute", "max seq",
		       "states/GPU", "blocked by", "would go further");
		for (int i = 0; i < n; i++) {
			const maxseq_row *r = &rows[i];
			if (r->invalid[0]) {
				printf("%-*s %4d %4d %-9s %12s  invalid: %s\n", w, r->strategy, r->job.sp, r->job.zero_stage,
				       config_recompute_names[r->job.recompute], "-", r->invalid);
				continue;
			}
			char ms[32], further[160];
			report_bytes(r->at_limit.params + r->at_limit.grads + r->at_limit.optimizer, ms, sizeof ms);
			if (r->unblock_best > 0)
				snprintf(further, sizeof further, "%s: %ld", r->unblock, r->unblock_best);
			else
				snprintf(further, sizeof further, "%s", r->unblock);
			printf("%-*s %4d %4d %-9s %12ld %12s  %-13s %s\n", w, r->strategy, r->job.sp, r->job.zero_stage,
			       config_recompute_names[r->job.recompute], r->best, ms, r->blocked_by, further);
		}
	}
out:
	free(rows);
	free(ctx.strategies);
	free(ctx.zeros);
	free(ctx.recomputes);
	free(ctx.techniques);
	return rc;
}
