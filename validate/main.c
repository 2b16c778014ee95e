/* spsim-validate: runs the communication patterns and layer kernels of a job for real and
 * writes what it measured in a form the engines read (docs/validate.md).
 *
 *   spsim-validate comm    [options]   NCCL collective sweeps -> link latency/bandwidth
 *   spsim-validate compute [options]   GEMM/attention/layout kernels -> efficiencies
 *   spsim-validate layer   [options]   a distributed attention layer, checked and timed,
 *                                      measured vs predicted per phase
 *
 * Only main() exits; everything below returns VALIDATE_* codes. Exit status: 0 success,
 * 1 a result did not match its reference, 2 a failure (printed), 77 no GPU. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "cli.h"
#include "spsim_build.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: spsim-validate <comm|compute|layer> [options]\n"
		"\n"
		"machine:\n"
		"  --transport nccl|cpu   nccl: the GPUs (default); cpu: every rank in this\n"
		"                         process on the CPU reference kernels (tests the harness, times nothing real)\n"
		"  --gpus N               one process driving N GPUs of this node (default: all visible)\n"
		"  --launch auto|local|mpi  mpi: one process per GPU (mpirun/srun); auto: mpi when started by them\n"
		"                         (mpi %s); with --transport cpu and --launch mpi every process runs the\n"
		"                         whole job on its CPU and only agreement crosses processes (tests the failure paths)\n"
		"  --ranks N, --ranks-per-node R   ranks of the cpu transport (default 4, 4)\n"
		"  --cpu-clock LAT,BW,LAT,BW,FLOPS,HBM   cpu transport: a virtual clock with these intra-node and\n"
		"                         inter-node links, FLOP rate and HBM bandwidth instead of wall time\n"
		"                         (e.g. 3us,150GB/s,10us,40GB/s,100TFLOPS,2TB/s; for testing the harness)\n"
		"  --timeout SECONDS      no step may take longer (default 300): NCCL calls, init and split included,\n"
		"                         are polled against it and their communicators aborted; a watchdog ends\n"
		"                         every process (exit 2) when any step overruns it by 10%% + 2 s, naming the\n"
		"                         rank and the step\n"
		"  --run-timeout SECONDS  the watchdog also ends the whole run after this long (default 0: no limit)\n"
		"files:\n"
		"  -o, --out DIR          measurements.jsonl, calibration.yaml, report.md (default validate-out;\n"
		"                         alias --output)\n"
		"  --platform NAME|FILE   peaks, NIC count, and the predicted side of `layer`\n"
		"  --calibration FILE     `layer`: predict with this calibration applied\n"
		"  --model NAME|FILE      the model whose shapes `compute` and `layer` run\n"
		"timing:  --warmup N (default 5), --iters N (default 20 comm, 20 compute, 5 layer); compute times\n"
		"         each call alone (cache flushed before it when its operands fit in L2) and reports the\n"
		"         median with p10/p90 and the GPU's clocks and temperature (NVML)\n"
		"comm:    --min-bytes SIZE (1KiB) --max-bytes SIZE (1GiB) --factor F (2) --group-sizes K1,K2,...\n"
		"         (default: every power of two 1 < K < ranks) --no-world --no-zero --dtype bf16|float\n"
		"         (aliases as in spsim collective: -b/--minbytes, -e/--maxbytes, -f/--stepfactor)\n"
		"         --nics-per-node N\n"
		"compute: --seq S1,S2,... --micro-batch B --sp N --strategy basp|ulysses\n"
		"         attention is cuDNN's fused flash attention (kernel family `cudnn`) where the build found\n"
		"         cuDNN 9; otherwise this build's own WMMA kernel (`wmma-fallback`), and the report and\n"
		"         calibration say which (this build: %s)\n"
		"         --peak-tflops X --hbm-bandwidth RATE (else the platform's)\n"
		"layer:   --seq S --micro-batch B --strategy basp|ulysses|both (both) --dims h,a,g,d (instead of\n"
		"         --model) --no-backward --no-check --tol X (1/32) --seed N\n",
		SPSIM_HAVE_MPI ? "is in this build" : "is not in this build", validate_attn_kernel_built());
}

static int parse_list(const char *s, long *out, int cap)
{
	int n = 0;
	while (*s && n < cap) {
		char *end;
		errno = 0;
		long v = strtol(s, &end, 10);
		if (errno || end == s)
			return -1;
		if (*end == 'K' || *end == 'k') {
			v *= 1024;
			end++;
		}
		out[n++] = v;
		if (*end == ',')
			end++;
		else if (*end)
			return -1;
		s = end;
	}
	return n;
}

static int parse_int(const char *s, int lo, int *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > 1 << 30)
		return -1;
	*out = (int)v;
	return 0;
}

/* A number of seconds, > 0 (or 0 when zero_ok), at most a week. */
static int parse_seconds(const char *s, bool zero_ok, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= 0) || (v == 0 && !zero_ok) || v > 7 * 86400)
		return -1;
	*out = v;
	return 0;
}

