#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "engine/analytic.h"
#include "nccltests/nccltests.h"

#define SET(bit) (1u << (bit))
enum { S_GPUS, S_STRATEGY, S_SP, S_MB, S_SEQ, S_GA, S_ZERO, S_RECOMPUTE, S_DTYPE, S_OVERLAP, S_RB, S_AB, S_PB, S_FP32, S_A2A,
       S_UNEVEN, S_ATTN, S_IMPL, S_Z3P, S_RESERVE, S_UDEG, S_RDEG, S_CPCOMM, S_OFFLOAD, S_TILE_MLP, S_TILE_LOGITS,
       S_OFFLOAD_OPT, S_CONTIG };

const struct option cli_job_options[] = {
	{"model", required_argument, NULL, CLI_OPT_MODEL},
	{"platform", required_argument, NULL, CLI_OPT_PLATFORM},
	{"nodes", required_argument, NULL, CLI_OPT_NODES},
	{"calibration", required_argument, NULL, CLI_OPT_CALIBRATION},
	{"job", required_argument, NULL, CLI_OPT_JOB},
	{"gpus", required_argument, NULL, CLI_OPT_GPUS},
	{"strategy", required_argument, NULL, CLI_OPT_STRATEGY},
	{"sp", required_argument, NULL, CLI_OPT_SP},
	{"micro-batch", required_argument, NULL, CLI_OPT_MICRO_BATCH},
	{"seq-len", required_argument, NULL, CLI_OPT_SEQ_LEN},
	{"grad-accum", required_argument, NULL, CLI_OPT_GRAD_ACCUM},
	{"zero", required_argument, NULL, CLI_OPT_ZERO},
	{"recompute", required_argument, NULL, CLI_OPT_RECOMPUTE},
	{"dtype", required_argument, NULL, CLI_OPT_DTYPE},
	{"zero-overlap", required_argument, NULL, CLI_OPT_ZERO_OVERLAP},
	{"reduce-bucket", required_argument, NULL, CLI_OPT_REDUCE_BUCKET},
	{"allgather-bucket", required_argument, NULL, CLI_OPT_ALLGATHER_BUCKET},
	{"prefetch-bucket", required_argument, NULL, CLI_OPT_PREFETCH_BUCKET},
	{"fp32-grad-comm", required_argument, NULL, CLI_OPT_FP32_GRAD_COMM},
	{"contiguous-gradients", required_argument, NULL, CLI_OPT_CONTIGUOUS_GRADIENTS},
	{"engine", required_argument, NULL, CLI_OPT_ENGINE},
	{"format", required_argument, NULL, CLI_OPT_FORMAT},
	{"trace", required_argument, NULL, CLI_OPT_TRACE},
	{"placement", required_argument, NULL, CLI_OPT_PLACEMENT},
	{"help", no_argument, NULL, CLI_OPT_HELP},
	{"a2a", required_argument, NULL, CLI_OPT_A2A},
	{"ulysses-degree", required_argument, NULL, CLI_OPT_ULYSSES_DEGREE},
	{"ring-degree", required_argument, NULL, CLI_OPT_RING_DEGREE},
	{"cp-comm-type", required_argument, NULL, CLI_OPT_CP_COMM_TYPE},
	{"basp-uneven", required_argument, NULL, CLI_OPT_BASP_UNEVEN},
	{"attention-kernel", required_argument, NULL, CLI_OPT_ATTENTION_KERNEL},
	{"impl", required_argument, NULL, CLI_OPT_IMPL},
	{"zero3-prefetch", required_argument, NULL, CLI_OPT_ZERO3_PREFETCH},
	{"memory-reserve", required_argument, NULL, CLI_OPT_MEMORY_RESERVE},
	{"offload-activations", no_argument, NULL, CLI_OPT_OFFLOAD_ACTIVATIONS},
	{"offload-optimizer", required_argument, NULL, CLI_OPT_OFFLOAD_OPTIMIZER},
	{"tile-mlp", required_argument, NULL, CLI_OPT_TILE_MLP},
	{"tile-logits", required_argument, NULL, CLI_OPT_TILE_LOGITS},
	{"slow-gpu", required_argument, NULL, CLI_OPT_SLOW_GPU},
	{"slow-node", required_argument, NULL, CLI_OPT_SLOW_NODE},
	{"degrade", required_argument, NULL, CLI_OPT_DEGRADE},
	{"fail-node", required_argument, NULL, CLI_OPT_FAIL_NODE},
	{"background", required_argument, NULL, CLI_OPT_BACKGROUND},
	{NULL, 0, NULL, 0},
};

static const char *cli_command;

void cli_set_command(const char *name)
{
	cli_command = name;
}

void cli_errorf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (cli_command)
		fprintf(stderr, "spsim %s: ", cli_command);
	else
		fputs("spsim: ", stderr);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

/* The index of arg among n names, -1 when it is none of them. */
static int name_index(const char *arg, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (strcmp(arg, names[i]) == 0)
			return i;
	return -1;
}

bool cli_parse_processes(const char *arg, int *out)
{
	int i = name_index(arg, config_nccl_processes_names, CONFIG_NCCL_PROCS);
	if (i < 0) {
		cli_errorf("--processes '%s' is not a process layout, expected per_gpu or per_node\n", arg);
		return false;
	}
	*out = i;
	return true;
}

bool cli_progress_flag(int *mode, bool progress)
{
	int want = progress ? 1 : 0;
	if (*mode >= 0 && *mode != want) {
		cli_errorf("--progress and --quiet contradict each other, expected one of them\n");
		return false;
	}
	*mode = want;
	return true;
}

int cli_getopt_refused(int c, char **argv)
{
	if (c == ':')
		fprintf(stderr, "spsim %s: option '%s' needs a value\n", argv[0], argv[optind - 1]);
	else
		fprintf(stderr, "spsim %s: unknown option '%s' (see spsim %s --help)\n", argv[0], argv[optind - 1],
			argv[0]);
	return CLI_USAGE;
}

