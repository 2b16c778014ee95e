/* spsim collective OP: one collective predicted in nccl-tests' format, optionally held
 * against a real nccl-tests log (--compare) before and after calibrating on it. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "engine/nccl.h"
#include "nccltests/nccltests.h"
#include "spsim_build.h"
#if SPSIM_HAVE_SIMGRID && __has_include("engine/simgrid/simgrid.h")
#include "engine/simgrid/simgrid.h"
#endif

enum {
	OPT_GROUPS = CLI_OPT_FIRST_FREE,
	OPT_ALG,
	OPT_COMPARE,
	OPT_GPUS_PER_NODE,
	OPT_IN_PLACE,
	OPT_PROTO,
	OPT_PROCESSES,
};

const struct option cli_collective_options[] = {
	{"minbytes", required_argument, NULL, 'b'},
	{"maxbytes", required_argument, NULL, 'e'},
	{"stepfactor", required_argument, NULL, 'f'},
	/* the spellings spsim-validate uses, as aliases */
	{"min-bytes", required_argument, NULL, 'b'},
	{"max-bytes", required_argument, NULL, 'e'},
	{"factor", required_argument, NULL, 'f'},
	{"stepbytes", required_argument, NULL, 'i'},
	{"ngpus", required_argument, NULL, 'g'},
	{"datatype", required_argument, NULL, 'd'},
	{"op", required_argument, NULL, 'o'},
	{"redop", required_argument, NULL, 'o'},
	{"platform", required_argument, NULL, CLI_OPT_PLATFORM},
	{"nodes", required_argument, NULL, CLI_OPT_NODES},
	{"calibration", required_argument, NULL, CLI_OPT_CALIBRATION},
	{"engine", required_argument, NULL, CLI_OPT_ENGINE},
	{"format", required_argument, NULL, CLI_OPT_FORMAT},
	{"placement", required_argument, NULL, CLI_OPT_PLACEMENT},
	{"groups", required_argument, NULL, OPT_GROUPS},
	{"alg", required_argument, NULL, OPT_ALG},
	{"compare", required_argument, NULL, OPT_COMPARE},
	{"gpus-per-node", required_argument, NULL, OPT_GPUS_PER_NODE},
	{"in-place", no_argument, NULL, OPT_IN_PLACE},
	{"proto", required_argument, NULL, OPT_PROTO},
	{"processes", required_argument, NULL, OPT_PROCESSES},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

static void usage(FILE *f)
{
	fputs("usage: spsim collective OP --platform NAME [options]\n"
	      "Predicts one collective in nccl-tests' output format (size, count, type, redop, root,\n"
	      "time, algbw, busbw), so it can be held next to an all_reduce_perf/alltoall_perf log.\n"
	      "OP: allreduce, allgather, reducescatter, alltoall, sendrecv, broadcast (nccl-tests' names,\n"
	      "e.g. all_reduce_perf, also work). busbw = algbw x factor as nccl-tests' doc/PERFORMANCE.md.\n"
	      "\n"
	      "Sizes and ranks (nccl-tests' flags and meaning):\n"
	      "  -b, --minbytes SIZE     smallest size (default 32M; K, M, G suffixes are powers of 1024;\n"
	      "                          --min-bytes is the same flag)\n"
	      "  -e, --maxbytes SIZE     largest size (default 32M; alias --max-bytes)\n"
	      "  -f, --stepfactor F      multiply the size by F each step (alias --factor)\n"
	      "  -i, --stepbytes SIZE    else add SIZE each step (default 1M)\n"
	      "  -g, --ngpus N           GPUs taking part (default: every GPU of the platform)\n"
	      "  -d, --datatype TYPE     float (default), half, bfloat16, double, int8, ... (sets the count column)\n"
	      "  -o, --op REDOP          reduction printed in the redop column: sum, prod, max, min, avg, mulsum\n"
	      "                          or none (default: what nccl-tests prints, sum or none; alias --redop)\n"
	      "Cluster and model:\n"
	      "  --platform NAME|FILE    cluster: a shipped name (spsim platforms) or a YAML path (required)\n"
	      "  --nodes N               override the platform's node count\n"
	      "  --calibration FILE      measured latencies/bandwidths (spsim calibrate, validate)\n"
	      "  --groups K              run the collective in disjoint groups of K consecutive ranks at once\n"
	      "                          (the BASP pattern); busbw then uses K ranks (default: one group of all)\n"
	      "  --placement contiguous|strided|random:SEED   rank placement on the nodes (default contiguous)\n"
	      "  --alg ALG               ring | tree | nvls | direct | pairwise | hierarchical (default: NCCL's\n"
	      "                          own choice among ring, tree and NVLS for the ring family, direct for\n"
	      "                          alltoall and sendrecv); ring, tree, nvls force NCCL's algorithm\n"
	      "  --proto LL|LL128|Simple force NCCL's protocol (default: NCCL's tuner's choice per size)\n"
	      "  --processes per_gpu|per_node   one process per GPU (torchrun, mpirun -np N -g 1) or one\n"
	      "                          driving a node's GPUs (nccl-tests -g N, -t N): within one process\n"
	      "                          NCCL's p2p path skips its staging copy (default: per_node for a\n"
	      "                          --compare LOG whose '# nThread T nGpus G' puts a node's GPUs in\n"
	      "                          one process, else the platform's nccl.processes, per_gpu)\n"
	      "  --engine NAME           ",
	      f);
	cli_engine_choices(f);
	fputs("Against a real log:\n"
	      "  --compare LOG           predicted vs measured per size of LOG (its collective, ranks and layout),\n"
	      "                          with % busbw error, before and after calibrating on LOG; -b/-e limit\n"
	      "                          the sizes compared; the fit uses those >= 1M (or >= -b when given);\n"
	      "                          -g, --groups, -d, -f, -i, -o are the log's and refused with it\n"
	      "  --gpus-per-node N       layout of a LOG without a '# Using devices' rank table\n"
	      "  --in-place              compare the in-place columns (default out-of-place)\n"
	      "Output:\n"
	      "  --format table|json|csv (default table: nccl-tests' own format)\n"
	      "\n"
	      "Example: spsim collective allreduce --platform dgx-a100 -b 8 -e 8G -f 2\n"
	      "         spsim collective alltoall --platform dgx-h100 --nodes 4 --groups 8 -b 1M -e 1G -f 4\n",
	      f);
}