static int parse_size(const char *s, size_t *out)
{
	double v;
	config_error e;
	if (!config_parse_quantity(s, CONFIG_UNIT_SIZE, &v, &e)) {
		char *end;
		errno = 0;
		unsigned long long n = strtoull(s, &end, 10); /* a bare byte count */
		if (errno || end == s || *end) {
			fprintf(stderr, "spsim-validate: size '%s': %s\n", s, e.msg);
			return -1;
		}
		v = (double)n;
	}
	*out = (size_t)v;
	return 0;
}

enum {
	O_TRANSPORT = 256, O_GPUS, O_LAUNCH, O_RANKS, O_RPN, O_TIMEOUT, O_OUT, O_PLATFORM, O_CALIB, O_MODEL, O_WARMUP,
	O_ITERS, O_MINB, O_MAXB, O_FACTOR, O_GROUPS, O_NOWORLD, O_NOZERO, O_DTYPE, O_NICS, O_SEQ, O_MB, O_SP, O_STRAT,
	O_DIMS, O_PEAK, O_HBM, O_NOBWD, O_NOCHECK, O_TOL, O_SEED, O_HELP, O_CLOCK, O_RUNTIMEOUT,
};

/* --cpu-clock LAT,BW,LAT,BW,FLOPS,HBM */
static int parse_clock(const char *spec, validate_cpu_clock *c)
{
	static const config_unit_kind kinds[6] = {CONFIG_UNIT_TIME, CONFIG_UNIT_BANDWIDTH, CONFIG_UNIT_TIME,
						  CONFIG_UNIT_BANDWIDTH, CONFIG_UNIT_FLOPS, CONFIG_UNIT_BANDWIDTH};
	double *const dst[6] = {&c->intra_latency, &c->intra_bw, &c->inter_latency, &c->inter_bw, &c->flops, &c->hbm};
	char buf[256];
	snprintf(buf, sizeof buf, "%s", spec);
	char *save = NULL, *tok = strtok_r(buf, ",", &save);
	for (int i = 0; i < 6; i++, tok = strtok_r(NULL, ",", &save)) {
		config_error e;
		if (!tok || !config_parse_quantity(tok, kinds[i], dst[i], &e)) {
			fprintf(stderr, "spsim-validate: --cpu-clock '%s': field %d: %s\n", spec, i + 1,
				tok ? e.msg : "missing (want LAT,BW,LAT,BW,FLOPS,HBM)");
			return -1;
		}
	}
	return tok ? -1 : 0;
}

