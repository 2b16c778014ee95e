/* spsim models, platforms, platform NAME */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "spsim_build.h"
#if SPSIM_HAVE_SIMGRID && __has_include("engine/simgrid/simgrid.h")
#include "engine/simgrid/simgrid.h"
#define HAVE_XML 1
#else
#define HAVE_XML 0
#endif

enum { OPT_XML = CLI_OPT_FIRST_FREE };

const struct option cli_models_options[] = {
	{"format", required_argument, NULL, CLI_OPT_FORMAT},
	{"help", no_argument, NULL, CLI_OPT_HELP},
	{NULL, 0, NULL, 0},
};
const struct option cli_platforms_options[] = {
	{"format", required_argument, NULL, CLI_OPT_FORMAT},
	{"help", no_argument, NULL, CLI_OPT_HELP},
	{NULL, 0, NULL, 0},
};
const struct option cli_platform_options[] = {
	{"nodes", required_argument, NULL, CLI_OPT_NODES},
	{"calibration", required_argument, NULL, CLI_OPT_CALIBRATION},
	{"xml", no_argument, NULL, OPT_XML},
	{"format", required_argument, NULL, CLI_OPT_FORMAT},
	{"help", no_argument, NULL, CLI_OPT_HELP},
	{NULL, 0, NULL, 0},
};

/* What a listing command's options set. */
typedef struct list_args {
	report_format fmt;
	bool csv_ok; /* models has a CSV listing; the platform commands do not */
	const char *cal;
	bool xml;
	long nodes;
} list_args;

/* Parses a listing command's options with getopt_long (as every other command does): help
 * printed by `help`, unknown options and missing values refused with the same sentences.
 * *positional: the first argument that is not an option (NULL when none; a second one is
 * refused), or pass NULL when the command takes none. Returns -1 to go on, else the exit code. */
static int list_parse(int argc, char **argv, const struct option *opts, void (*help)(FILE *), list_args *a,
		      const char **positional)
{
	int c;
	cli_seen seen = {0};
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		if (!cli_option_once(&seen, opts, c, optarg, argv[0], NULL))
			return CLI_USAGE;
		if (c == CLI_OPT_HELP || c == 'h') {
			help(stdout);
			return CLI_OK;
		} else if (c == '?' || c == ':') {
			return cli_getopt_refused(c, argv);
		} else if (c == CLI_OPT_FORMAT) {
			if (!report_format_parse(optarg, &a->fmt) || (a->fmt == REPORT_CSV && !a->csv_ok)) {
				fprintf(stderr, "spsim %s: --format expects %s, got '%s'\n", argv[0],
					a->csv_ok ? "table, json or csv" : "table or json", optarg);
				return CLI_USAGE;
			}
		} else if (c == CLI_OPT_NODES) {
			if (!cli_parse_range_long(CONFIG_R_NODES, optarg, &a->nodes))
				return CLI_USAGE;
		} else if (c == CLI_OPT_CALIBRATION) {
			a->cal = optarg;
		} else if (c == OPT_XML) {
			a->xml = true;
		}
	}
	for (int i = optind; i < argc; i++) {
		if (positional && !*positional) {
			*positional = argv[i];
			continue;
		}
		fprintf(stderr, "spsim %s: unexpected argument '%s' (see spsim %s --help)\n", argv[0], argv[i], argv[0]);
		return CLI_USAGE;
	}
	return -1;
}

/* Loads every shipped file of a kind and hands each to `row`; returns the exit code. */
typedef bool (*list_row)(const char *name, report_format fmt, json_t *arr);
static int list_shipped(const char *kind, report_format fmt, list_row row)
{
	char **names;
	int n = config_list_data(kind, &names);
	json_t *arr = json_array();
	int rc = CLI_OK;
	for (int i = 0; i < n; i++) {
		if (!row(names[i], fmt, arr))
			rc = CLI_FAIL;
		free(names[i]);
	}
	free(names);
	if (fmt == REPORT_JSON)
		report_json_print(stdout, arr);
	json_decref(arr);
	return rc;
}