/* Sizes of one sweep: nccl-tests' -b 8 -e 8G -f 2 gives 31. */
#define MAX_SIZES 10000

typedef struct coll_args {
	cli_job_args job; /* platform, nodes, calibration, engine, format, placement */
	bool coll_set;
	workload_coll coll;
	double min_bytes, max_bytes, step_factor, step_bytes;
	bool min_set, max_set;
	int gpus;
	int group_size;
	const char *alg_name;
	const char *proto_name;
	bool processes_set; /* --processes given: processes (CONFIG_NCCL_PROCS_*) replaces the platform's */
	int processes;
	const char *type;
	const char *redop;
	const char *compare;
	const char *sizing_flag; /* the last of -g, --groups, -d, -f, -i, -o given: the log sets them under --compare */
	int log_gpn;
	bool in_place;
} coll_args;

static int parse_args(int argc, char **argv, coll_args *a)
{
	cli_job_init(&a->job);
	a->min_bytes = a->max_bytes = 32.0 * 1024 * 1024; /* nccl-tests' defaults */
	a->step_bytes = 1024.0 * 1024;
	a->step_factor = 1;
	a->type = "float";
	a->redop = NULL;
	long v;
	int c;
	cli_seen seen = {0};
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":b:e:f:i:g:d:o:h", cli_collective_options, NULL)) != -1) {
		if (!cli_option_once(&seen, cli_collective_options, c, optarg, "collective", NULL))
			return CLI_USAGE;
		switch (c) {
		case 'h': usage(stdout); return CLI_OK;
		case 'b':
			if (!cli_parse_coll_size("collective", "-b", optarg, &a->min_bytes))
				return CLI_USAGE;
			a->min_set = true;
			break;
		case 'e':
			if (!cli_parse_coll_size("collective", "-e", optarg, &a->max_bytes))
				return CLI_USAGE;
			a->max_set = true;
			break;
		case 'i':
			if (!cli_parse_coll_size("collective", "-i", optarg, &a->step_bytes) || a->step_bytes <= 0) {
				fprintf(stderr, "spsim collective: -i expects a positive size\n");
				return CLI_USAGE;
			}
			a->sizing_flag = "-i";
			break;
		case 'f':
			if (!cli_parse_range_long(CONFIG_R_COLL_FACTOR, optarg, &v))
				return CLI_USAGE;
			a->step_factor = (double)v;
			a->sizing_flag = "-f";
			break;
		case 'g':
			if (!cli_parse_range_long_as(CONFIG_R_COLL_GROUP, "-g", optarg, &v))
				return CLI_USAGE;
			a->gpus = (int)v;
			a->sizing_flag = "-g";
			break;
		case 'd':
			if (nccltests_type_size(optarg) == 0) {
				fprintf(stderr, "spsim collective: -d expects an nccl-tests datatype (float, half, bfloat16, "
						"double, int8, int32, int64, ...), got '%s'\n", optarg);
				return CLI_USAGE;
			}
			a->type = optarg;
			a->sizing_flag = "-d";
			break;
		case 'o': {
			/* nccl-tests' -o names (its test_opnames; "none" is the column of a collective
			 * that does not reduce); a prediction has one, so not "all" */
			if (!nccltests_redop_known(optarg)) {
				fprintf(stderr, "spsim collective: -o/--op expects " NCCLTESTS_REDOPS ", got '%s'\n", optarg);
				return CLI_USAGE;
			}
			a->redop = optarg;
			a->sizing_flag = "-o";
			break;
		}
		case OPT_GROUPS:
			if (!cli_parse_range_long(CONFIG_R_COLL_GROUP, optarg, &v))
				return CLI_USAGE;
			a->group_size = (int)v;
			a->sizing_flag = "--groups";
			break;
		case OPT_ALG: a->alg_name = optarg; break;
		case OPT_COMPARE: a->compare = optarg; break;
		case OPT_GPUS_PER_NODE:
			if (!cli_parse_range_long(CONFIG_R_GPUS_PER_NODE, optarg, &v))
				return CLI_USAGE;
			a->log_gpn = (int)v;
			break;
		case OPT_IN_PLACE: a->in_place = true; break;
		case OPT_PROTO: a->proto_name = optarg; break;
		case OPT_PROCESSES:
			if (!cli_parse_processes(optarg, &a->processes))
				return CLI_USAGE;
			a->processes_set = true;
			break;
		case ':':
		case '?': return cli_getopt_refused(c, argv);
		default: {
			int r = cli_job_option(&a->job, c, optarg);
			if (r < 0)
				return CLI_USAGE;
			break;
		}
		}
	}
	for (int i = optind; i < argc; i++) {
		if (a->coll_set) {
			fprintf(stderr, "spsim collective: one collective at a time, got '%s' after '%s'\n", argv[i],
				workload_coll_name(a->coll));
			return CLI_USAGE;
		}
		if (!nccltests_coll_from_name(argv[i], &a->coll)) {
			fprintf(stderr, "spsim collective: unknown collective '%s', expected allreduce, allgather, "
					"reducescatter, alltoall, sendrecv or broadcast\n", argv[i]);
			return CLI_USAGE;
		}
		a->coll_set = true;
	}
	if (!a->coll_set && !a->compare) {
		fprintf(stderr, "spsim collective: which collective? (allreduce, allgather, reducescatter, alltoall, "
				"sendrecv, broadcast; see spsim collective --help)\n");
		return CLI_USAGE;
	}
	if (a->compare && a->sizing_flag) {
		fprintf(stderr, "spsim collective: %s does not apply with --compare: the log gives the ranks, sizes, "
				"datatype and reduction (-b/-e limit the sizes compared); drop %s\n",
			a->sizing_flag, a->sizing_flag);
		return CLI_USAGE;
	}
	/* --compare takes the log's sizes: -b alone limits them from below, whatever -e's default */
	if (a->compare && !a->max_set)
		a->max_bytes = fmax(a->max_bytes, a->min_bytes);
	/* The size loop below must end: bounded sizes, each step growing them. */
	double steps = a->step_factor > 1 ? floor(log(fmax(a->max_bytes, 1) / fmax(a->min_bytes, 1)) / log(a->step_factor))
					  : floor((a->max_bytes - a->min_bytes) / a->step_bytes);
	if (a->min_bytes <= a->max_bytes && steps + 1 > MAX_SIZES) {
		fprintf(stderr, "spsim collective: -b/-e with %s give %.0f sizes, expected at most %d; use a larger -f or -i\n",
			a->step_factor > 1 ? "-f" : "-i", steps + 1, MAX_SIZES);
		return CLI_USAGE;
	}
	if (a->min_bytes > a->max_bytes) {
		fprintf(stderr, "spsim collective: -b %.0f is larger than -e %.0f%s\n", a->min_bytes, a->max_bytes,
			a->max_set ? "" : " (-e's default, as nccl-tests'; give -e too)");
		return CLI_USAGE;
	}
	if (!a->job.platform[0]) {
		fprintf(stderr, "spsim collective: --platform is required (a shipped name or a YAML path; see spsim "
				"platforms)\n");
		return CLI_USAGE;
	}
	return -1;
}