static int parse(int argc, char **argv, vcli_opts *o)
{
	static const struct option longs[] = {
		{"transport", required_argument, 0, O_TRANSPORT}, {"gpus", required_argument, 0, O_GPUS},
		{"launch", required_argument, 0, O_LAUNCH},       {"ranks", required_argument, 0, O_RANKS},
		{"ranks-per-node", required_argument, 0, O_RPN},  {"timeout", required_argument, 0, O_TIMEOUT},
		{"out", required_argument, 0, O_OUT},             {"platform", required_argument, 0, O_PLATFORM},
		{"output", required_argument, 0, O_OUT},          {"minbytes", required_argument, 0, O_MINB},
		{"maxbytes", required_argument, 0, O_MAXB},       {"stepfactor", required_argument, 0, O_FACTOR},
		{"calibration", required_argument, 0, O_CALIB},   {"model", required_argument, 0, O_MODEL},
		{"warmup", required_argument, 0, O_WARMUP},       {"iters", required_argument, 0, O_ITERS},
		{"min-bytes", required_argument, 0, O_MINB},      {"max-bytes", required_argument, 0, O_MAXB},
		{"factor", required_argument, 0, O_FACTOR},       {"group-sizes", required_argument, 0, O_GROUPS},
		{"no-world", no_argument, 0, O_NOWORLD},          {"no-zero", no_argument, 0, O_NOZERO},
		{"dtype", required_argument, 0, O_DTYPE},         {"nics-per-node", required_argument, 0, O_NICS},
		{"seq", required_argument, 0, O_SEQ},             {"micro-batch", required_argument, 0, O_MB},
		{"sp", required_argument, 0, O_SP},               {"strategy", required_argument, 0, O_STRAT},
		{"dims", required_argument, 0, O_DIMS},           {"peak-tflops", required_argument, 0, O_PEAK},
		{"hbm-bandwidth", required_argument, 0, O_HBM},   {"no-backward", no_argument, 0, O_NOBWD},
		{"no-check", no_argument, 0, O_NOCHECK},          {"tol", required_argument, 0, O_TOL},
		{"seed", required_argument, 0, O_SEED},           {"help", no_argument, 0, O_HELP},
		{"cpu-clock", required_argument, 0, O_CLOCK},     {"run-timeout", required_argument, 0, O_RUNTIMEOUT},
		{0, 0, 0, 0},
	};
	long list[VCLI_MAX_LIST];
	int c, n;
	config_error e;
	optind = 1;
	while ((c = getopt_long(argc, argv, "o:b:e:f:", longs, NULL)) != -1) {
		switch (c) {
		/* short spellings shared with spsim collective (nccl-tests' -b -e -f) and -o */
		case 'o': o->out_dir = optarg; break;
		case 'b': if (parse_size(optarg, &o->min_bytes)) return -1; break;
		case 'e': if (parse_size(optarg, &o->max_bytes)) return -1; break;
		case 'f': if (parse_int(optarg, 2, &o->factor)) goto bad; break;
		case O_TRANSPORT:
			if (strcmp(optarg, "nccl") && strcmp(optarg, "cpu"))
				goto bad;
			o->transport = optarg;
			break;
		case O_LAUNCH:
			if (strcmp(optarg, "auto") && strcmp(optarg, "local") && strcmp(optarg, "mpi"))
				goto bad;
			o->launch = optarg;
			break;
		case O_GPUS: if (parse_int(optarg, 0, &o->gpus)) goto bad; break;
		case O_RANKS: if (parse_int(optarg, 1, &o->ranks)) goto bad; break;
		case O_RPN: if (parse_int(optarg, 1, &o->ranks_per_node)) goto bad; break;
		case O_TIMEOUT:
			if (parse_seconds(optarg, false, &o->timeout_s))
				goto bad;
			break;
		case O_RUNTIMEOUT:
			if (parse_seconds(optarg, true, &o->run_timeout_s))
				goto bad;
			break;
		case O_OUT: o->out_dir = optarg; break;
		case O_PLATFORM: o->platform = optarg; break;
		case O_CALIB: o->calibration = optarg; break;
		case O_MODEL: o->model = optarg; break;
		case O_WARMUP: if (parse_int(optarg, 0, &o->warmup)) goto bad; break;
		case O_ITERS: if (parse_int(optarg, 1, &o->iters)) goto bad; break;
		case O_MINB: if (parse_size(optarg, &o->min_bytes)) return -1; break;
		case O_MAXB: if (parse_size(optarg, &o->max_bytes)) return -1; break;
		case O_FACTOR: if (parse_int(optarg, 2, &o->factor)) goto bad; break;
		case O_GROUPS:
			if ((n = parse_list(optarg, list, VCLI_MAX_LIST)) < 1)
				goto bad;
			for (int i = 0; i < n; i++)
				o->group_sizes[i] = (int)list[i];
			o->n_group_sizes = n;
			break;
		case O_NOWORLD: o->no_world = true; break;
		case O_NOZERO: o->no_zero = true; break;
		case O_DTYPE:
			if (!strcmp(optarg, "bf16") || !strcmp(optarg, "bfloat16"))
				o->dtype = VALIDATE_BF16;
			else if (!strcmp(optarg, "float") || !strcmp(optarg, "fp32"))
				o->dtype = VALIDATE_F32;
			else
				goto bad;
			break;
		case O_NICS: if (parse_int(optarg, 1, &o->nics_per_node)) goto bad; break;
		case O_SEQ:
			if ((n = parse_list(optarg, list, VCLI_MAX_LIST)) < 1)
				goto bad;
			memcpy(o->seqs, list, (size_t)n * sizeof *list);
			o->n_seqs = n;
			break;
		case O_MB: if (parse_int(optarg, 1, &o->micro_batch)) goto bad; break;
		case O_SP: if (parse_int(optarg, 1, &o->sp)) goto bad; break;
		case O_STRAT:
			if (strcmp(optarg, "basp") && strcmp(optarg, "ulysses") && strcmp(optarg, "both"))
				goto bad;
			o->strategy = optarg;
			break;
		case O_DIMS:
			if ((n = parse_list(optarg, list, 4)) != 4)
				goto bad;
			for (int i = 0; i < 4; i++)
				o->dims[i] = (int)list[i];
			o->has_dims = 1;
			break;
		case O_PEAK: o->peak_flops = strtod(optarg, NULL) * 1e12; if (!(o->peak_flops > 0)) goto bad; break;
		case O_HBM:
			if (!config_parse_quantity(optarg, CONFIG_UNIT_BANDWIDTH, &o->hbm_bw, &e)) {
				fprintf(stderr, "spsim-validate: --hbm-bandwidth '%s': %s\n", optarg, e.msg);
				return -1;
			}
			break;
		case O_NOBWD: o->no_backward = true; break;
		case O_NOCHECK: o->no_check = true; break;
		case O_TOL: o->tol = strtod(optarg, NULL); if (!(o->tol > 0)) goto bad; break;
		case O_SEED: o->seed = strtoull(optarg, NULL, 10); break;
		case O_CLOCK:
			if (parse_clock(optarg, &o->clock))
				return -1;
			o->has_clock = true;
			break;
		case O_HELP: usage(stdout); return 1;
		default: usage(stderr); return -1;
		}
		continue;
	bad:
		for (n = 0; longs[n].name && longs[n].val != c; n++)
			;
		fprintf(stderr, "spsim-validate: --%s: '%s' is not a valid value%s (see --help)\n",
			longs[n].name ? longs[n].name : "?", optarg ? optarg : "",
			c == O_TIMEOUT	   ? ": want seconds, > 0 and at most 604800"
			: c == O_RUNTIMEOUT ? ": want seconds, 0 (no limit) to 604800"
					    : "");
		return -1;
	}
	if (optind < argc) {
		fprintf(stderr, "spsim-validate: unexpected argument '%s'\n", argv[optind]);
		return -1;
	}
	return 0;
}