bool cli_option_once(cli_seen *s, const struct option *opts, int id, const char *arg, const char *cmd,
		     const int *repeatable)
{
	const struct option *o = NULL;
	for (int i = 0; opts[i].name && !o; i++)
		if (opts[i].val == id && !opts[i].flag)
			o = &opts[i];
	if (!o || o->has_arg != required_argument || id < 0 || id >= CLI_SEEN_IDS)
		return true;
	for (const int *r = repeatable; r && *r; r++)
		if (*r == id)
			return true;
	if (!s->seen[id]) {
		s->seen[id] = true;
		s->value[id] = arg;
		return true;
	}
	char name[64];
	if (id > 0 && id < 128)
		snprintf(name, sizeof name, "-%c/--%s", id, o->name);
	else
		snprintf(name, sizeof name, "--%s", o->name);
	fprintf(stderr, "spsim %s: %s given twice ('%s', then '%s'), expected it once (the second would replace the "
			"first)\n", cmd, name, s->value[id], arg);
	return false;
}

struct option *cli_options_concat(const struct option *extra)
{
	const size_t n_job = sizeof cli_job_options / sizeof cli_job_options[0] - 1;
	size_t n = 0;
	while (extra && extra[n].name)
		n++;
	struct option *o = calloc(n_job + n + 1, sizeof *o);
	if (!o)
		return NULL;
	memcpy(o, cli_job_options, n_job * sizeof *o);
	if (n)
		memcpy(o + n_job, extra, n * sizeof *o);
	return o;
}

void cli_engine_choices(FILE *f)
{
	for (int i = 0; engine_registry[i]; i++)
		fprintf(f, "%s%s", i ? "|" : "", engine_registry[i]->name);
	fprintf(f, " (default %s)\n", engine_registry[0]->name);
}

void cli_job_help(FILE *f)
{
	fputs("Model and cluster:\n"
	      "  --model NAME|FILE        model: a shipped name (spsim models) or a YAML path (required)\n"
	      "  --platform NAME|FILE     cluster: a shipped name (spsim platforms) or a YAML path (required)\n"
	      "  --nodes N                override the platform's node count\n"
	      "  --calibration FILE       measured link bandwidths/latencies and efficiencies (validate, calibrate)\n"
	      "  --job FILE               job YAML with the keys below (gpus, strategy, sp, micro_batch, seq_len,\n"
	      "                           grad_accum, zero, recompute, dtype, zero_overlap, ...); flags override it\n"
	      "Job:\n"
	      "  --gpus W                 world size (default: every GPU of the platform)\n"
	      "  --strategy ulysses|basp|ring|usp  sequence parallelism (default ulysses); ring attention\n"
	      "                           (context parallelism) as ring[:split=zigzag|naive], USP as\n"
	      "                           usp[:u=U:r=R], BASP over them as basp:inner=ring|usp[:u=U:r=R];\n"
	      "                           ring:comm=all_gather gathers K and V instead of passing them\n"
	      "  --cp-comm-type p2p|all_gather|a2a|a2a+p2p  Megatron-Core's context-parallel types: ring,\n"
	      "                           ring:comm=all_gather, ulysses, usp (with --strategy basp: its inner)\n"
	      "  --sp N                   SP domain size (default W; W/N data-parallel replicas)\n"
	      "  --micro-batch B          sequences per SP domain per micro-step (default 1)\n"
	      "  --seq-len S              tokens per sequence; K and M suffixes: 16K = 16384 (required)\n"
	      "  --grad-accum G           micro-steps per optimizer step (default 1)\n"
	      "  --zero 0|1|2|3           ZeRO stage (default 1)\n"
	      "  --recompute none|selective|full  activation recomputation (default none): selective\n"
	      "                           re-runs only the core attention (Megatron's selective mode)\n"
	      "  --offload-activations    copy the activation checkpoints to host memory while the next layer\n"
	      "                           computes, fetch them back before backward (needs --recompute full\n"
	      "                           and a platform with a host_link)\n"
	      "  --offload-optimizer none|cpu  keep the fp32 master weights and Adam states in host memory and\n"
	      "                           run Adam on the CPU (DeepSpeed offload_optimizer, ZeRO-Offload):\n"
	      "                           gradients copied to the host, parameters back, every step (needs\n"
	      "                           --zero 1, 2 or 3 and a host_link with memory_bandwidth; default none)\n"
	      "  --tile-mlp N             run the MLP in N sequence tiles (ALST's TiledMLP; default 1)\n"
	      "  --tile-logits N          run the LM head and loss in N sequence tiles (fused linear cross\n"
	      "                           entropy; default 1)\n"
	      "  --dtype bf16             training precision (only bf16)\n"
	      "  --zero-overlap on|off|default   overlap ZeRO traffic with compute (default: on for stage 3 only)\n"
	      "  --reduce-bucket E, --allgather-bucket E, --prefetch-bucket E   ZeRO bucket sizes in elements\n"
	      "                           (DeepSpeed defaults 5e8, 5e8, 5e7); reduce and prefetch also take\n"
	      "                           auto: hidden_size^2 and int(0.9 hidden_size^2) of the model, as the\n"
	      "                           Hugging Face Trainer fills \"auto\" (transformers\n"
	      "                           src/transformers/integrations/deepspeed.py)\n"
	      "  --fp32-grad-comm on|off|default  gradient reduction in fp32 (default: on when SP > 1)\n"
	      "  --contiguous-gradients on|off  DeepSpeed ZeRO-1 to 3 copies gradients into a reduce bucket\n"
	      "                           allocated whole (default on, DeepSpeed's); off: they are reduced\n"
	      "                           from their own tensors through a flat copy per bucket\n"
	      "  --ulysses-degree U, --ring-degree R  USP's degrees (--strategy usp, basp:inner=usp):\n"
	      "                           U x R = the SP group; default U the largest in a node\n"
	      "  --a2a direct|pairwise|hierarchical  SP all-to-all algorithm (default direct, as NCCL);\n"
	      "                           hierarchical helps groups that span nodes\n"
	      "  --basp-uneven error|unequal|extra-step  BASP when the micro-batch does not divide --sp:\n"
	      "                           unequal: groups of floor(N/B) and ceil(N/B) GPUs side by side;\n"
	      "                           extra-step: equal groups, the remaining sequences in more\n"
	      "                           micro-steps (default error)\n"
	      "  --attention-kernel flash-attn-2|flash-attn-3|cudnn|flash-attn-triton  attention kernel\n"
	      "                           family whose measured efficiency curves time attention (default:\n"
	      "                           the platform's attention_kernel; flash-attn-3 needs a hopper GPU;\n"
	      "                           flash-attn-triton computes the masked half of causal attention)\n"
	      "  --impl hf|hf-trainer|megatron  what each layer saves for backward: hf = DeepSpeed + Hugging\n"
	      "                           Face eager modules (unfused SwiGLU, fp32 norm copies, fp32 loss) in a\n"
	      "                           hand-written loop that keeps the model output (the bf16 logits) through\n"
	      "                           backward; hf-trainer = the same modules in a loop that drops it before\n"
	      "                           backward (transformers Trainer, TRL SFTTrainer, ms-swift, torchtitan):\n"
	      "                           2 bytes per token and vocabulary entry less; megatron = fused kernels\n"
	      "                           (default hf)\n"
	      "  --zero3-prefetch deepspeed|layer  how ZeRO-3 gathers parameters: deepspeed = one gather per\n"
	      "                           submodule (q/k/v, o, gate/up, down) issued when the window of\n"
	      "                           --prefetch-bucket elements reaches it (DeepSpeed); layer = each\n"
	      "                           layer's parameters one layer ahead (PyTorch FSDP) (default deepspeed)\n"
	      "  --memory-reserve SIZE    memory lost to CUDA context, cuBLAS, NCCL buffers and allocator\n"
	      "                           fragmentation, e.g. 2GiB or 0 (default: the platform's, else derived)\n"
	      "Engine and output:\n"
	      "  --engine NAME            ",
	      f);
	cli_engine_choices(f);
	fputs("  --format table|json|csv  output format (default table)\n"
	      "  --trace FILE             write a Chrome/Perfetto trace of the step (open in ui.perfetto.dev)\n"
	      "  --placement contiguous|strided|random:SEED   rank placement (simgrid engine)\n"
	      "What-ifs (simgrid engine, whole cluster; the analytic engine runs --slow-gpu, --slow-node and\n"
	      "--degrade of a NIC or GPU port, every rank at the slowest one's pace, and --fail-node; repeatable;\n"
	      "job file key what_if: docs/simgrid.md):\n"
	      "  --slow-gpu RANK:FACTOR   world rank RANK computes FACTOR (1 to 1000) times slower\n"
	      "  --slow-node NODE:FACTOR  every GPU of node NODE computes FACTOR times slower\n"
	      "  --degrade LINK:FACTOR    a link's bandwidth divided by FACTOR: nic:NODE[.I], nvlink:NODE.GPU\n"
	      "                           (its port), nvlink:NODE.A-B (mesh pair), leaf:L (fat-tree leaf uplink)\n"
	      "  --fail-node NODE         node lost: the job re-placed on the rest by --placement\n"
	      "  --background SIZE:PERIOD:A-B  another job on the fabric: a ring all-reduce of SIZE every\n"
	      "                           PERIOD over nodes A to B, one ring per NIC, e.g. 1GiB:100ms:4-7\n",
	      f);
}