/* Loads the platform, applies --nodes and --calibration. */
static bool load_platform(coll_args *a, config_platform *p)
{
	config_error err;
	if (!config_load_platform(a->job.platform, p, &err)) {
		cli_errorf("--platform: %s\n", err.msg);
		return false;
	}
	if (a->job.nodes)
		p->nodes = a->job.nodes;
	if (a->processes_set)
		p->nccl.processes = a->processes;
	if (a->job.calibration[0]) {
		if (!config_calibrate_platform(a->job.calibration, p, &a->job.cal, &err)) {
			cli_errorf("--calibration: %s\n", err.msg);
			return false;
		}
		a->job.has_cal = true;
	}
	if (!config_platform_check(p, &err)) {
		cli_errorf("%s\n", err.msg);
		return false;
	}
	return true;
}

/* --alg and --proto: spsim's algorithm, and NCCL's algorithm/protocol forced on p
 * (engine/nccl.h) where given. */
static bool resolve_alg(const coll_args *a, workload_coll c, workload_alg *alg, config_platform *p)
{
	nccl_proto np = NCCL_PROTO_SIMPLE;
	p->nccl.force_algo = p->nccl.force_proto = 0;
	if (a->proto_name) {
		if (!nccl_proto_from_name(a->proto_name, &np)) {
			fprintf(stderr, "spsim collective: --proto '%s' is not an NCCL protocol, expected LL, LL128 or "
					"Simple\n", a->proto_name);
			return false;
		}
		p->nccl.force_proto = np + 1;
	}
	*alg = nccltests_default_alg(c);
	/* a forced NCCL algorithm: nccl_force_check below says where it cannot run */
	if (a->alg_name && !nccltests_resolve_alg(c, a->alg_name, alg, &p->nccl.force_algo)) {
		fprintf(stderr, "spsim collective: --alg '%s' is not an algorithm spsim models for %s (alltoall: direct, "
				"pairwise, hierarchical; allgather, reducescatter, allreduce: ring, hierarchical; sendrecv: "
				"direct; broadcast: ring; NCCL's tree for allreduce, nvls where the platform has it)\n",
			a->alg_name, workload_coll_name(c));
		return false;
	}
	char why[256];
	if (!nccl_force_check(p, c, p->nccl.force_algo, p->nccl.force_proto, why, sizeof why)) {
		fprintf(stderr, "spsim collective: %s\n", why);
		return false;
	}
	return true;
}

