/* spsim calibrate --from-nccl-tests LOG...: a calibration YAML fitted to real nccl-tests
 * output, no GPU run of ours needed. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "nccltests/nccltests.h"

enum {
	OPT_FROM = CLI_OPT_FIRST_FREE,
	OPT_OP,
	OPT_GPUS_PER_NODE,
	OPT_LOG_NODES,
	OPT_IN_PLACE,
	OPT_ALG,
	OPT_PROCESSES,
};

const struct option cli_calibrate_options[] = {
	{"from-nccl-tests", required_argument, NULL, OPT_FROM},
	{"platform", required_argument, NULL, CLI_OPT_PLATFORM},
	{"output", required_argument, NULL, 'o'}, /* one id with -o: given twice is refused under any spelling */
	{"out", required_argument, NULL, 'o'},
	{"collective", required_argument, NULL, OPT_OP},
	{"op", required_argument, NULL, OPT_OP}, /* older spelling of --collective */
	{"gpus-per-node", required_argument, NULL, OPT_GPUS_PER_NODE},
	{"nodes", required_argument, NULL, OPT_LOG_NODES},
	{"minbytes", required_argument, NULL, 'b'},
	{"maxbytes", required_argument, NULL, 'e'},
	{"min-bytes", required_argument, NULL, 'b'},
	{"max-bytes", required_argument, NULL, 'e'},
	{"in-place", no_argument, NULL, OPT_IN_PLACE},
	{"alg", required_argument, NULL, OPT_ALG},
	{"processes", required_argument, NULL, OPT_PROCESSES},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

static void usage(FILE *f)
{
	fputs("usage: spsim calibrate --from-nccl-tests LOG [LOG...] [options]\n"
	      "Fits intra-node and inter-node latency and bandwidth to real nccl-tests output\n"
	      "(all_reduce_perf, all_gather_perf, reduce_scatter_perf, alltoall_perf, sendrecv_perf,\n"
	      "broadcast_perf) and writes a calibration YAML for --calibration. Single-node logs fit the\n"
	      "intra_node links; multi-node logs the inter_node links, with intra_node held at the fitted\n"
	      "(or the platform's) values. Each log's layout comes from its '# Using devices' table.\n"
	      "Then, per class, each NCCL protocol (LL, LL128, Simple) gets its own latency and bandwidth\n"
	      "(the YAML's protocols: entries), fitted on the sizes where NCCL's tuner picks it (at\n"
	      "least 2, else the class's links stand for it); where the tuner runs one protocol under\n"
	      "several algorithms (Simple as ring and NVLS on H100), each (algorithm, protocol) pair of\n"
	      "at least 2 sizes gets its own entry (ring_simple, nvls, ...). They time the pair the\n"
	      "tuner chose; the choice stays NCCL's, on the platform's uncalibrated links. With\n"
	      "--platform no fitted value is kept that makes any size of the logs worse than the\n"
	      "platform as given, and a protocol's bandwidth fitted above the path's link rate (the\n"
	      "platform's per GPU or per NIC, or the class's fitted one where higher) is clamped to it,\n"
	      "its latency refitted, with a note. A latency that ends at its lower bound is printed as\n"
	      "'latency at its lower bound (0)'.\n"
	      "\n"
	      "  --from-nccl-tests LOG   an nccl-tests log; more LOGs may follow as arguments\n"
	      "  --platform NAME|FILE    the cluster the logs come from (default: a generic NVSwitch node with\n"
	      "                          one NIC per GPU; required for multi-node logs without a single-node one)\n"
	      "  -o, --output FILE       write the YAML there (default: standard output; alias --out)\n"
	      "  -b, --min-bytes SIZE    fit only sizes >= SIZE (default 1M: the sizes a training step moves,\n"
	      "                          above NCCL's small-message protocols; -b 0 fits every size). The\n"
	      "                          default bounds the class's links only: each protocol is fitted on all\n"
	      "                          its sizes; a -b given bounds every fit (NCCL's launch is fitted below\n"
	      "                          it), and a protocol left with fewer than 2 sizes is not fitted (said)\n"
	      "  -e, --max-bytes SIZE    fit only sizes <= SIZE, every fit (--minbytes, --maxbytes: nccl-tests'\n"
	      "                          spellings)\n"
	      "  --in-place              fit the in-place columns (default out-of-place)\n"
	      "  --alg ALG               algorithm to invert (default the op program's: direct for alltoall and\n"
	      "                          sendrecv, ring otherwise)\n"
	      "  --collective OP         collective of logs that do not name it (allreduce, alltoall, ...;\n"
	      "                          --op is the older spelling)\n"
	      "  --gpus-per-node N, --nodes N   layout of the logs: needed for logs without a '# Using devices'\n"
	      "                          table, overrides the table otherwise\n"
	      "  --processes per_gpu|per_node   how the logs' runs held the GPUs: one process per GPU\n"
	      "                          (NCCL's p2p path stages through a buffer, whose drain is part of the\n"
	      "                          model) or one per node (direct pointers, no drain). Default: per_node\n"
	      "                          for a log whose header runs a node's GPUs in one process (nThread x\n"
	      "                          nGpus), else the platform's nccl.processes (per_gpu)\n"
	      "\n"
	      "A summary of each fit (parameters, rms and largest relative error) goes to standard error.\n"
	      "Example: spsim calibrate --from-nccl-tests ar-1node.log a2a-4nodes.log --platform dgx-h100 \\\n"
	      "             --output h100-cluster.yaml\n",
	      f);
}