static bool model_row(const char *name, report_format fmt, json_t *arr)
{
	config_model m;
	config_error err;
	if (!config_load_model(name, &m, &err)) {
		cli_errorf("%s\n", err.msg);
		return false;
	}
	double params = config_model_params(&m);
	if (fmt == REPORT_TABLE)
		printf("%-16s %6d %6d %5d %4d %5d %6d %7d %5s %9.2fB\n", m.name, m.layers, m.hidden, m.heads, m.kv_heads,
		       m.head_dim, m.ffn, m.vocab, m.tied_embeddings ? "yes" : "no", params / 1e9);
	else if (fmt == REPORT_CSV)
		printf("%s,%d,%d,%d,%d,%d,%d,%d,%s,%s,%d,%.0f\n", m.name, m.layers, m.hidden, m.heads, m.kv_heads,
		       m.head_dim, m.ffn, m.vocab, m.tied_embeddings ? "true" : "false", m.qkv_bias ? "true" : "false",
		       m.max_position, params);
	else
		json_array_append_new(arr, json_pack("{s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:b, s:b, s:i, s:f}", "name",
						     m.name, "layers", m.layers, "hidden", m.hidden, "heads", m.heads,
						     "kv_heads", m.kv_heads, "head_dim", m.head_dim, "ffn", m.ffn, "vocab",
						     m.vocab, "tied_embeddings", m.tied_embeddings, "qkv_bias", m.qkv_bias,
						     "max_position", m.max_position, "params", params));
	return true;
}

static void models_help(FILE *f)
{
	fputs("usage: spsim models [--format table|json|csv]\n"
	      "Lists the shipped models with their shapes and computed parameter counts.\n",
	      f);
}

int cli_cmd_models(int argc, char **argv)
{
	list_args a = {.fmt = REPORT_TABLE, .csv_ok = true};
	int rc = list_parse(argc, argv, cli_models_options, models_help, &a, NULL);
	if (rc >= 0)
		return rc;
	report_format fmt = a.fmt;
	if (fmt == REPORT_TABLE)
		printf("%-16s %6s %6s %5s %4s %5s %6s %7s %5s %10s\n", "model", "layers", "hidden", "heads", "kv", "hdim",
		       "ffn", "vocab", "tied", "params");
	else if (fmt == REPORT_CSV)
		printf("model,layers,hidden,heads,kv_heads,head_dim,ffn,vocab,tied_embeddings,qkv_bias,max_position,params\n");
	return list_shipped("models", fmt, model_row);
}

static json_t *platform_json(const config_platform *p)
{
	return json_pack("{s:s, s:i, s:i, s:{s:s, s:f, s:f, s:f, s:i, s:s}, s:s, s:{s:s, s:f, s:f, s:f},"
			 " s:{s:i, s:f, s:f, s:s, s:i, s:f}, s:{s:f, s:f, s:f, s:f, s:f}}",
			 "name", p->name, "nodes", p->nodes, "gpus_per_node", p->gpus_per_node, "gpu", "name",
			 p->gpu.name, "peak_flops", p->gpu.peak_flops, "memory_bytes", p->gpu.memory_bytes,
			 "hbm_bandwidth", p->gpu.hbm_bandwidth, "sms", p->gpu.sms, "arch", config_gpu_arch_names[p->gpu.arch],
			 "attention_kernel", config_attn_kernel_names[p->attention_kernel], "intra_node", "fabric", config_fabric_names[p->intra.fabric],
			 "bandwidth", p->intra.bandwidth, "pair_bandwidth", p->intra.pair_bandwidth, "latency",
			 p->intra.latency, "inter_node", "nics", p->inter.nics_per_node, "nic_bandwidth",
			 p->inter.nic_bandwidth, "latency", p->inter.latency, "topology", config_topology_names[p->inter.topology],
			 "nodes_per_leaf", p->inter.nodes_per_leaf, "oversubscription", p->inter.oversubscription,
			 "efficiency", "gemm", p->eff.gemm, "attention", p->eff.attention, "memory", p->eff.memory,
			 "intra_link", p->eff.intra_link, "inter_link", p->eff.inter_link);
}