/* ----------------------------------------------------------------- outputs --- */
int vcli_out_open(vcli_out *o, const char *dir, bool writer)
{
	memset(o, 0, sizeof *o);
	o->writer = writer;
	snprintf(o->dir, sizeof o->dir, "%s", dir);
	if (!writer)
		return validate_log_open(&o->log, "", false);
	if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
		fprintf(stderr, "spsim-validate: cannot create %s: %s\n", dir, strerror(errno));
		return VALIDATE_EIO;
	}
	char path[CONFIG_PATH_MAX + 32];
	snprintf(path, sizeof path, "%s/measurements.jsonl", dir);
	int rc = validate_log_open(&o->log, path, true);
	if (rc)
		return rc;
	snprintf(path, sizeof path, "%s/report.md", dir);
	if (!(o->report = fopen(path, "a"))) {
		fprintf(stderr, "spsim-validate: cannot open %s: %s\n", path, strerror(errno));
		validate_log_close(&o->log);
		return VALIDATE_EIO;
	}
	return VALIDATE_OK;
}

void vcli_out_close(vcli_out *o)
{
	validate_log_close(&o->log);
	if (o->report)
		fclose(o->report);
	o->report = NULL;
}

void vcli_say(vcli_out *o, const char *fmt, ...)
{
	if (!o->writer)
		return;
	va_list ap;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fflush(stdout);
	if (o->report) {
		va_start(ap, fmt);
		vfprintf(o->report, fmt, ap);
		va_end(ap);
		fflush(o->report);
	}
}