/* The algorithm a run used, as printed: NCCL's when --alg forced one (tree, nvls: the op
 * program stays ring's, and 'ring' was printed for a forced tree), else the program's. */
static const char *alg_label(const nccltests_setup *s)
{
	int f = s->platform->nccl.force_algo;
	return f ? nccl_algo_name((nccl_algo)(f - 1)) : workload_alg_name(s->alg);
}

/* Times of the collective at each size, from the chosen engine. */
static bool time_sizes(const coll_args *a, const nccltests_setup *s, const double *sizes, int n, double *times)
{
	config_error err;
	if (strcmp(a->job.engine, "simgrid") == 0) {
#if defined(ENGINE_SIMGRID_COLLECTIVE_READY)
		engine_options opt = {.placement = s->placement, .placement_seed = s->seed};
		if (!engine_simgrid_collective_times(s->platform, s->coll, s->alg, s->gpus, s->group_size, &opt, sizes, n,
						     times, &err)) {
			fprintf(stderr, "spsim collective: %s\n", err.msg);
			return false;
		}
		return true;
#else
		fprintf(stderr, "spsim collective: --engine simgrid cannot time a single collective in this build (the "
				"SimGrid engine does not export a collective timer); use --engine analytic\n");
		return false;
#endif
	}
	for (int i = 0; i < n; i++)
		if (!nccltests_predict_time(s, sizes[i], &times[i], &err)) {
			fprintf(stderr, "spsim collective: %s\n", err.msg);
			return false;
		}
	return true;
}

static const char *placement_name(const coll_args *a, char *buf, size_t len)
{
	switch (a->job.opt.placement) {
	case ENGINE_PLACE_STRIDED: return "strided";
	case ENGINE_PLACE_RANDOM: snprintf(buf, len, "random:%lu", a->job.opt.placement_seed); return buf;
	default: return "contiguous";
	}
}

/* --------------------------------------------------------------- predict --- */

static void print_rank_table(FILE *f, const nccltests_setup *s)
{
	int *node_of = malloc((size_t)s->gpus * sizeof *node_of);
	int *local = calloc((size_t)config_platform_gpus(s->platform), sizeof *local);
	if (!node_of || !local) {
		free(node_of);
		free(local);
		return;
	}
	nccltests_place(s, node_of);
	fprintf(f, "# Using devices\n");
	for (int r = 0; r < s->gpus; r++) {
		char host[32];
		snprintf(host, sizeof host, "node%d", node_of[r]);
		/* Pid 0 and bus [0x00]: no process ran; Group is the rank's group (--groups) */
		fprintf(f, "#  Rank %2d Group %2d Pid %6d on %10s device %2d [0x00] %s\n", r, r / s->group_size, 0, host,
			local[node_of[r]]++, s->platform->gpu.name);
	}
	free(node_of);
	free(local);
}