typedef struct cal_args {
	const char **logs;
	int n_logs;
	char platform[CONFIG_PATH_MAX];
	const char *output;
	nccltests_parse_opts po;
	nccltests_calib_opts co;
	const char *alg_name;
} cal_args;

static int parse_args(int argc, char **argv, cal_args *a)
{
	long v;
	int c;
	cli_seen seen = {0};
	static const int repeatable[] = {OPT_FROM, 0}; /* more logs */
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":b:e:o:h", cli_calibrate_options, NULL)) != -1) {
		if (!cli_option_once(&seen, cli_calibrate_options, c, optarg, "calibrate", repeatable))
			return CLI_USAGE;
		switch (c) {
		case 'h': usage(stdout); return CLI_OK;
		case OPT_FROM: a->logs[a->n_logs++] = optarg; break;
		case CLI_OPT_PLATFORM:
			if (!optarg[0]) {
				fprintf(stderr, "spsim calibrate: --platform expects a name or a file path, got an empty value\n");
				return CLI_USAGE;
			}
			if (strlen(optarg) >= sizeof a->platform) {
				fprintf(stderr, "spsim calibrate: --platform path too long\n");
				return CLI_USAGE;
			}
			strcpy(a->platform, optarg);
			break;
		case 'o': a->output = optarg; break;
		case OPT_OP:
			if (!nccltests_coll_from_name(optarg, &a->po.coll)) {
				fprintf(stderr, "spsim calibrate: --collective expects allreduce, allgather, reducescatter, alltoall, "
						"sendrecv or broadcast, got '%s'\n", optarg);
				return CLI_USAGE;
			}
			a->po.coll_set = true;
			break;
		case OPT_GPUS_PER_NODE:
			if (!cli_parse_range_long(CONFIG_R_GPUS_PER_NODE, optarg, &v))
				return CLI_USAGE;
			a->po.gpus_per_node = (int)v;
			break;
		case OPT_LOG_NODES:
			if (!cli_parse_range_long(CONFIG_R_NODES, optarg, &v))
				return CLI_USAGE;
			a->po.nodes = (int)v;
			break;
		case 'b':
		case 'e': {
			double d;
			if (!cli_parse_coll_size("calibrate", c == 'b' ? "-b" : "-e", optarg, &d))
				return CLI_USAGE;
			if (c == 'e' && d <= 0) { /* 0 would be "no bound" inside: say so instead of fitting everything */
				fprintf(stderr, "spsim calibrate: -e expects a size above 0 (the largest size to fit; leave it out "
						"for no bound), got '%s'\n", optarg);
				return CLI_USAGE;
			}
			if (c == 'b')
				a->co.min_bytes = a->co.proto_min_bytes = d;
			else
				a->co.max_bytes = d;
			break;
		}
		case OPT_IN_PLACE: a->co.in_place = true; break;
		case OPT_ALG: a->alg_name = optarg; break;
		case OPT_PROCESSES:
			if (!cli_parse_processes(optarg, &a->co.processes))
				return CLI_USAGE;
			a->co.processes_set = true;
			break;
		default: return cli_getopt_refused(c, argv);
		}
	}
	for (int i = optind; i < argc; i++)
		a->logs[a->n_logs++] = argv[i];
	if (a->n_logs == 0) {
		fprintf(stderr, "spsim calibrate: --from-nccl-tests LOG is required (see spsim calibrate --help)\n");
		return CLI_USAGE;
	}
	/* a log given twice (or under two names) would weigh twice in every fit */
	for (int i = 1; i < a->n_logs; i++) {
		struct stat si, sj;
		if (stat(a->logs[i], &si) != 0)
			continue; /* the parser says why it cannot be read */
		for (int j = 0; j < i; j++)
			if (stat(a->logs[j], &sj) == 0 && si.st_dev == sj.st_dev && si.st_ino == sj.st_ino) {
				fprintf(stderr, "spsim calibrate: --from-nccl-tests: %s and %s are the same file, expected each "
						"log once (a log given twice counts twice in the fit)\n",
					a->logs[j], a->logs[i]);
				return CLI_USAGE;
			}
	}
	if (a->co.max_bytes > 0 && a->co.min_bytes > a->co.max_bytes) {
		fprintf(stderr, "spsim calibrate: -b (%.0f bytes) is larger than -e (%.0f bytes), expected -b <= -e\n",
			a->co.min_bytes, a->co.max_bytes);
		return CLI_USAGE;
	}
	return -1;
}