int vcli_calibration_merge(vcli_out *o, const config_calibration *u)
{
	if (!o->writer)
		return VALIDATE_OK;
	char path[CONFIG_PATH_MAX + 32], tmp[CONFIG_PATH_MAX + 48];
	snprintf(path, sizeof path, "%s/calibration.yaml", o->dir);
	snprintf(tmp, sizeof tmp, "%s/calibration.yaml.tmp", o->dir);
	config_calibration c;
	config_error e;
	memset(&c, 0, sizeof c);
	FILE *probe = fopen(path, "r");
	if (probe) {
		fclose(probe);
		if (!config_load_calibration(path, &c, &e)) {
			fprintf(stderr, "spsim-validate: %s: %s; rewriting it\n", path, e.msg);
			memset(&c, 0, sizeof c);
		}
	}
	snprintf(c.source, sizeof c.source, "%s", u->source[0] ? u->source : "spsim-validate");
	if (u->platform[0])
		snprintf(c.platform, sizeof c.platform, "%s", u->platform);
	/* The format takes positive quantities only: a fitted latency of 0 (pinned) is left out. */
#define TAKE(has, field)                          \
	if (u->has && u->field > 0) {             \
		c.has = true;                     \
		c.field = u->field;               \
	}
	TAKE(has_intra_latency, intra_latency)
	TAKE(has_intra_bw, intra_bw)
	TAKE(has_inter_latency, inter_latency)
	TAKE(has_inter_bw, inter_bw)
	TAKE(has_gemm, gemm)
	TAKE(has_attention, attention)
	TAKE(has_memory, memory)
#undef TAKE
	if (u->has_overhead) {
		c.has_overhead = true;
		c.overhead = u->overhead;
	}
	if (u->has_intra_latency || u->has_inter_latency || u->has_intra_bw || u->has_inter_bw)
		c.links_only = u->links_only;
	if (u->gpu[0])
		snprintf(c.gpu, sizeof c.gpu, "%s", u->gpu);
	if (u->attention_kernel[0])
		snprintf(c.attention_kernel, sizeof c.attention_kernel, "%s", u->attention_kernel);
	/* A new point replaces the old one of the same kernel, shape and direction. */
	for (int i = 0; i < u->n_attention_points; i++) {
		const config_attention_point *p = &u->attention_points[i];
		int at = 0;
		while (at < c.n_attention_points) {
			const config_attention_point *q = &c.attention_points[at];
			if (!strcmp(p->kernel, q->kernel) && p->seq == q->seq && p->head_dim == q->head_dim &&
			    p->heads == q->heads && p->kv_heads == q->kv_heads && p->direction == q->direction &&
			    p->causal == q->causal)
				break;
			at++;
		}
		if (at < CONFIG_MAX_ATTENTION_POINTS) {
			c.attention_points[at] = *p;
			if (at == c.n_attention_points)
				c.n_attention_points++;
		}
	}
	/* Write aside and rename: a crash never leaves half a calibration. */
	FILE *f = fopen(tmp, "w");
	if (!f) {
		fprintf(stderr, "spsim-validate: cannot write %s: %s\n", tmp, strerror(errno));
		return VALIDATE_EIO;
	}
	fprintf(f, "# Measured by spsim-validate; read with --calibration (format: src/config/config.h).\n");
	bool ok = config_write_calibration(f, &c);
	if (fclose(f) != 0 || !ok || rename(tmp, path) != 0) {
		fprintf(stderr, "spsim-validate: cannot write %s: %s\n", path, strerror(errno));
		return VALIDATE_EIO;
	}
	return VALIDATE_OK;
}

