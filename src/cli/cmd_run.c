/* spsim run, compare, max-seq */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "plan/plan.h"

enum { OPT_STRATEGIES = CLI_OPT_FIRST_FREE, OPT_GRANULE, OPT_PLOT, OPT_WHAT_IF };

static void run_help(FILE *f)
{
	fputs("usage: spsim run --model NAME --platform NAME --seq-len S [options]\n"
	      "Simulates one training step and reports step time, its breakdown and memory per GPU.\n\n",
	      f);
	cli_job_help(f);
}

static void emit_run(const cli_job_args *a, const report_run *r)
{
	if (a->format == REPORT_JSON) {
		json_t *j = report_run_json(r);
		report_json_print(stdout, j);
		json_decref(j);
	} else if (a->format == REPORT_CSV) {
		report_csv_header(stdout);
		report_csv_row(stdout, r);
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
		fprintf(stderr, "spsim: out of memory\n");
		return CLI_FAIL;
	}
	int c, rc = -1;
	optind = 1;
	opterr = 0;
	while (rc < 0 && (c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
		if (c == CLI_OPT_HELP) {
			help(stdout);
			rc = CLI_OK;
		} else if (c == '?') {
			fprintf(stderr, "spsim %s: unknown option '%s' (see spsim %s --help)\n", argv[0], argv[optind - 1],
				argv[0]);
			rc = CLI_USAGE;
		} else if (c == ':') {
			fprintf(stderr, "spsim %s: option '%s' needs a value\n", argv[0], argv[optind - 1]);
			rc = CLI_USAGE;
		} else {
			int r = cli_job_option(a, c, optarg);
			if (r == 0 && cb)
				r = cb(ctx, c, optarg);
			if (r <= 0)
				rc = CLI_USAGE;
		}
	}
	if (rc < 0 && optind < argc) {
		fprintf(stderr, "spsim %s: unexpected argument '%s' (see spsim %s --help)\n", argv[0], argv[optind],
			argv[0]);
		rc = CLI_USAGE;
	}
	free(opts);
	return rc;
}

int cli_cmd_run(int argc, char **argv)
{
	cli_job_args a;
	cli_job_init(&a);
	int rc = parse(argc, argv, &a, NULL, NULL, NULL, run_help);
	if (rc >= 0)
		return rc;
	if (!cli_job_resolve(&a, "run"))
		return CLI_USAGE;
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
} compare_ctx;

static int compare_opt(void *ctx, int id, const char *arg)
{
	compare_ctx *c = ctx;
	if (id == OPT_PLOT) {
		c->plot = arg;
		return 1;
	}
	if (id == OPT_WHAT_IF) {
		if (c->n_what_if == MAX_STRATEGIES - 1) {
			fprintf(stderr, "spsim compare: --what-if: at most %d\n", MAX_STRATEGIES - 1);
			return -1;
		}
		c->what_if[c->n_what_if++] = arg;
		return 1;
	}
	if (id == OPT_STRATEGIES) {
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
	      "  --strategies LIST        comma-separated, default ulysses,basp. Each entry is ulysses or basp,\n"
	      "                           optionally with its own SP size: ulysses:sp=4 is Ulysses with SP 4 and\n"
	      "                           W/4 data-parallel replicas, each taking micro-batch B (basp.md's\n"
	      "                           'Ulysses with SP = N/B' alternative)\n"
	      "  --trace FILE             one trace per strategy: FILE with the label before the extension\n"
	      "  --what-if SPEC           a column beside the baseline (the first strategy) with asymmetric\n"
	      "                           what-ifs: KIND=VALUE joined by '+', KIND slow-gpu, slow-node, degrade,\n"
	      "                           fail-node or background, e.g. slow-gpu=3:2+degrade=nic:0:2 (repeatable; simgrid\n"
	      "                           engine; without --strategies the baseline is the job's strategy)\n"
	      "  --plot DIR               figures (SVG, PNG; gnuplot) of the comparison and, from the analytic\n"
	      "                           engine, of speedup and memory around it (docs/planning.md)\n\n",
	      f);
	cli_job_help(f);
}

/* "ulysses", "basp", "ulysses:sp=4" */
static bool parse_strategy(const char *spec, config_job *job)
{
	char name[32];
	const char *colon = strchr(spec, ':');
	size_t n = colon ? (size_t)(colon - spec) : strlen(spec);
	if (n >= sizeof name)
		n = sizeof name - 1;
	memcpy(name, spec, n);
	name[n] = '\0';
	if (strcmp(name, "ulysses") == 0)
		job->strategy = CONFIG_STRATEGY_ULYSSES;
	else if (strcmp(name, "basp") == 0)
		job->strategy = CONFIG_STRATEGY_BASP;
	else {
		fprintf(stderr, "spsim compare: --strategies: unknown strategy '%s', expected ulysses or basp\n", name);
		return false;
	}
	if (colon) {
		long sp;
		if (strncmp(colon + 1, "sp=", 3) != 0) {
			fprintf(stderr, "spsim compare: --strategies: '%s': expected NAME or NAME:sp=N\n", spec);
			return false;
		}
		if (!cli_parse_int("--strategies NAME:sp=N", colon + 4, 1, INT_MAX, &sp))
			return false;
		job->sp = (int)sp;
	}
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

int cli_cmd_compare(int argc, char **argv)
{
	static const struct option extra[] = {{"strategies", required_argument, NULL, OPT_STRATEGIES},
					      {"plot", required_argument, NULL, OPT_PLOT},
					      {"what-if", required_argument, NULL, OPT_WHAT_IF},
					      {NULL, 0, NULL, 0}};
	cli_job_args a;
	compare_ctx ctx = {0};
	cli_job_init(&a);
	int rc = parse(argc, argv, &a, extra, compare_opt, &ctx, compare_help);
	if (rc >= 0) {
		free(ctx.strategies);
		return rc;
	}
	if (!cli_job_resolve(&a, "compare")) {
		free(ctx.strategies);
		return CLI_USAGE;
	}
	char *list = ctx.strategies		? ctx.strategies
		     : ctx.n_what_if > 0 ? strdup(config_strategy_names[a.job.strategy])
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
		jobs[n] = a.job;
		if (!parse_strategy(tok, &jobs[n])) {
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
		runs[i] = cli_sim_report(&a, &jobs[i], &sims[i], labels[i]);
	}
	if (rc == CLI_OK) {
		if (a.format == REPORT_JSON) {
			json_t *j = report_compare_json(runs, n);
			report_json_print(stdout, j);
			json_decref(j);
		} else if (a.format == REPORT_CSV) {
			report_csv_header(stdout);
			for (int i = 0; i < n; i++)
				report_csv_row(stdout, &runs[i]);
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
	      "Prints the longest sequence that fits in GPU memory for the job (the --seq-len given, if any,\n"
	      "is ignored), searched in steps of --granule tokens (default 1024, rounded up to a multiple\n"
	      "of the sequence shard count).\n\n"
	      "  --granule T              search step in tokens (default 1024)\n\n",
	      f);
	cli_job_help(f);
}

typedef struct maxseq_ctx {
	long granule;
} maxseq_ctx;

static int maxseq_opt(void *ctx, int id, const char *arg)
{
	maxseq_ctx *c = ctx;
	if (id == OPT_GRANULE)
		return cli_parse_tokens("--granule", arg, &c->granule) ? 1 : -1;
	return 0;
}

int cli_cmd_max_seq(int argc, char **argv)
{
	static const struct option extra[] = {{"granule", required_argument, NULL, OPT_GRANULE}, {NULL, 0, NULL, 0}};
	cli_job_args a;
	maxseq_ctx ctx = {.granule = 1024};
	cli_job_init(&a);
	int rc = parse(argc, argv, &a, extra, maxseq_opt, &ctx, maxseq_help);
	if (rc >= 0)
		return rc;
	/* The sequence is what we search: check the job with a length every shard count up to
	 * 16 (and powers of two up to 2^14) divides: 720720 = lcm(1..16). */
	a.job.seq_len = 720720L * 1024;
	if (!cli_job_resolve(&a, "max-seq"))
		return CLI_USAGE;
	/* what-ifs change time, not memory (a failed node only moves ranks, which the memory
	 * check of node groups already follows): refuse them rather than ignore them */
	for (int i = 0; i < a.whatif.n; i++)
		if (a.whatif.item[i].kind != CONFIG_WHATIF_FAIL_NODE) {
			char what[96];
			config_whatif_format(&a.whatif.item[i], what, sizeof what);
			fprintf(stderr, "spsim max-seq: --%s changes step time, not memory per GPU, which max-seq "
					"searches; drop it\n", what);
			return CLI_USAGE;
		}
	long shards = a.job.strategy == CONFIG_STRATEGY_BASP ? a.job.sp / a.job.micro_batch : a.job.sp;
	long g = ((ctx.granule + shards - 1) / shards) * shards;
	long best = workload_max_seq(&a.m, &a.p, &a.job, g);
	cli_warn_max_position(&a.m, best, "max-seq");
	if (a.format == REPORT_JSON) {
		json_t *j = json_pack("{s:s, s:s, s:s, s:i, s:i, s:i, s:i, s:i, s:s, s:I, s:I}", "model", a.m.name,
				      "platform", a.p.name, "strategy", workload_strategy_name(a.job.strategy), "gpus",
				      a.job.gpus, "sp", a.job.sp, "micro_batch", a.job.micro_batch, "zero_stage",
				      a.job.zero_stage, "nodes", a.p.nodes, "recompute",
				      config_recompute_names[a.job.recompute], "granule",
				      (json_int_t)g, "max_seq_len", (json_int_t)best);
		report_json_print(stdout, j);
		json_decref(j);
	} else if (a.format == REPORT_CSV) {
		printf("model,platform,strategy,gpus,sp,micro_batch,zero_stage,recompute,max_seq_len\n");
		printf("%s,%s,%s,%d,%d,%d,%d,%s,%ld\n", a.m.name, a.p.name, workload_strategy_name(a.job.strategy),
		       a.job.gpus, a.job.sp, a.job.micro_batch, a.job.zero_stage,
		       config_recompute_names[a.job.recompute], best);
	} else {
		printf("%s on %s, %s, %d GPUs, SP %d, micro-batch %d, ZeRO-%d, recompute %s\n", a.m.name, a.p.name,
		       workload_strategy_name(a.job.strategy), a.job.gpus, a.job.sp, a.job.micro_batch, a.job.zero_stage,
		       config_recompute_names[a.job.recompute]);
		if (best > 0)
			printf("longest sequence that fits: %ld tokens (searched in steps of %ld)\n", best, g);
		else
			printf("no sequence of %ld tokens or more fits: model states alone exceed memory\n", g);
	}
	return CLI_OK;
}