void cli_job_init(cli_job_args *a)
{
	memset(a, 0, sizeof *a);
	config_job_defaults(&a->job);
	a->engine = engine_registry[0]->name;
	a->format = REPORT_TABLE;
	a->opt.placement = ENGINE_PLACE_CONTIGUOUS;
	a->cp_comm_type = -1;
}

bool cli_parse_int(const char *flag, const char *s, long min, long max, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max) {
		if (max == LONG_MAX)
			cli_errorf("%s expects an integer >= %ld, got '%s'\n", flag, min, s);
		else
			cli_errorf("%s expects an integer from %ld to %ld, got '%s'\n", flag, min, max, s);
		return false;
	}
	*out = v;
	return true;
}

bool cli_parse_double(const char *flag, const char *s, double lo, double hi, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v < lo || v > hi) {
		cli_errorf("%s expects a number from %g to %g, got '%s'\n", flag, lo, hi, s);
		return false;
	}
	*out = v;
	return true;
}

bool cli_parse_coll_size(const char *cmd, const char *flag, const char *s, double *out)
{
	bool parsed = nccltests_parse_size(s, out);
	if (parsed && !config_range_ok(CONFIG_R_COLL_BYTES, *out) && *out > 0) {
		/* the suffixes are binary, the bound decimal: '1T' (2^40) is above 1 TB */
		char e[160];
		char got[48];
		snprintf(got, sizeof got, *out < 1e15 ? "%.0f" : "%g", *out);
		fprintf(stderr, "spsim %s: %s: '%s' is %s bytes, expected %s (1e12 bytes; K, M, G, T are powers of 1024)\n",
			cmd, flag, s, got, config_range_expect(CONFIG_R_COLL_BYTES, e, sizeof e));
		return false;
	}
	if (!parsed || !config_range_ok(CONFIG_R_COLL_BYTES, *out)) {
		char e[160];
		fprintf(stderr, "spsim %s: %s expects %s in bytes (e.g. 8, 64K, 1M, 8G), got '%s'\n", cmd, flag,
			config_range_expect(CONFIG_R_COLL_BYTES, e, sizeof e), s);
		return false;
	}
	return true;
}