static void print_class(const char *name, const nccltests_calib_class *k, const char *per)
{
	if (!k->fitted)
		return;
	char lat[64], bw[96];
	nccltests_fit_text(&k->fit, 0, lat, sizeof lat, bw, sizeof bw);
	fprintf(stderr,
		"spsim calibrate: %s: %s, %s %s (rms error %.2f%%, largest %.2f%% over %d points of %d log%s)\n", name,
		lat, bw, per, k->fit.rms_rel * 100, k->fit.max_rel * 100, k->fit.n_points, k->n_logs,
		k->n_logs == 1 ? "" : "s");
	char protos[512];
	nccltests_protocols_text(k, protos, sizeof protos);
	if (protos[0])
		fprintf(stderr, "spsim calibrate: %s protocols (each on the sizes NCCL's tuner runs it): %s\n", name,
			protos);
}

int cli_cmd_calibrate(int argc, char **argv)
{
	cal_args a;
	memset(&a, 0, sizeof a);
	a.co.min_bytes = 1024.0 * 1024;
	a.logs = calloc((size_t)argc + 1, sizeof *a.logs);
	if (!a.logs)
		return CLI_FAIL;
	int rc = parse_args(argc, argv, &a);
	if (rc < 0 && a.output &&
	    (!cli_check_output_file("--output", a.output) ||
	     !cli_check_not_input("--output", a.output, (const char *const *)a.logs, a.n_logs) ||
	     !cli_check_not_input("--output", a.output, (const char *const[]){a.platform}, 1)))
		rc = CLI_USAGE;
	nccltests_log *logs = NULL;
	config_platform p;
	config_error err;
	if (rc >= 0)
		goto out;
	rc = CLI_USAGE;
	if (a.platform[0]) {
		if (!config_load_platform(a.platform, &p, &err)) {
			cli_errorf("--platform: %s\n", err.msg);
			goto out;
		}
		a.co.platform = &p;
	}
	logs = calloc((size_t)a.n_logs, sizeof *logs);
	if (!logs) {
		rc = CLI_FAIL;
		goto out;
	}
	for (int i = 0; i < a.n_logs; i++) {
		if (!nccltests_parse_file(a.logs[i], &a.po, &logs[i], &err)) {
			cli_errorf("--from-nccl-tests: %s\n", err.msg);
			goto out;
		}
		const nccltests_log *l = &logs[i];
		if (a.alg_name && !nccltests_alg_from_name(l->coll, a.alg_name, &a.co.alg)) {
			char names[128] = "";
			for (int k = 0; k < WL_ALG_COUNT; k++) {
				workload_alg w;
				const char *n = workload_alg_name((workload_alg)k);
				if (nccltests_alg_from_name(l->coll, n, &w))
					snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", names[0] ? ", " : "", n);
			}
			fprintf(stderr,
				"spsim calibrate: --alg '%s' is not an algorithm calibrate inverts for %s (%s), expected one of %s "
				"(NCCL's tree and NVLS are the tuner's choice, timed but not inverted)\n",
				a.alg_name, workload_coll_name(l->coll), l->path, names);
			goto out;
		}
		a.co.alg_set = a.alg_name != NULL;
		fprintf(stderr, "spsim calibrate: %s: %s (from %s), %d ranks on %d node%s x %d GPUs, %d sizes -> %s\n",
			l->path, nccltests_test_name(l->coll), l->coll_from, l->ranks, l->nodes, l->nodes == 1 ? "" : "s",
			l->gpus_per_node, l->n_rows, l->ranks < 2 ? "skipped" : l->nodes > 1 ? "inter_node" : "intra_node");
	}
	config_calibration cal;
	nccltests_calib_report rep;
	if (!nccltests_calibrate(logs, a.n_logs, &a.co, &cal, &rep, &err)) {
		fprintf(stderr, "spsim calibrate: %s\n", err.msg);
		goto out;
	}
	if (rep.notes[0]) {
		for (char *line = strtok(rep.notes, "\n"); line; line = strtok(NULL, "\n"))
			fprintf(stderr, "spsim calibrate: note: %s\n", line);
	}
	print_class("intra_node", &rep.intra, "per GPU");
	print_class("inter_node", &rep.inter, "per NIC");
	const nccltests_calib_class *ks[] = {&rep.intra, &rep.inter};
	for (int i = 0; i < 2; i++)
		if (ks[i]->fitted && ks[i]->fit.max_rel > 0.05 && a.co.min_bytes <= 0) {
			fprintf(stderr, "spsim calibrate: note: the links fitted over every size compromise between the "
					"small messages (launch and latency) and the large ones; -b 1M (the default) fits the "
					"links on the sizes training moves and the launch on the rest\n");
			break;
		}
	/* A file is written beside the output and moved over it once complete: a failed
	 * write leaves what was there. */
	FILE *f = stdout;
	char tmp[CONFIG_PATH_MAX + 16];
	if (a.output) {
		config_error oe;
		if (!(f = config_open_beside(a.output, tmp, sizeof tmp, &oe))) {
			fprintf(stderr, "spsim calibrate: --output %s\n", oe.msg);
			goto out;
		}
	}
	/* the logs' names in a comment: a line break in one would end the comment and put
	 * the rest of the name in the YAML */
	fprintf(f, "# Fitted by spsim calibrate from nccl-tests output:");
	for (int i = 0; i < a.n_logs; i++) {
		fputc(' ', f);
		for (const char *c = a.logs[i]; *c; c++)
			fputc((unsigned char)*c < 0x20 || *c == 0x7f ? '?' : *c, f);
	}
	fprintf(f, "\n");
	bool ok = config_write_calibration(f, &cal);
	if (f != stdout) {
		ok = fclose(f) == 0 && ok && rename(tmp, a.output) == 0;
		if (!ok)
			unlink(tmp);
	}
	if (!ok) {
		fprintf(stderr, "spsim calibrate: writing %s failed\n", a.output ? a.output : "standard output");
		rc = CLI_FAIL;
		goto out;
	}
	rc = CLI_OK;
out:
	/* logs that failed or were never parsed hold no rows */
	for (int i = 0; logs && i < a.n_logs; i++)
		nccltests_log_finish(&logs[i]);
	free(logs);
	free(a.logs);
	return rc;
}