static int predict(coll_args *a)
{
	config_platform p;
	if (!load_platform(a, &p))
		return CLI_USAGE;
	nccltests_setup s = {.platform = &p, .coll = a->coll, .gpus = a->gpus ? a->gpus : config_platform_gpus(&p),
			     .placement = a->job.opt.placement, .seed = a->job.opt.placement_seed};
	s.group_size = a->group_size ? a->group_size : s.gpus;
	if (!resolve_alg(a, a->coll, &s.alg, &p))
		return CLI_USAGE;
	config_error err;
	if (!nccltests_setup_check(&s, &err) || !engine_platform_supported(a->job.engine, &p, &err)) {
		fprintf(stderr, "spsim collective: %s\n", err.msg);
		return CLI_USAGE;
	}
	/* nccl-tests' loop: size from -b to -e, times -f or plus -i; each rounded to whole
	 * elements per rank */
	int ts = nccltests_type_size(a->type), P = s.group_size, n = 0, cap = 64;
	double *sizes = malloc((size_t)cap * sizeof *sizes);
	for (double b = a->min_bytes; sizes && b <= a->max_bytes;
	     b = a->step_factor > 1 ? b * a->step_factor : b + a->step_bytes) {
		if (n == cap) {
			double *bigger = realloc(sizes, (size_t)(cap *= 2) * sizeof *sizes);
			if (!bigger) {
				free(sizes);
				sizes = NULL;
				break;
			}
			sizes = bigger;
		}
		sizes[n++] = nccltests_round_size(a->coll, b, ts, P);
		if (n >= MAX_SIZES || b == 0)
			break;
	}
	double *times = sizes ? malloc((size_t)(n ? n : 1) * sizeof *times) : NULL;
	if (!sizes || !times) {
		free(sizes);
		free(times);
		fprintf(stderr, "spsim collective: out of memory\n");
		return CLI_FAIL;
	}
	if (!time_sizes(a, &s, sizes, n, times)) {
		free(sizes);
		free(times);
		return CLI_FAIL;
	}
	const char *redop = a->redop ? a->redop : nccltests_default_redop(a->coll);
	int root = nccltests_default_root(a->coll);
	int nodes = (s.gpus + p.gpus_per_node - 1) / p.gpus_per_node;
	char pbuf[64];
	double sum = 0;
	json_t *rows = json_array();
	if (a->job.format == REPORT_TABLE) {
		printf("# spsim collective: %s predicted by the %s engine (no GPU ran this)\n", nccltests_test_name(a->coll),
		       a->job.engine);
		printf("# platform %s%s%s, %d GPUs on %d node%s of %d, %d group%s of %d ranks, %s algorithm, %s "
		       "placement\n",
		       p.name, a->job.has_cal ? " calibrated by " : "", a->job.has_cal ? a->job.calibration : "", s.gpus,
		       nodes, nodes == 1 ? "" : "s", p.gpus_per_node, s.gpus / P, s.gpus / P == 1 ? "" : "s", P,
		       alg_label(&s), placement_name(a, pbuf, sizeof pbuf));
		printf("# Collective test starting: %s\n", nccltests_test_name(a->coll));
		printf("# nThread 1 nGpus 1 minBytes %.0f maxBytes %.0f step: %.0f(%s) warmup iters: 0 iters: 1 agg iters: "
		       "1 validation: 0 graph: 0\n#\n",
		       a->min_bytes, a->max_bytes, a->step_factor > 1 ? a->step_factor : a->step_bytes,
		       a->step_factor > 1 ? "factor" : "bytes");
		print_rank_table(stdout, &s);
		printf("#\n");
		nccltests_print_table_header(stdout);
	} else if (a->job.format == REPORT_CSV) {
		printf("size,count,type,redop,root,time_us,algbw_GBps,busbw_GBps,nccl_algorithm,nccl_protocol,"
		       "nccl_channels\n");
	}
	for (int i = 0; i < n; i++) {
		nccltests_result r;
		nccltests_result_make(a->coll, P, ts, sizes[i], times[i], &r);
		sum += r.busbw;
		/* what NCCL runs at this size, as the model chose it (NCCL_DEBUG_SUBSYS=TUNING's
		 * view), for JSON and CSV; the table keeps nccl-tests' own columns */
		nccltests_choice ch = {.algorithm = "?", .protocol = "?"};
		config_error cerr;
		if (a->job.format != REPORT_TABLE && !nccltests_predict_choice(&s, sizes[i], &ch, &cerr))
			ch = (nccltests_choice){.algorithm = "?", .protocol = "?"};
		if (a->job.format == REPORT_TABLE)
			nccltests_print_row(stdout, &r, a->type, redop, root);
		else if (a->job.format == REPORT_CSV)
			printf("%.0f,%.0f,%s,%s,%d,%.6g,%.6g,%.6g,%s,%s,%d\n", r.size, r.count, a->type, redop, root,
			       r.time_us, r.algbw, r.busbw, ch.algorithm, ch.protocol, ch.channels);
		else {
			/* the pairs NCCL's tuner compared, with its own model time, fastest first */
			json_t *cand = json_array();
			for (int c = 0; c < ch.n_candidates; c++)
				json_array_append_new(cand, json_pack("{s:s, s:s, s:f}", "algorithm",
								      ch.candidates[c].algorithm, "protocol",
								      ch.candidates[c].protocol, "model_time_us",
								      ch.candidates[c].model_time * 1e6));
			json_array_append_new(rows, json_pack("{s:f, s:f, s:s, s:s, s:i, s:f, s:f, s:f, "
							      "s:{s:s, s:s, s:i, s:f, s:o}}",
							      "size", r.size, "count", r.count, "type", a->type, "redop",
							      redop, "root", root, "time", r.time_us, "alg_bw", r.algbw,
							      "bus_bw", r.busbw, "nccl", "algorithm", ch.algorithm,
							      "protocol", ch.protocol, "channels", ch.channels,
							      "latency_us", ch.latency * 1e6, "candidates", cand));
		}
	}
	double avg = n ? sum / n : 0;
	if (a->job.format == REPORT_TABLE) {
		printf("# Avg bus bandwidth    : %g \n#\n", avg);
	} else if (a->job.format == REPORT_JSON) {
		json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s?, s:i, s:i, s:i, s:i, s:i, s:s, s:s, s:s, s:o, s:f}",
				      "collective", workload_coll_name(a->coll), "test", nccltests_test_name(a->coll),
				      "engine", a->job.engine, "platform", p.name, "calibration",
				      a->job.has_cal ? a->job.calibration : NULL, "gpus", s.gpus, "nodes", nodes,
				      "gpus_per_node", p.gpus_per_node, "group_size", P, "groups", s.gpus / P, "alg",
				      alg_label(&s), "placement", placement_name(a, pbuf, sizeof pbuf), "type",
				      a->type, "results", rows, "avg_bus_bw", avg);
		rows = NULL;
		report_json_print(stdout, o);
		json_decref(o);
	}
	json_decref(rows);
	free(sizes);
	free(times);
	return CLI_OK;
}