/* The platform's GPU model: its gpu.name up to the first '-' ("H200" of "H200-SXM-141GB"). */
static bool device_is(const char *device, const char *platform_gpu)
{
	char model[64];
	size_t n = strcspn(platform_gpu, "-_ ");
	if (n == 0 || n >= sizeof model)
		return false;
	memcpy(model, platform_gpu, n);
	model[n] = 0;
	for (const char *d = device; *d; d++)
		if (!strncasecmp(d, model, n))
			return true;
	return false;
}

int vcli_gpu_of(const vcli_opts *opt, const validate_gpu_state *gpu, char *out, size_t len)
{
	out[0] = 0;
	if (!gpu->name[0])
		return VALIDATE_OK; /* not a GPU measurement (cpu transport) */
	snprintf(out, len, "%s", gpu->name);
	if (!opt->platform)
		return VALIDATE_OK;
	config_platform p;
	config_error e;
	if (!config_load_platform(opt->platform, &p, &e)) {
		fprintf(stderr, "spsim-validate: %s\n", e.msg);
		return VALIDATE_EINVAL;
	}
	if (device_is(gpu->name, p.gpu.name))
		snprintf(out, len, "%s", p.gpu.name);
	else
		fprintf(stderr, "spsim-validate: this GPU is '%s', not platform %s's '%s': the calibration records '%s', and "
				"spsim will refuse it for that platform\n",
			gpu->name, p.name, p.gpu.name, gpu->name);
	return VALIDATE_OK;
}

void vcli_peaks(const vcli_opts *opt, double *flops, double *hbm)
{
	*flops = opt->peak_flops;
	*hbm = opt->hbm_bw;
	if ((*flops > 0 && *hbm > 0) || !opt->platform)
		return;
	config_platform p;
	config_error e;
	if (!config_load_platform(opt->platform, &p, &e)) {
		fprintf(stderr, "spsim-validate: %s\n", e.msg);
		return;
	}
	if (!(*flops > 0))
		*flops = p.gpu.peak_flops;
	if (!(*hbm > 0))
		*hbm = p.gpu.hbm_bandwidth;
}

/* -------------------------------------------------------------------- main --- */
static int exit_code(int rc)
{
	switch (rc) {
	case VALIDATE_OK: return 0;
	case VALIDATE_ECHECK: return 1;
	case VALIDATE_ENODEV: return 77;
	default: return 2;
	}
}

/* The end of a run. A failure under MPI ends every process (launch->abort): a process
 * that returns while others still wait in a collective would leave them hanging, and
 * MPI_Finalize itself waits for them. */
static int finish(validate_launch *launch, int rc)
{
	validate_watchdog_stop();
	const int code = exit_code(rc);
	if (code == 2 && launch->procs > 1)
		launch->abort(launch, code);
	launch->finish(launch);
	return code;
}