static void platform_line(const config_platform *p)
{
	char mem[32];
	double intra = p->intra.fabric == CONFIG_FABRIC_NVLINK_MESH ? p->intra.pair_bandwidth : p->intra.bandwidth;
	printf("%-16s %5d x %-2d %-14s %10s %5.0f %-12s %6.0f%s %3d x %4.0f Gb/s %s\n", p->name, p->nodes,
	       p->gpus_per_node, p->gpu.name, report_bytes(p->gpu.memory_bytes, mem, sizeof mem), p->gpu.peak_flops / 1e12,
	       config_fabric_names[p->intra.fabric], intra / 1e9,
	       p->intra.fabric == CONFIG_FABRIC_NVLINK_MESH ? " GB/s/pair" : " GB/s/GPU ", p->inter.nics_per_node,
	       p->inter.nic_bandwidth * 8 / 1e9, config_topology_names[p->inter.topology]);
}

static bool platform_row(const char *name, report_format fmt, json_t *arr)
{
	config_platform p;
	config_error err;
	if (!config_load_platform(name, &p, &err)) {
		cli_errorf("%s\n", err.msg);
		return false;
	}
	if (fmt == REPORT_JSON)
		json_array_append_new(arr, platform_json(&p));
	else
		platform_line(&p);
	return true;
}

static void platforms_help(FILE *f)
{
	fputs("usage: spsim platforms [--format table|json]\n"
	      "Lists the shipped clusters. spsim platform NAME shows one in full.\n",
	      f);
}

int cli_cmd_platforms(int argc, char **argv)
{
	/* no CSV listing: csv is refused, never answered with the table */
	list_args a = {.fmt = REPORT_TABLE};
	int rc = list_parse(argc, argv, cli_platforms_options, platforms_help, &a, NULL);
	if (rc >= 0)
		return rc;
	report_format fmt = a.fmt;
	if (fmt != REPORT_JSON)
		printf("%-16s %-7s %-14s %10s %5s %-12s %16s %s\n", "platform", "nodes", "gpu", "memory", "TFLOP",
		       "fabric", "intra bw", "network");
	return list_shipped("platforms", fmt, platform_row);
}

static void platform_help(FILE *f)
{
	fputs("usage: spsim platform NAME|FILE [--nodes N] [--calibration FILE] [--xml] [--format table|json]\n"
	      "Shows one platform with its effective (efficiency-scaled) bandwidths; --xml prints the\n"
	      "SimGrid platform the simgrid engine generates from it.\n",
	      f);
}