bool cli_parse_range_as(config_range_id id, const char *flag, const char *arg, double *out)
{
	const config_range *r = config_range_get(id);
	config_error err;
	if (!flag)
		flag = r->flag;
	if (!config_range_parse(id, flag, arg, out, &err)) {
		char e[160];
		cli_errorf("%s expects %s, got '%s'\n", flag, config_range_expect(id, e, sizeof e), arg);
		return false;
	}
	return true;
}

bool cli_parse_range(config_range_id id, const char *arg, double *out) { return cli_parse_range_as(id, NULL, arg, out); }

/* An INT or TOKENS row into an int or long (the table's bounds fit them). */
static bool range_int(config_range_id id, const char *arg, int *out)
{
	double d;
	if (!cli_parse_range(id, arg, &d))
		return false;
	*out = (int)d;
	return true;
}

bool cli_parse_range_long_as(config_range_id id, const char *flag, const char *arg, long *out)
{
	double d;
	if (!cli_parse_range_as(id, flag, arg, &d))
		return false;
	*out = (long)d;
	return true;
}

bool cli_parse_range_long(config_range_id id, const char *arg, long *out)
{
	return cli_parse_range_long_as(id, NULL, arg, out);
}

/* on|off (true|false), and with `with_default` also default (-1: the setting's derived
 * value). */
static bool parse_switch(const char *flag, const char *s, bool with_default, int *out)
{
	if (strcmp(s, "on") == 0 || strcmp(s, "true") == 0)
		*out = 1;
	else if (strcmp(s, "off") == 0 || strcmp(s, "false") == 0)
		*out = 0;
	else if (with_default && strcmp(s, "default") == 0)
		*out = -1;
	else {
		cli_errorf("%s expects %s, got '%s'\n", flag, with_default ? "on, off or default" : "on or off", s);
		return false;
	}
	return true;
}

/* on|off: a setting without a derived default. */
static bool parse_onoff(const char *flag, const char *s, int *out) { return parse_switch(flag, s, false, out); }

static bool parse_tristate(const char *flag, const char *s, int *out) { return parse_switch(flag, s, true, out); }

bool cli_check_list(const char *cmd, const char *flag, const char *list, char sep, size_t max_len)
{
	size_t n = strlen(list);
	if (n == 0) {
		fprintf(stderr, "spsim %s: %s is empty, expected a value or a list separated by '%c'\n", cmd, flag, sep);
		return false;
	}
	if (n > max_len) {
		fprintf(stderr, "spsim %s: %s is %zu characters long, expected at most %zu\n", cmd, flag, n, max_len);
		return false;
	}
	char twice[3] = {sep, sep, '\0'};
	if (list[0] == sep || list[n - 1] == sep || strstr(list, twice)) {
		fprintf(stderr, "spsim %s: %s '%s' has an empty item, expected values separated by single '%c'\n", cmd,
			flag, list, sep);
		return false;
	}
	return true;
}

bool cli_list_once(const char *cmd, const char *flag, const char *list, char sep)
{
	for (const char *a = list; *a; a = strchr(a, sep) ? strchr(a, sep) + 1 : a + strlen(a)) {
		size_t na = strcspn(a, (char[]){sep, '\0'});
		for (const char *b = a + na; *b; b += 1 + strcspn(b + 1, (char[]){sep, '\0'})) {
			const char *item = b + 1; /* b sits on a separator */
			size_t nb = strcspn(item, (char[]){sep, '\0'});
			if (na == nb && strncmp(a, item, na) == 0) {
				fprintf(stderr, "spsim %s: %s lists '%.*s' twice, expected each value once\n", cmd, flag, (int)na,
					a);
				return false;
			}
		}
	}
	return true;
}

/* A flag whose value is one of a job key's two names (the job files' table, names.c), so
 * the flag and the key take the same spellings. */
static bool parse_pair(const char *flag, const char *arg, const char *const names[2], int *out)
{
	int i = name_index(arg, names, 2);
	if (i < 0) {
		cli_errorf("%s expects %s or %s, got '%s'\n", flag, names[0], names[1], arg);
		return false;
	}
	*out = i;
	return true;
}

/* The index of arg among n names, or -1 (said, with the expected list as written). */
static int parse_name(const char *flag, const char *arg, const char *const *names, int n, const char *expected)
{
	int i = name_index(arg, names, n);
	if (i < 0)
		cli_errorf("%s expects %s, got '%s'\n", flag, expected, arg);
	return i;
}

static bool copy_arg(char *dst, const char *flag, const char *s)
{
	if (!s[0]) {
		cli_errorf("%s expects a name or a file path, got an empty value\n", flag);
		return false;
	}
	if (strlen(s) >= CONFIG_PATH_MAX) {
		cli_errorf("%s: value too long (at most %d characters)\n", flag, CONFIG_PATH_MAX - 1);
		return false;
	}
	strcpy(dst, s);
	return true;
}