int main(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	vcli_opts opt = {
		.command = argv[1],
		.transport = "nccl", /* never silently the CPU: its numbers are not a machine's */
		.launch = "auto",
		.ranks = 4,
		.ranks_per_node = 4,
		.timeout_s = 300,
		.out_dir = "validate-out",
		.warmup = -1,
		.iters = -1,
		.min_bytes = 1024,
		.max_bytes = (size_t)1 << 30,
		.factor = 2,
		.dtype = VALIDATE_BF16,
		.micro_batch = 1,
		.strategy = NULL,
		.tol = KERNELS_BF16_TOL,
		.seed = 20240601,
	};
	int (*cmd)(const vcli_opts *, validate_transport *, vcli_out *) = NULL;
	if (!strcmp(opt.command, "comm"))
		cmd = vcli_comm;
	else if (!strcmp(opt.command, "compute"))
		cmd = vcli_compute;
	else if (!strcmp(opt.command, "layer"))
		cmd = vcli_layer;
	else {
		fprintf(stderr, "spsim-validate: unknown command '%s' (comm, compute or layer)\n", opt.command);
		return 2;
	}
	int p = parse(argc - 1, argv + 1, &opt);
	if (p)
		return p > 0 ? 0 : 2;
	const int iters_default = cmd == vcli_layer ? 5 : 20;
	if (opt.iters < 0)
		opt.iters = iters_default;
	if (opt.warmup < 0)
		opt.warmup = cmd == vcli_layer ? 2 : 5;

	char ierr[256];
	if (!validate_inject_from_env(ierr, sizeof ierr)) {
		fprintf(stderr, "spsim-validate: %s\n", ierr);
		return 2;
	}

	/* Launch: MPI when asked, or when mpirun/srun started us and the build has it. */
	validate_launch *launch = validate_launch_single();
	const bool use_mpi = !strcmp(opt.launch, "mpi") || (!strcmp(opt.launch, "auto") && validate_launch_mpi_env() &&
							      !strcmp(opt.transport, "nccl"));
	int rc = VALIDATE_OK;
	if (use_mpi) {
		if ((rc = validate_launch_mpi(&argc, &argv, &launch)))
			return exit_code(rc);
	}
	/* From here on nothing may wait forever: the watchdog ends every process when one step
	 * overruns --timeout (or the run --run-timeout). */
	if ((rc = validate_watchdog_start(launch, opt.timeout_s, opt.run_timeout_s)))
		return finish(launch, rc);
	validate_transport *t = NULL;
	if (!strcmp(opt.transport, "cpu")) {
		/* Under MPI every process runs the whole job on its own CPU transport; what crosses
		 * processes (agreement, reductions) is MPI's, which is what the tests of the
		 * failure paths need. */
		validate_step_begin("cpu transport set-up");
		rc = validate_transport_cpu(opt.ranks, opt.ranks_per_node, 0, &t);
		if (!rc && opt.has_clock)
			rc = validate_transport_cpu_clock(t, &opt.clock);
		if (!rc)
			t->launch = launch;
		rc = validate_agree(launch, rc);
	} else if (opt.has_clock) {
		fprintf(stderr, "spsim-validate: --cpu-clock is for --transport cpu\n");
		rc = VALIDATE_EINVAL;
	} else
		rc = validate_transport_nccl(launch, opt.gpus, opt.timeout_s, &t);
	if (rc) {
		if (rc == VALIDATE_ENODEV && launch->proc == 0)
			fprintf(stderr, "spsim-validate: no GPU here; `--transport cpu` exercises the harness on the CPU\n");
		validate_transport_destroy(t);
		return finish(launch, rc);
	}
	vcli_out out;
	if ((rc = vcli_out_open(&out, opt.out_dir, launch->proc == 0)) == VALIDATE_OK) {
		vcli_say(&out, "\n## spsim-validate %s: %d ranks on %d host(s), transport %s, launch %s\n\n", opt.command,
			 t->world, t->nodes, t->ops->name, launch->name);
		rc = cmd(&opt, t, &out);
		vcli_out_close(&out);
	}
	if (rc && rc != VALIDATE_ECHECK && launch->proc == 0)
		fprintf(stderr, "spsim-validate %s: %s (measurements taken so far are in %s/measurements.jsonl)\n",
			opt.command, validate_strerror(rc), opt.out_dir);
	validate_transport_destroy(t);
	return finish(launch, rc);
}