int cli_cmd_platform(int argc, char **argv)
{
	if (argc < 2) {
		platform_help(stderr);
		return CLI_USAGE;
	}
	list_args a = {.fmt = REPORT_TABLE};
	const char *name = NULL;
	int rc = list_parse(argc, argv, cli_platform_options, platform_help, &a, &name);
	if (rc >= 0)
		return rc;
	const char *cal = a.cal;
	bool xml = a.xml;
	long nodes = a.nodes;
	report_format fmt = a.fmt;
	if (!name) {
		fprintf(stderr, "spsim platform: a platform NAME or FILE is required\n");
		return CLI_USAGE;
	}
	if (xml && fmt != REPORT_TABLE) { /* the XML was printed and --format json dropped without a word */
		fprintf(stderr, "spsim platform: --xml prints the SimGrid platform, which has no %s form; drop --xml or "
				"--format\n", fmt == REPORT_JSON ? "json" : "other");
		return CLI_USAGE;
	}
	config_platform p;
	config_error err;
	if (!config_load_platform(name, &p, &err)) {
		cli_errorf("%s\n", err.msg);
		return CLI_USAGE;
	}
	if (nodes)
		p.nodes = (int)nodes;
	if (cal) {
		if (!config_calibrate_platform(cal, &p, NULL, &err)) {
			cli_errorf("--calibration: %s\n", err.msg);
			return CLI_USAGE;
		}
	}
	if (!config_platform_check(&p, &err)) {
		cli_errorf("%s\n", err.msg);
		return CLI_USAGE;
	}
	if (xml) {
#if HAVE_XML
		if (!engine_simgrid_platform_xml(&p, stdout, &err)) {
			cli_errorf("%s\n", err.msg);
			return CLI_FAIL;
		}
		return CLI_OK;
#else
		fprintf(stderr, "spsim platform: --xml needs the simgrid engine; this build has none (install "
				"libsimgrid-dev and rebuild)\n");
		return CLI_USAGE;
#endif
	}
	if (fmt == REPORT_JSON) {
		json_t *j = platform_json(&p);
		json_object_set_new(j, "effective",
				    json_pack("{s:f, s:f, s:f}", "intra_bandwidth", config_platform_intra_bw(&p),
					      "intra_pair_bandwidth", config_platform_intra_pair_bw(&p), "nic_bandwidth",
					      config_platform_nic_bw(&p)));
		report_json_print(stdout, j);
		json_decref(j);
		return CLI_OK;
	}
	char b[32];
	printf("%s: %d node%s x %d %s (%s, %.0f TFLOP/s bf16, HBM %.0f GB/s)\n", p.name, p.nodes, p.nodes == 1 ? "" : "s",
	       p.gpus_per_node,
	       p.gpu.name, report_bytes(p.gpu.memory_bytes, b, sizeof b), p.gpu.peak_flops / 1e12,
	       p.gpu.hbm_bandwidth / 1e9);
	if (p.intra.fabric == CONFIG_FABRIC_NVLINK_MESH)
		printf("intra-node: nvlink-mesh, %.0f GB/s per pair per direction (effective %.0f), latency %.2f us\n",
		       p.intra.pair_bandwidth / 1e9, config_platform_intra_pair_bw(&p) / 1e9, p.intra.latency * 1e6);
	else
		printf("intra-node: %s, %.0f GB/s per GPU per direction (effective %.0f), latency %.2f us\n",
		       config_fabric_names[p.intra.fabric], p.intra.bandwidth / 1e9, config_platform_intra_bw(&p) / 1e9,
		       p.intra.latency * 1e6);
	printf("inter-node: %d NIC%s x %.0f Gb/s (effective %.1f GB/s each), latency %.2f us, %s", p.inter.nics_per_node,
	       p.inter.nics_per_node == 1 ? "" : "s", p.inter.nic_bandwidth * 8 / 1e9, config_platform_nic_bw(&p) / 1e9,
	       p.inter.latency * 1e6, config_topology_names[p.inter.topology]);
	if (p.inter.topology == CONFIG_TOPO_FAT_TREE)
		printf(" (%d nodes per leaf, oversubscription %.2g:1)", p.inter.nodes_per_leaf, p.inter.oversubscription);
	if (p.inter.message_latency > 0)
		printf(", %.1f us per network message (transport)", p.inter.message_latency * 1e6);
	if (p.host.bandwidth > 0) {
		char hm[32];
		printf("\nhost link: %.1f GB/s per GPU per direction, latency %.2f us, host memory %s per node",
		       p.host.bandwidth / 1e9, p.host.latency * 1e6, report_bytes(p.host.memory, hm, sizeof hm));
		if (p.host.memory_bandwidth > 0)
			printf(", host DRAM %.1f GB/s per node", p.host.memory_bandwidth / 1e9);
		else
			printf(", no host DRAM bandwidth (--offload-optimizer is refused)");
	} else {
		printf("\nhost link: none declared (--offload-activations and --offload-optimizer are refused)");
	}
	if (p.has_memory_reserve) {
		char mr[32];
		printf("\nmemory reserve: %s per GPU (declared)", report_bytes(p.memory_reserve, mr, sizeof mr));
	}
	printf("\ngpu: %d SMs, %s; attention kernel %s\n", p.gpu.sms, config_gpu_arch_names[p.gpu.arch],
	       config_attn_kernel_names[p.attention_kernel]);
	char attn[48];
	if (p.eff.attention > 0)
		snprintf(attn, sizeof attn, "%.2f (fixed)", p.eff.attention);
	else
		snprintf(attn, sizeof attn, "by shape (%s curves)", config_attn_kernel_names[p.attention_kernel]);
	printf("efficiency: gemm %.2f (plateau, tile and wave quantized), attention %s, memory %.2f, intra link %.2f, "
	       "inter link %.2f\n",
	       p.eff.gemm, attn, p.eff.memory, p.eff.intra_link, p.eff.inter_link);
	return CLI_OK;
}
