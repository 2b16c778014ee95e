/* spsim sweep SPEC.yaml: a grid of jobs, in parallel, resumable, across MPI ranks. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "spsim_build.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "plan/plan.h"
#if SPSIM_HAVE_MPI
#include "plan/dist_mpi.h"
#endif

enum { OPT_OUTPUT = 'o', OPT_JOBS = 'j', OPT_RESUME = 256, OPT_FORCE, OPT_RETRY, OPT_TIMEOUT, OPT_PLOT, OPT_DRY, OPT_QUIET, OPT_HELP };

static void sweep_help(FILE *f)
{
	fputs("usage: spsim sweep SPEC.yaml [options]\n"
	      "Runs every point of the grid a sweep spec describes (models x platforms x node counts x\n"
	      "strategies x micro-batch x sequence length x ZeRO x engine x calibration, platform\n"
	      "what-ifs such as nic_bandwidth, and every job-file setting) and writes one row per point,\n"
	      "as points finish, to DIR/points.csv and DIR/points.jsonl. The spec format is in\n"
	      "docs/planning.md. Each key is a value or a list of values:\n"
	      "  model platform seq_len nodes gpus strategy micro_batch grad_accum zero engine calibration\n"
	      "  placement what_if gpus_per_node nics nic_bandwidth intra_bandwidth inter_latency\n"
	      "  gpu_memory, and the job file's settings, read and checked as a job file reads them:\n"
	      "  recompute a2a basp_uneven cp_comm_type attention_kernel impl zero3_prefetch offload_activations\n"
	      "  offload_optimizer tile_mlp tile_logits memory_reserve zero_overlap fp32_grad_comm reduce_bucket\n"
	      "  allgather_bucket prefetch_bucket contiguous_gradients dtype (reduce_bucket and prefetch_bucket take\n"
	      "  auto, resolved per model as in a job file); plus name and baseline. strategy takes run's\n"
	      "  --strategy spellings (basp:inner=ring, ring:split=naive, usp:u=4:r=2) with :sp=N or\n"
	      "  :sp=N/B; every key given is in the point key, so --resume tells its values apart. Unlike\n"
	      "  spsim run, a spec without engine runs the analytic engine (engine: simgrid to change it).\n\n"
	      "  -o, --output DIR         where the rows go (default: the spec file's name without its extension\n"
	      "                           + '-results', in the current directory: microbatch-results; alias --out)\n"
	      "  -j, --jobs N             worker processes (default: every CPU this process may use)\n"
	      "      --resume             continue a sweep: points already in DIR are skipped\n"
	      "      --retry-failed       with --resume, run again the points recorded with status error\n"
	      "      --force              discard what DIR holds and start again\n"
	      "      --point-timeout S    give up on a point after S seconds (recorded with status error)\n"
	      "      --plot DIR           draw figures (SVG and PNG, with gnuplot) from the rows into DIR\n"
	      "      --dry-run            list the points and whether the job check accepts each; run nothing\n"
	      "      --quiet              no progress output\n\n"
	      "Each row has a status: ok, invalid (the job check rejects the combination, with its reason)\n"
	      "or error (the engine failed, the worker died or timed out); the sweep goes on either way.\n"
	      "Points on the analytic engine run in long-lived workers; points on any other engine (SimGrid\n"
	      "can be initialised once per process) each in a fresh process.\n"
	      "Across machines: mpirun -np P spsim sweep SPEC ... (or srun) splits the points over the ranks;\n"
	      "rank 0 writes every row. Exit status: 0 done, 1 some point failed or output could not be\n"
	      "written, 2 bad spec or options.\n",
	      f);
}

static void default_output(const char *spec, char *out, size_t len)
{
	const char *b = strrchr(spec, '/');
	b = b ? b + 1 : spec;
	const char *dot = strrchr(b, '.');
	int n = dot && dot > b ? (int)(dot - b) : (int)strlen(b);
	snprintf(out, len, "%.*s-results", n, b);
}

static int dry_run(const plan_spec *s)
{
	long valid = 0;
	char key[4096];
	for (long i = 0; i < s->n_points; i++) {
		plan_point p;
		config_platform pl;
		config_job job;
		config_error err = {""};
		plan_point_at(s, i, &p);
		plan_point_key(s, &p, key, sizeof key);
		bool ok = plan_point_job(s, &p, &pl, &job, &err);
		valid += ok;
		printf("%ld\t%s\t%s%s\n", i, key, ok ? "valid" : "invalid: ", ok ? "" : err.msg);
	}
	printf("%ld points, %ld valid, %ld rejected by the job check\n", s->n_points, valid, s->n_points - valid);
	return CLI_OK;
}

const struct option cli_sweep_options[] = {
	{"output", required_argument, NULL, OPT_OUTPUT},
	{"out", required_argument, NULL, OPT_OUTPUT},
	{"jobs", required_argument, NULL, OPT_JOBS},
	{"resume", no_argument, NULL, OPT_RESUME},
	{"force", no_argument, NULL, OPT_FORCE},
	{"retry-failed", no_argument, NULL, OPT_RETRY},
	{"point-timeout", required_argument, NULL, OPT_TIMEOUT},
	{"plot", required_argument, NULL, OPT_PLOT},
	{"dry-run", no_argument, NULL, OPT_DRY},
	{"quiet", no_argument, NULL, OPT_QUIET},
	{"help", no_argument, NULL, OPT_HELP},
	{NULL, 0, NULL, 0},
};

int cli_cmd_sweep(int argc, char **argv)
{
	plan_sweep_opts so = {.mode = PLAN_OUTPUT_NEW};
	const char *out = NULL, *plot = NULL;
	bool resume = false, force = false, dry = false;
	long v;
	int c;
	cli_seen seen = {0};
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:j:", cli_sweep_options, NULL)) != -1) {
		if (!cli_option_once(&seen, cli_sweep_options, c, optarg, "sweep", NULL))
			return CLI_USAGE;
		switch (c) {
		case OPT_OUTPUT:
			if (!cli_check_output_dir("--output", optarg, true)) /* plan_output_open makes the parents */
				return CLI_USAGE;
			out = optarg;
			break;
		case OPT_JOBS:
			if (!cli_parse_range_long(CONFIG_R_JOBS, optarg, &v))
				return CLI_USAGE;
			so.jobs = (int)v;
			break;
		case OPT_RESUME: resume = true; break;
		case OPT_FORCE: force = true; break;
		case OPT_RETRY: so.retry_failed = true; break;
		case OPT_TIMEOUT:
			if (!cli_parse_range_as(CONFIG_R_TIMEOUT, "--point-timeout", optarg, &so.timeout_s))
				return CLI_USAGE;
			break;
		case OPT_PLOT:
			if (!cli_check_output_dir("--plot", optarg, true))
				return CLI_USAGE;
			plot = optarg;
			break;
		case OPT_DRY: dry = true; break;
		case OPT_QUIET: so.quiet = true; break;
		case OPT_HELP: sweep_help(stdout); return CLI_OK;
		default: return cli_getopt_refused(c, argv);
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "spsim sweep: %s (see spsim sweep --help)\n",
			optind >= argc ? "a spec file is required: spsim sweep SPEC.yaml" : "expected exactly one spec file");
		return CLI_USAGE;
	}
	if (resume && force) {
		fprintf(stderr, "spsim sweep: --resume and --force contradict each other; pass one\n");
		return CLI_USAGE;
	}
	if (so.retry_failed && !resume) {
		fprintf(stderr, "spsim sweep: --retry-failed goes with --resume\n");
		return CLI_USAGE;
	}
	so.mode = resume ? PLAN_OUTPUT_RESUME : force ? PLAN_OUTPUT_FORCE : PLAN_OUTPUT_NEW;
	const char *spec_path = argv[optind];
	config_error err = {""};
	if (plot && !dry && !plan_plot_available(&err)) {
		fprintf(stderr, "spsim sweep: --plot: %s\n", err.msg);
		return CLI_USAGE;
	}
	plan_spec spec;
	if (!plan_spec_load(spec_path, &spec, &err)) {
		cli_errorf("%s\n", err.msg);
		return CLI_USAGE;
	}
	if (dry) {
		int rc = dry_run(&spec);
		plan_spec_finish(&spec);
		return rc;
	}
	char dir[CONFIG_PATH_MAX];
	if (out)
		snprintf(dir, sizeof dir, "%s", out);
	else
		default_output(spec_path, dir, sizeof dir);
	so.out_dir = dir;
	so.log = stderr;
	/* One process: a bad output directory is a usage error, found before any work. (Under a
	 * launcher rank 0 finds it when it opens the output, once every rank is up.) */
	bool launched = false;