int cli_job_option(cli_job_args *a, int id, const char *arg)
{
	double d;
	int n;
	config_job *j = &a->job;
	switch (id) {
	case CLI_OPT_MODEL: return copy_arg(a->model, "--model", arg) ? 1 : -1;
	case CLI_OPT_PLATFORM: return copy_arg(a->platform, "--platform", arg) ? 1 : -1;
	case CLI_OPT_CALIBRATION: return copy_arg(a->calibration, "--calibration", arg) ? 1 : -1;
	case CLI_OPT_JOB: return copy_arg(a->job_file, "--job", arg) ? 1 : -1;
	case CLI_OPT_NODES:
		if (!range_int(CONFIG_R_NODES, arg, &a->nodes))
			return -1;
		return 1;
	case CLI_OPT_GPUS:
		if (!range_int(CONFIG_R_GPUS, arg, &j->gpus))
			return -1;
		a->set |= SET(S_GPUS);
		return 1;
	case CLI_OPT_SP:
		if (!range_int(CONFIG_R_SP, arg, &j->sp))
			return -1;
		a->set |= SET(S_SP);
		return 1;
	case CLI_OPT_MICRO_BATCH:
		if (!range_int(CONFIG_R_MICRO_BATCH, arg, &j->micro_batch))
			return -1;
		a->set |= SET(S_MB);
		return 1;
	case CLI_OPT_SEQ_LEN:
		if (!cli_parse_range_long(CONFIG_R_SEQ_LEN, arg, &j->seq_len))
			return -1;
		a->set |= SET(S_SEQ);
		return 1;
	case CLI_OPT_GRAD_ACCUM:
		if (!range_int(CONFIG_R_GRAD_ACCUM, arg, &j->grad_accum))
			return -1;
		a->set |= SET(S_GA);
		return 1;
	case CLI_OPT_ZERO:
		if (!range_int(CONFIG_R_ZERO, arg, &j->zero_stage))
			return -1;
		a->set |= SET(S_ZERO);
		return 1;
	case CLI_OPT_STRATEGY:
	{
		config_error e;
		if (!config_strategy_parse(arg, j, NULL, &e)) {
			cli_errorf("--strategy: %s\n", e.msg);
			return -1;
		}
		a->set |= SET(S_STRATEGY);
	}
		return 1;
	case CLI_OPT_RECOMPUTE:
		if (strcmp(arg, "none") == 0)
			j->recompute = CONFIG_RECOMPUTE_NONE;
		else if (strcmp(arg, "full") == 0)
			j->recompute = CONFIG_RECOMPUTE_FULL;
		else if (strcmp(arg, "selective") == 0)
			j->recompute = CONFIG_RECOMPUTE_SELECTIVE;
		else {
			cli_errorf("--recompute expects none, selective or full, got '%s'\n", arg);
			return -1;
		}
		a->set |= SET(S_RECOMPUTE);
		return 1;
	case CLI_OPT_OFFLOAD_ACTIVATIONS:
		j->offload_activations = true;
		a->set |= SET(S_OFFLOAD);
		return 1;
	case CLI_OPT_OFFLOAD_OPTIMIZER:
		if (!parse_pair("--offload-optimizer", arg, config_offload_optimizer_names, &n))
			return -1;
		j->offload_optimizer = (config_offload_optimizer)n;
		a->set |= SET(S_OFFLOAD_OPT);
		return 1;
	case CLI_OPT_TILE_MLP:
		if (!range_int(CONFIG_R_TILE_MLP, arg, &j->tile_mlp))
			return -1;
		a->set |= SET(S_TILE_MLP);
		return 1;
	case CLI_OPT_TILE_LOGITS:
		if (!range_int(CONFIG_R_TILE_LOGITS, arg, &j->tile_logits))
			return -1;
		a->set |= SET(S_TILE_LOGITS);
		return 1;
	case CLI_OPT_DTYPE:
		if (strcmp(arg, "bf16") != 0) {
			cli_errorf("--dtype expects bf16 (the only precision modelled), got '%s'\n", arg);
			return -1;
		}
		j->dtype = CONFIG_DTYPE_BF16;
		a->set |= SET(S_DTYPE);
		return 1;
	case CLI_OPT_ZERO_OVERLAP:
		if (!parse_tristate("--zero-overlap", arg, &j->zero_overlap))
			return -1;
		a->set |= SET(S_OVERLAP);
		return 1;
	case CLI_OPT_FP32_GRAD_COMM: {
		int t;
		if (!parse_tristate("--fp32-grad-comm", arg, &t))
			return -1;
		j->fp32_grad_comm_set = t >= 0;
		j->fp32_grad_comm = t == 1;
		a->set |= SET(S_FP32);
		return 1;
	}
	case CLI_OPT_CONTIGUOUS_GRADIENTS: {
		int t;
		if (!parse_onoff("--contiguous-gradients", arg, &t))
			return -1;
		j->contiguous_gradients = t == 1;
		a->set |= SET(S_CONTIG);
		return 1;
	}
	case CLI_OPT_REDUCE_BUCKET:
	case CLI_OPT_ALLGATHER_BUCKET:
	case CLI_OPT_PREFETCH_BUCKET: {
		config_range_id r = id == CLI_OPT_REDUCE_BUCKET	   ? CONFIG_R_REDUCE_BUCKET
				     : id == CLI_OPT_ALLGATHER_BUCKET ? CONFIG_R_ALLGATHER_BUCKET
								      : CONFIG_R_PREFETCH_BUCKET;
		bool is_auto = false;
		config_error e;
		if (!config_job_bucket_parse(r, config_range_get(r)->flag, true, arg, &d, &is_auto, &e)) {
			cli_errorf("%s\n", e.msg);
			return -1;
		}
		if (id == CLI_OPT_REDUCE_BUCKET)
			j->reduce_bucket_elems = d, j->reduce_bucket_auto = is_auto, a->set |= SET(S_RB);
		else if (id == CLI_OPT_ALLGATHER_BUCKET)
			j->allgather_bucket_elems = d, a->set |= SET(S_AB);
		else
			j->prefetch_bucket_elems = d, j->prefetch_bucket_auto = is_auto, a->set |= SET(S_PB);
		return 1;
	}
	case CLI_OPT_ULYSSES_DEGREE:
	case CLI_OPT_RING_DEGREE: {
		bool u = id == CLI_OPT_ULYSSES_DEGREE;
		long v;
		if (!cli_parse_int(u ? "--ulysses-degree" : "--ring-degree", arg, 1, 1 << 20, &v))
			return -1;
		*(u ? &j->ulysses_degree : &j->ring_degree) = (int)v;
		a->set |= u ? SET(S_UDEG) : SET(S_RDEG);
		return 1;
	}
	case CLI_OPT_CP_COMM_TYPE:
		a->cp_comm_type = config_cp_comm_type_parse(arg);
		if (a->cp_comm_type < 0) {
			cli_errorf("--cp-comm-type expects p2p, all_gather, a2a or a2a+p2p, got '%s'\n", arg);
			return -1;
		}
		a->set |= SET(S_CPCOMM);
		return 1;
	case CLI_OPT_A2A:
		if (strcmp(arg, "direct") == 0)
			j->a2a = CONFIG_A2A_DIRECT;
		else if (strcmp(arg, "pairwise") == 0)
			j->a2a = CONFIG_A2A_PAIRWISE;
		else if (strcmp(arg, "hierarchical") == 0)
			j->a2a = CONFIG_A2A_HIERARCHICAL;
		else {
			cli_errorf("--a2a expects direct, pairwise or hierarchical, got '%s'\n", arg);
			return -1;
		}
		a->set |= SET(S_A2A);
		return 1;
	case CLI_OPT_BASP_UNEVEN:
		if (strcmp(arg, "error") == 0)
			j->basp_uneven = CONFIG_BASP_UNEVEN_ERROR;
		else if (strcmp(arg, "unequal") == 0)
			j->basp_uneven = CONFIG_BASP_UNEVEN_UNEQUAL;
		else if (strcmp(arg, "extra-step") == 0)
			j->basp_uneven = CONFIG_BASP_UNEVEN_EXTRA_STEP;
		else {
			cli_errorf("--basp-uneven expects error, unequal or extra-step, got '%s'\n", arg);
			return -1;
		}
		a->set |= SET(S_UNEVEN);
		return 1;
	case CLI_OPT_ATTENTION_KERNEL: {
		int k = parse_name("--attention-kernel", arg, config_attn_kernel_names, CONFIG_ATTN_KERNELS,
				   "flash-attn-2, flash-attn-3, cudnn or flash-attn-triton");
		if (k < 0)
			return -1;
		j->attention_kernel = k;
		a->set |= SET(S_ATTN);
		return 1;
	}
	case CLI_OPT_IMPL: {
		int k = parse_name("--impl", arg, config_impl_names, CONFIG_IMPLS, "hf, hf-trainer or megatron");
		if (k < 0)
			return -1;
		j->impl = (config_impl)k;
		a->set |= SET(S_IMPL);
		return 1;
	}
	case CLI_OPT_ZERO3_PREFETCH:
		if (!parse_pair("--zero3-prefetch", arg, config_zero3_prefetch_names, &n))
			return -1;
		j->zero3_prefetch = (config_zero3_prefetch)n;
		a->set |= SET(S_Z3P);
		return 1;
	case CLI_OPT_MEMORY_RESERVE: {
		config_error err;
		if (!config_parse_size_or_zero(arg, &d, &err)) {
			cli_errorf("--memory-reserve: %s\n", err.msg);
			return -1;
		}
		j->memory_reserve = d;
		j->memory_reserve_set = true;
		a->set |= SET(S_RESERVE);
		return 1;
	}
	case CLI_OPT_ENGINE:
		if (!engine_find(arg)) {
			cli_errorf("--engine expects one of:");
			for (int i = 0; engine_registry[i]; i++)
				fprintf(stderr, " %s", engine_registry[i]->name);
			fprintf(stderr, "; got '%s'\n", arg);
			return -1;
		}
		a->engine = engine_find(arg)->name;
		a->engine_given = true;
		return 1;
	case CLI_OPT_FORMAT:
		if (!report_format_parse(arg, &a->format)) {
			cli_errorf("--format expects table, json or csv, got '%s'\n", arg);
			return -1;
		}
		return 1;
	case CLI_OPT_TRACE: a->trace = arg; return 1;
	case CLI_OPT_SLOW_GPU:
	case CLI_OPT_SLOW_NODE:
	case CLI_OPT_DEGRADE:
	case CLI_OPT_FAIL_NODE:
	case CLI_OPT_BACKGROUND: {
		config_error err;
		if (!config_whatif_add(&a->whatif, (config_whatif_kind)(id - CLI_OPT_SLOW_GPU), arg, &err)) {
			cli_errorf("%s\n", err.msg);
			return -1;
		}
		return 1;
	}
	case CLI_OPT_PLACEMENT: {
		config_error err;
		if (!engine_placement_parse(arg, &a->opt, &err)) {
			cli_errorf("%s\n", err.msg);
			return -1;
		}
		return 1;
	}
	default: return 0;
	}
}