/* --------------------------------------------------------------- compare --- */

static double pct(double got, double want) { return want > 0 ? 100.0 * (got - want) / want : NAN; }

/* One link class of a calibration: the terms it sets (null where it keeps the platform's). */
static json_t *cal_class_json(bool has_lat, double lat, bool has_bw, double bw)
{
	return json_pack("{s:o, s:o}", "latency_us", has_lat ? json_real(lat * 1e6) : json_null(), "bandwidth_GBps",
			 has_bw ? json_real(bw / 1e9) : json_null());
}

/* What calibration each column of --compare ran on: `given` the --calibration file under
 * both (null without one); `fitted` what the fit to this log set for the "calibrated"
 * columns, per link class, the launch per call and the protocol entries kept; `path` the
 * NCCL path whose cost the fitted links time: "p2p" for send/recv and the direct
 * all-to-all (NCCL's p2p channels, engine/nccl.c p2p_cost), "collective" for the tuned
 * ring/tree/NVLS algorithms, "links" when NCCL's terms are off (collectives: links). */
static json_t *compare_calibration_json(const coll_args *a, const config_platform *p, workload_coll c,
					workload_alg alg, const config_calibration *cal)
{
	bool p2p = c == WL_COLL_SENDRECV || (c == WL_COLL_ALLTOALL && alg == WL_ALG_DIRECT);
	json_t *protos = json_array();
	for (int k = 0; k < 2; k++)
		for (int e = 0; e < CONFIG_CAL_ENTRIES; e++)
			if (cal->proto[k][e].has_latency || cal->proto[k][e].has_bw)
				json_array_append_new(protos, json_pack("{s:s, s:s}", "class", k ? "inter_node" : "intra_node",
									"entry", nccltests_entry_name(e)));
	return json_pack("{s:o, s:{s:s, s:s, s:o, s:o, s:o, s:o}}", "given",
			 a->job.has_cal ? json_string(a->job.calibration) : json_null(), "fitted", "source", "this log",
			 "path", p->nccl.links_only ? "links" : p2p ? "p2p" : "collective", "intra_node",
			 cal_class_json(cal->has_intra_latency, cal->intra_latency, cal->has_intra_bw, cal->intra_bw),
			 "inter_node",
			 cal_class_json(cal->has_inter_latency, cal->inter_latency, cal->has_inter_bw, cal->inter_bw),
			 "collective_overhead_us", cal->has_overhead ? json_real(cal->overhead * 1e6) : json_null(),
			 "protocols", protos);
}