#if SPSIM_HAVE_MPI
	launched = plan_dist_mpi_launched();
#endif
	if (!launched && !plan_output_check(dir, so.mode, &err)) {
		fprintf(stderr, "spsim sweep: %s\n", err.msg);
		plan_spec_finish(&spec);
		return CLI_USAGE;
	}

	plan_dist dist = {0};
	bool distributed = false;
#if SPSIM_HAVE_MPI
	if (plan_dist_mpi_launched()) {
		if (!plan_dist_mpi_open(&dist, &err)) {
			fprintf(stderr, "spsim sweep: %s\n", err.msg);
			plan_spec_finish(&spec);
			return CLI_FAIL;
		}
		distributed = dist.size > 1;
		if (!distributed)
			plan_dist_mpi_close(&dist);
	}
#endif
	so.dist = distributed ? &dist : NULL;
	int rank = distributed ? dist.rank : 0;
	plan_sweep_summary sum;
	int rc = CLI_OK;
	if (!plan_sweep_run(&spec, &so, &sum, &err)) {
		if (distributed)
			fprintf(stderr, "spsim sweep: rank %d: %s\n", rank, err.msg);
		else
			fprintf(stderr, "spsim sweep: %s\n", err.msg);
		rc = CLI_FAIL;
	} else if (rank == 0) {
		if (!so.quiet)
			fprintf(stderr,
				"sweep %s: ran %ld points in %.1f s: %ld ok, %ld invalid (rejected by the job check), "
				"%ld failed; rows in %s/points.csv and %s/points.jsonl\n",
				spec.name, sum.ran, sum.wall_s, sum.ok, sum.invalid, sum.failed, dir, dir);
		if (sum.failed)
			rc = CLI_FAIL;
	}
	if (rank == 0 && plot && rc != CLI_USAGE) {
		json_t *rows = NULL;
		int written = 0;
		if (!plan_rows_load(dir, &rows, &err) ||
		    !plan_plot_rows(rows, spec.baseline, spec.name, plot, so.quiet ? NULL : stderr, &written, &err)) {
			fprintf(stderr, "spsim sweep: --plot: %s\n", err.msg);
			rc = CLI_FAIL;
		} else if (!so.quiet) {
			fprintf(stderr, "%d figure%s in %s\n", written, written == 1 ? "" : "s", plot);
		}
		json_decref(rows);
	}
#if SPSIM_HAVE_MPI
	if (distributed)
		plan_dist_mpi_close(&dist);
#endif
	plan_spec_finish(&spec);
	return rc;
}