bool cli_check_output_file(const char *flag, const char *path)
{
	struct stat st;
	char dir[CONFIG_PATH_MAX];
	if (!path[0]) {
		cli_errorf("%s expects a file name, got an empty value\n", flag);
		return false;
	}
	config_dir_of(path, dir, sizeof dir);
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		cli_errorf("%s %s is a directory, expected a file name\n", flag, path);
		return false;
	}
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		cli_errorf("%s %s: the folder %s does not exist, expected a file in an existing folder\n",
			flag, path, dir);
		return false;
	}
	if (access(dir, W_OK | X_OK) != 0 || (access(path, F_OK) == 0 && access(path, W_OK) != 0)) {
		cli_errorf("%s %s: not writable, expected a file this user may write\n", flag, path);
		return false;
	}
	return true;
}

bool cli_check_output_dir(const char *flag, const char *path, bool make_parents)
{
	struct stat st;
	if (!path[0]) {
		cli_errorf("%s expects a folder name, got an empty value\n", flag);
		return false;
	}
	if (stat(path, &st) == 0) {
		if (!S_ISDIR(st.st_mode)) {
			cli_errorf("%s %s exists and is not a folder, expected a folder to write in\n", flag,
				path);
			return false;
		}
		if (access(path, W_OK | X_OK) != 0) {
			cli_errorf("%s %s: not writable, expected a folder this user may write\n", flag, path);
			return false;
		}
		return true;
	}
	/* the folder to be created: its parent, or with make_parents the nearest ancestor that exists */
	char dir[CONFIG_PATH_MAX];
	snprintf(dir, sizeof dir, "%s", path);
	/* "figures/" is the folder figures: its parent is the one above, not figures itself */
	for (size_t n = strlen(dir); n > 1 && dir[n - 1] == '/'; n--)
		dir[n - 1] = '\0';
	for (;;) {
		char up[CONFIG_PATH_MAX];
		config_dir_of(dir, up, sizeof up);
		bool exists = stat(up, &st) == 0;
		if (exists && !S_ISDIR(st.st_mode)) {
			cli_errorf("%s %s: %s is not a folder, expected a path a folder can be created at\n", flag,
				path, up);
			return false;
		}
		if (exists) {
			if (access(up, W_OK | X_OK) != 0) {
				cli_errorf("%s %s: %s is not writable, expected a folder this user may write\n",
					flag, path, up);
				return false;
			}
			return true;
		}
		if (!make_parents || strcmp(up, dir) == 0) {
			cli_errorf("%s %s: the folder %s does not exist, expected a folder in an existing one\n",
				flag, path, up);
			return false;
		}
		snprintf(dir, sizeof dir, "%s", up);
	}
}