static int compare(coll_args *a)
{
	config_error err;
	nccltests_parse_opts po = {.coll_set = a->coll_set, .coll = a->coll, .gpus_per_node = a->log_gpn};
	nccltests_log log;
	if (!nccltests_parse_file(a->compare, &po, &log, &err)) {
		cli_errorf("--compare: %s\n", err.msg);
		return CLI_USAGE;
	}
	int rc = CLI_USAGE;
	config_platform p;
	double *sizes = NULL, *t0 = NULL, *t1 = NULL, *meas = NULL;
	int *row_of = NULL;
	json_t *rows = NULL;
	if (!load_platform(a, &p))
		goto out;
	if (p.gpus_per_node != log.gpus_per_node)
		fprintf(stderr, "spsim collective: note: %s ran %d GPUs per node, %s has %d; modelling the log's layout\n",
			a->compare, log.gpus_per_node, p.name, p.gpus_per_node);
	p.nodes = log.nodes;
	p.gpus_per_node = log.gpus_per_node;
	/* a process driving every GPU of its node ("# nThread T nGpus G", T x G of them): NCCL's
	 * p2p path writes through direct pointers, no staging (engine/nccl.c p2p_staging_drain) */
	if (!a->processes_set && nccltests_log_one_process_per_node(&log)) {
		p.nccl.processes = CONFIG_NCCL_PROCS_PER_NODE;
		fprintf(stderr, "spsim collective: note: %s ran %d GPUs per process (nThread %d nGpus %d): one process per node, "
				"as --processes per_node\n",
			a->compare, log.nthreads * log.ngpus, log.nthreads, log.ngpus);
	}
	nccltests_setup s = {.platform = &p, .coll = log.coll, .gpus = log.ranks, .group_size = log.ranks,
			     .placement = ENGINE_PLACE_CONTIGUOUS};
	if (!resolve_alg(a, log.coll, &s.alg, &p))
		goto out;
	if (!engine_platform_supported(a->job.engine, &p, &err)) { /* the log's layout */
		fprintf(stderr, "spsim collective: --compare %s: %s\n", a->compare, err.msg);
		goto out;
	}
	int col = a->in_place ? NCCLTESTS_IP : NCCLTESTS_OOP;
	if (col >= log.groups) {
		fprintf(stderr, "spsim collective: %s has no in-place columns\n", a->compare);
		goto out;
	}
	double lo = a->min_set ? a->min_bytes : 0, hi = a->max_set ? a->max_bytes : INFINITY;
	sizes = malloc((size_t)log.n_rows * sizeof *sizes);
	t0 = malloc((size_t)log.n_rows * sizeof *t0);
	t1 = malloc((size_t)log.n_rows * sizeof *t1);
	meas = malloc((size_t)log.n_rows * sizeof *meas);
	row_of = malloc((size_t)log.n_rows * sizeof *row_of);
	if (!sizes || !t0 || !t1 || !meas || !row_of) {
		fprintf(stderr, "spsim collective: out of memory\n");
		rc = CLI_FAIL;
		goto out;
	}
	int n = 0;
	for (int i = 0; i < log.n_rows; i++) {
		const nccltests_row *r = &log.rows[i];
		if (!r->has[col] || r->size <= 0 || r->size < lo || r->size > hi)
			continue;
		sizes[n] = r->size;
		meas[n] = r->time_us[col] * 1e-6;
		row_of[n++] = i;
	}
	if (n == 0) {
		fprintf(stderr, "spsim collective: no sizes of %s in the range -b/-e\n", a->compare);
		goto out;
	}
	rc = CLI_FAIL;
	if (!time_sizes(a, &s, sizes, n, t0))
		goto out;
	/* calibrate on the log: the fitted link class replaces the platform's */
	/* the fit defaults to sizes >= 1 MiB as spsim calibrate does */
	nccltests_calib_opts co = {.platform = &p, .in_place = a->in_place,
				   .min_bytes = a->min_set ? lo : 1024.0 * 1024, .proto_min_bytes = a->min_set ? lo : 0, .max_bytes = isfinite(hi) ? hi : 0, .alg_set = true, .alg = s.alg,
				   .processes_set = a->processes_set, .processes = p.nccl.processes};
	config_calibration cal;
	nccltests_calib_report rep;
	if (!nccltests_calibrate(&log, 1, &co, &cal, &rep, &err)) {
		fprintf(stderr, "spsim collective: %s\n", err.msg);
		rc = CLI_USAGE;
		goto out;
	}
	config_platform pc = p;
	config_apply_calibration(&pc, &cal);
	nccltests_setup sc = s;
	sc.platform = &pc;
	if (!time_sizes(a, &sc, sizes, n, t1))
		goto out;
	const nccltests_calib_class *k = rep.inter.fitted ? &rep.inter : &rep.intra;
	const char *cls = rep.inter.fitted ? "inter_node" : "intra_node";
	int P = log.ranks, ts;
	if (a->job.format == REPORT_TABLE) {
		printf("# spsim collective --compare %s: %s on %d node%s x %d GPUs (%s), platform %s%s%s, %s engine, %s\n",
		       a->compare, nccltests_test_name(log.coll), log.nodes, log.nodes == 1 ? "" : "s", log.gpus_per_node,
		       a->in_place ? "in-place" : "out-of-place", p.name, a->job.has_cal ? " calibrated by " : "",
		       a->job.has_cal ? a->job.calibration : "", a->job.engine, alg_label(&s));
		char lat[64], bw[96];
		nccltests_fit_text(&k->fit, 0, lat, sizeof lat, bw, sizeof bw);
		printf("# predicted: the platform as given; calibrated: after fitting %s to this log (%s %s, %s)\n", cls,
		       cls, lat, bw);
		char protos[512];
		nccltests_protocols_text(k, protos, sizeof protos);
		if (protos[0])
			printf("# %s per protocol, timing the one NCCL's tuner picks at each size: %s\n", cls, protos);
		printf("# error: (predicted busbw - measured busbw) / measured busbw\n#\n");
		/* each group of three columns is 25 characters wide: center its name over it */
		printf("# %10s  %12s  %8s  %6s  %6s  %s%s%s\n", "", "", "", "", "", "         measured        ",
		       "        predicted        ", "        calibrated");
		printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %7s  %6s  %6s  %7s  %6s  %6s\n", "size", "count", "type",
		       "redop", "root", "time", "algbw", "busbw", "time", "busbw", "error", "time", "busbw", "error");
		printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %7s  %6s  %6s  %7s  %6s  %6s\n", "(B)", "(elements)", "",
		       "", "", "(us)", "(GB/s)", "(GB/s)", "(us)", "(GB/s)", "(%)", "(us)", "(GB/s)", "(%)");
	} else if (a->job.format == REPORT_CSV) {
		printf("size,count,type,redop,root,measured_time_us,measured_busbw_GBps,predicted_time_us,"
		       "predicted_busbw_GBps,error_pct,calibrated_time_us,calibrated_busbw_GBps,calibrated_error_pct\n");
	} else {
		rows = json_array();
	}
	double worst0 = 0, worst1 = 0;
	for (int i = 0; i < n; i++) {
		const nccltests_row *r = &log.rows[row_of[i]];
		ts = nccltests_type_size(r->type);
		nccltests_result m, r0, r1;
		nccltests_result_make(log.coll, P, ts, sizes[i], meas[i], &m);
		nccltests_result_make(log.coll, P, ts, sizes[i], t0[i], &r0);
		nccltests_result_make(log.coll, P, ts, sizes[i], t1[i], &r1);
		double e0 = pct(r0.busbw, m.busbw), e1 = pct(r1.busbw, m.busbw);
		if (sizes[i] >= 1024.0 * 1024) {
			worst0 = fmax(worst0, fabs(e0));
			worst1 = fmax(worst1, fabs(e1));
		}
		const char *redop = r->redop[0] ? r->redop : nccltests_default_redop(log.coll);
		if (a->job.format == REPORT_TABLE) {
			char f[9][32];
			nccltests_format_float(m.time_us, 7, f[0], 32);
			nccltests_format_float(m.algbw, 6, f[1], 32);
			nccltests_format_float(m.busbw, 6, f[2], 32);
			nccltests_format_float(r0.time_us, 7, f[3], 32);
			nccltests_format_float(r0.busbw, 6, f[4], 32);
			nccltests_format_float(r1.time_us, 7, f[6], 32);
			nccltests_format_float(r1.busbw, 6, f[7], 32);
			printf("%12.0f  %12.0f  %8s  %6s  %6d  %7s  %6s  %6s  %7s  %6s  %+6.1f  %7s  %6s  %+6.1f\n", r->size,
			       r->count, r->type, redop, r->root, f[0], f[1], f[2], f[3], f[4], e0, f[6], f[7], e1);
		} else if (a->job.format == REPORT_CSV) {
			printf("%.0f,%.0f,%s,%s,%d,%.6g,%.6g,%.6g,%.6g,%.4g,%.6g,%.6g,%.4g\n", r->size, r->count, r->type, redop,
			       r->root, m.time_us, m.busbw, r0.time_us, r0.busbw, e0, r1.time_us, r1.busbw, e1);
		} else {
			json_array_append_new(
				rows, json_pack("{s:f, s:f, s:s, s:s, s:i, s:{s:f, s:f, s:f}, s:{s:f, s:f, s:f}, s:f, "
						"s:{s:f, s:f, s:f}, s:f}",
						"size", r->size, "count", r->count, "type", r->type, "redop", redop, "root",
						r->root, "measured", "time", m.time_us, "alg_bw", m.algbw, "bus_bw", m.busbw,
						"predicted", "time", r0.time_us, "alg_bw", r0.algbw, "bus_bw", r0.busbw,
						"error_pct", e0, "calibrated", "time", r1.time_us, "alg_bw", r1.algbw,
						"bus_bw", r1.busbw, "calibrated_error_pct", e1));
		}
	}
	if (a->job.format == REPORT_TABLE) {
		printf("# largest |busbw error| at sizes >= 1 MiB: predicted %.1f%%, calibrated %.1f%%\n#\n", worst0, worst1);
	} else if (a->job.format == REPORT_JSON) {
		json_t *protos = json_object();
		for (int pr = 0; pr < CONFIG_CAL_ENTRIES; pr++)
			if (k->proto_fitted[pr])
				json_object_set_new(protos, nccltests_entry_name(pr),
						    json_pack("{s:f, s:f, s:b, s:b, s:f, s:i}", "latency_us",
							      k->proto_fit[pr].latency * 1e6, "bandwidth_GBps",
							      k->proto_fit[pr].bandwidth / 1e9, "latency_kept",
							      k->proto_kept_latency[pr], "bandwidth_kept", k->proto_kept_bw[pr],
							      "max_error_pct", k->proto_fit[pr].max_rel * 100, "points",
							      k->proto_fit[pr].n_points));
		json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:s, s:s, s:{s:s, s:f, s:f, s:f, s:f, s:o}, s:o, "
				      "s:f, s:f, s:o}",
				      "log", a->compare, "collective", workload_coll_name(log.coll), "platform", p.name,
				      "engine", a->job.engine, "ranks", log.ranks, "nodes", log.nodes, "gpus_per_node",
				      log.gpus_per_node, "alg", alg_label(&s), "columns",
				      a->in_place ? "in-place" : "out-of-place", "fit", "link_class", cls, "latency_us",
				      k->fit.latency * 1e6, "bandwidth_GBps", k->fit.bandwidth / 1e9, "rms_error_pct",
				      k->fit.rms_rel * 100, "max_error_pct", k->fit.max_rel * 100, "protocols", protos,
				      "results", rows,
				      "max_abs_error_pct_1MiB_up", worst0, "calibrated_max_abs_error_pct_1MiB_up", worst1,
				      "calibration", compare_calibration_json(a, &p, log.coll, s.alg, &cal));
		rows = NULL;
		report_json_print(stdout, o);
		json_decref(o);
	}
	for (char *line = strtok(rep.notes, "\n"); line; line = strtok(NULL, "\n"))
		fprintf(stderr, "spsim collective: note: %s\n", line);
	rc = CLI_OK;
out:
	json_decref(rows);
	free(sizes);
	free(t0);
	free(t1);
	free(meas);
	free(row_of);
	nccltests_log_finish(&log);
	return rc;
}

int cli_cmd_collective(int argc, char **argv)
{
	coll_args a;
	memset(&a, 0, sizeof a);
	int rc = parse_args(argc, argv, &a);
	if (rc >= 0)
		return rc;
	return a.compare ? compare(&a) : predict(&a);
}