bool cli_check_not_input(const char *flag, const char *path, const char *const *inputs, int n)
{
	struct stat out, in;
	if (stat(path, &out) != 0)
		return true; /* a new file is no input */
	for (int i = 0; i < n; i++)
		if (inputs[i] && inputs[i][0] && stat(inputs[i], &in) == 0 && in.st_dev == out.st_dev &&
		    in.st_ino == out.st_ino) {
			cli_errorf("%s %s is the input file %s, which writing would destroy; expected another "
					"file name\n", flag, path, inputs[i]);
			return false;
		}
	return true;
}

bool cli_job_given(const cli_job_args *a, int opt_id)
{
	switch (opt_id) {
	case CLI_OPT_STRATEGY: return a->set & SET(S_STRATEGY);
	case CLI_OPT_CP_COMM_TYPE: return a->set & SET(S_CPCOMM);
	case CLI_OPT_SEQ_LEN: return a->set & SET(S_SEQ);
	case CLI_OPT_BASP_UNEVEN: return a->set & SET(S_UNEVEN);
	case CLI_OPT_A2A: return a->set & SET(S_A2A);
	case CLI_OPT_PLACEMENT: return a->opt.placement != ENGINE_PLACE_CONTIGUOUS; /* the default, given or not */
	case CLI_OPT_ENGINE: return a->engine_given;
	case CLI_OPT_TRACE: return a->trace != NULL;
	default: return false;
	}
}

bool cli_job_resolve(cli_job_args *a, const char *cmd)
{
	config_error err;
	if (a->job_file[0]) {
		config_job fromfile;
		config_job_defaults(&fromfile);
		char model[CONFIG_PATH_MAX] = "", platform[CONFIG_PATH_MAX] = "", cal[CONFIG_PATH_MAX] = "";
		int nodes = 0;
		if (!config_load_job(a->job_file, &fromfile, model, platform, cal, &nodes, &err) ||
		    !config_load_whatif(a->job_file, &a->whatif, &err)) {
			cli_errorf("--job: %s\n", err.msg);
			return false;
		}
		/* flags given on the command line win over the file */
		config_job *j = &a->job;
#define TAKE(bit, field)                  \
	if (!(a->set & SET(bit)))         \
		j->field = fromfile.field;
		TAKE(S_GPUS, gpus)
		TAKE(S_STRATEGY, strategy)
		TAKE(S_STRATEGY, basp_inner)
		TAKE(S_STRATEGY, cp_split)
		TAKE(S_STRATEGY, cp_comm)
		TAKE(S_UDEG, ulysses_degree)
		TAKE(S_RDEG, ring_degree)
		TAKE(S_SP, sp)
		TAKE(S_MB, micro_batch)
		TAKE(S_SEQ, seq_len)
		TAKE(S_GA, grad_accum)
		TAKE(S_ZERO, zero_stage)
		TAKE(S_RECOMPUTE, recompute)
		TAKE(S_DTYPE, dtype)
		TAKE(S_OVERLAP, zero_overlap)
		TAKE(S_RB, reduce_bucket_elems)
		TAKE(S_RB, reduce_bucket_auto)
		TAKE(S_AB, allgather_bucket_elems)
		TAKE(S_PB, prefetch_bucket_elems)
		TAKE(S_PB, prefetch_bucket_auto)
		TAKE(S_A2A, a2a)
		TAKE(S_UNEVEN, basp_uneven)
		TAKE(S_ATTN, attention_kernel)
		TAKE(S_IMPL, impl)
		TAKE(S_Z3P, zero3_prefetch)
		TAKE(S_OFFLOAD, offload_activations)
		TAKE(S_OFFLOAD_OPT, offload_optimizer)
		TAKE(S_CONTIG, contiguous_gradients)
		TAKE(S_TILE_MLP, tile_mlp)
		TAKE(S_TILE_LOGITS, tile_logits)
		if (!(a->set & SET(S_RESERVE))) {
			j->memory_reserve = fromfile.memory_reserve;
			j->memory_reserve_set = fromfile.memory_reserve_set;
		}
		if (!(a->set & SET(S_FP32))) {
			j->fp32_grad_comm = fromfile.fp32_grad_comm;
			j->fp32_grad_comm_set = fromfile.fp32_grad_comm_set;
		}
#undef TAKE
		if (!a->model[0])
			strcpy(a->model, model);
		if (!a->platform[0])
			strcpy(a->platform, platform);
		if (!a->calibration[0])
			strcpy(a->calibration, cal);
		if (!a->nodes)
			a->nodes = nodes;
	}
	if (a->set & SET(S_CPCOMM)) {
		if (!config_job_apply_cp_comm_type(&a->job, (config_cp_comm_type)a->cp_comm_type, a->set & SET(S_STRATEGY),
						   &err)) {
			fprintf(stderr, "spsim %s: --cp-comm-type: %s\n", cmd, err.msg);
			return false;
		}
	}
	if (!a->model[0] || !a->platform[0]) {
		fprintf(stderr, "spsim %s: %s is required (a shipped name or a YAML path; see spsim %s)\n", cmd,
			!a->model[0] ? "--model" : "--platform", !a->model[0] ? "models" : "platforms");
		return false;
	}
	if (a->job.seq_len <= 0) {
		fprintf(stderr, "spsim %s: --seq-len is required (tokens per sequence, e.g. 16K)\n", cmd);
		return false;
	}
	if (!config_load_model(a->model, &a->m, &err)) {
		cli_errorf("--model: %s\n", err.msg);
		return false;
	}
	if (!config_load_platform(a->platform, &a->p, &err)) {
		cli_errorf("--platform: %s\n", err.msg);
		return false;
	}
	if (a->nodes && a->p.n_node_groups > 0 && a->nodes != a->p.nodes) {
		fprintf(stderr, "spsim %s: --nodes %d: platform '%s' lists its %d nodes in node_groups; edit the groups "
				"to change them\n", cmd, a->nodes, a->p.name, a->p.nodes);
		return false;
	}
	if (a->nodes)
		a->p.nodes = a->nodes;
	if (a->calibration[0]) {
		if (!config_calibrate_platform(a->calibration, &a->p, &a->cal, &err)) {
			cli_errorf("--calibration: %s\n", err.msg);
			return false;
		}
		a->has_cal = true;
	}
	if (a->trace) {
		const char *inputs[] = {a->job_file, a->model, a->platform, a->calibration};
		if (!cli_check_output_file("--trace", a->trace) || !cli_check_not_input("--trace", a->trace, inputs, 4))
			return false;
		a->opt.trace_path = a->trace;
	}
	/* max-seq runs no engine (a memory bound): what only an engine refuses does not apply */
	const bool simulates = strcmp(cmd, "max-seq") != 0;
	if (simulates && (!engine_placement_supported(a->engine, &a->opt, &err) ||
			  !engine_platform_supported(a->engine, &a->p, &err) ||
			  !engine_buckets_supported(a->engine, &a->m, &a->job, &err))) {
		fprintf(stderr, "spsim %s: %s\n", cmd, err.msg);
		return false;
	}
	if (!workload_check(&a->m, &a->p, &a->job, &err)) {
		fprintf(stderr, "spsim %s: %s\n", cmd, err.msg);
		return false;
	}
	if (a->whatif.n > 0)
		a->opt.whatif = &a->whatif;
	if (a->p.n_node_groups > 0) {
		if (simulates && config_platform_heterogeneous(&a->p) && strcmp(a->engine, "analytic") == 0) {
			fprintf(stderr, "spsim %s: the analytic engine times one kind of node; platform '%s' mixes node "
					"groups of different GPUs or NIC counts: use --engine simgrid\n", cmd, a->p.name);
			return false;
		}
		/* the memory check is against the smallest GPU holding a rank */
		a->p.gpu.memory_bytes = engine_placed_gpu_memory(&a->p, a->job.gpus, &a->opt);
	}
	if (a->whatif.n > 0) {
		if (!config_whatif_check(&a->whatif, &a->p, a->job.gpus, &err) ||
		    (simulates && !engine_whatif_supported(a->engine, &a->opt, &err))) {
			fprintf(stderr, "spsim %s: %s\n", cmd, err.msg);
			return false;
		}
	}
	/* compare names its strategies itself (--strategies), so only one job's strategy counts */
	if (a->job.strategy == CONFIG_STRATEGY_ULYSSES && a->job.basp_uneven != CONFIG_BASP_UNEVEN_ERROR &&
	    strcmp(cmd, "compare") != 0)
		fprintf(stderr, "spsim %s: warning: --basp-uneven %s applies to --strategy basp only; ignored for "
				"ulysses\n", cmd, config_basp_uneven_names[a->job.basp_uneven]);
	char unused[256];
	if (strcmp(cmd, "max-seq") != 0 && config_job_unused_zero(&a->job, unused, sizeof unused)) /* max-seq: a --zero list */
		fprintf(stderr, "spsim %s: warning: ZeRO-%d does not use %s; ignored\n", cmd, a->job.zero_stage, unused);
	if (strcmp(cmd, "max-seq") != 0) /* max-seq searches the length: it warns on its answer */
		cli_warn_max_position(&a->m, a->job.seq_len, cmd);
	return true;
}

void cli_warn_max_position(const config_model *m, long seq_len, const char *cmd)
{
	if (m->max_position > 0 && seq_len > m->max_position)
		fprintf(stderr,
			"spsim %s: warning: %ld tokens exceed %s's max_position (%d): the model was not trained "
			"for it (extend its RoPE scaling first); %s anyway\n",
			cmd, seq_len, m->name, m->max_position,
			strcmp(cmd, "max-seq") == 0 ? "the memory bound is reported" : "simulating"); /* max-seq simulates nothing */
}

bool cli_simulate(const cli_job_args *a, const config_job *job, cli_sim *out)
{
	config_error err;
	memset(out, 0, sizeof *out);
	if (!workload_compose(&a->m, &a->p, job, &out->comp, &err)) {
		cli_errorf("%s\n", err.msg);
		return false;
	}
	const engine_ops *e = engine_find(a->engine);
	if (!engine_run_composite(e, &a->m, &a->p, job, &out->comp, a->opt, &out->res, out->parts, &out->plan, &err)) {
		cli_errorf("%s engine: %s\n", e->name, err.msg);
		workload_compose_finish(&out->comp);
		return false;
	}
	return true;
}

void cli_sim_finish(cli_sim *s) { workload_compose_finish(&s->comp); }

report_run cli_sim_report(const cli_job_args *a, const config_job *job, const cli_sim *s, const char *label)
{
	return (report_run){.label = label, .model = &a->m, .platform = &a->p, .job = job, .plan = s->plan,
			    .result = &s->res, .calibration = a->has_cal ? a->calibration : NULL, .composite = &s->comp,
			    .part_results = s->parts, .whatif = a->opt.whatif};
}
