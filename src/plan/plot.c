/* Figures: rows -> gnuplot data and script files -> SVG and PNG.
 *
 * gnuplot runs as a program (fork + exec, in DIR, on DIR/<name>.gp); the data and the
 * script stay next to the figures so that anyone can restyle one and run gnuplot again.
 * Figures group rows by the fields that vary among them: a curve (or bar) per strategy
 * label and per combination of the other varying fields; when that would make too many,
 * the least important fields are pinned to one value and the subtitle says which. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "plan/plan.h"

#define MAX_SERIES 12
#define MAX_BARS 16
#define W_PX 960
#define H_PX 640

/* Colours: each strategy label has one colour in every figure; limits (capacity, the
 * baseline) are neutral grey; series of one strategy differ by dash and marker shape, so
 * no two series look alike however many there are. */
#define LIMIT_GREY "#555555"
#define BASELINE_GREY "#999999"
static const struct {
	const char *label, *rgb;
} strategy_colours[] = {
	{"ulysses", "#1f77b4"},	       /* blue */
	{"basp", "#ff7f0e"},	       /* orange */
	{"basp-unequal", "#2ca02c"},   /* green */
	{"basp-extra-step", "#9467bd"}, /* purple */
	{"ulysses:sp=N/B", "#8c564b"},  /* brown */
	/* the strategies study (examples/strategies.yaml): the ring family in reds and pinks,
	 * USP teal, BASP over each in its own hue, none of them near Ulysses' blue */
	{"ring", "#d62728"},				  /* red */
	{"ring:comm=all_gather", "#e377c2"},		  /* pink */
	{"usp:u=4", "#009e73"},				  /* teal green */
	{"basp:inner=ring", "#bcbd22"},			  /* olive */
	{"basp:inner=ring:comm=all_gather", "#7b4173"}, /* plum */
	{"basp:inner=usp:u=2", "#111111"},		  /* black */
};
/* Other labels (ulysses:sp=4, ...) take a colour from the rest of the palette by a hash of
 * the label, so a label keeps its colour from figure to figure; none of these is a listed
 * colour or a blue that reads as Ulysses'. */
static const char *const other_colours[] = {"#637939", "#843c39", "#e6550d", "#e7ba52", "#ce6dbd", "#8ca252",
					    "#ad494a", "#a55194"};

static const char *strategy_colour(const char *label)
{
	for (size_t i = 0; i < sizeof strategy_colours / sizeof *strategy_colours; i++)
		if (strcmp(label, strategy_colours[i].label) == 0)
			return strategy_colours[i].rgb;
	unsigned long h = 5381;
	for (const char *c = label; *c; c++)
		h = h * 33 + (unsigned char)*c;
	return other_colours[h % (sizeof other_colours / sizeof *other_colours)];
}

/* Marker shapes as gnuplot point types, (filled, open) pairs: circle, square, triangle,
 * diamond, inverted triangle. Open markers are the configurations that do not fit. */
static const int marker_shapes[][2] = {{7, 6}, {5, 4}, {9, 8}, {13, 12}, {11, 10}};
#define N_SHAPES 5

/* The fields that describe a configuration (apart from the strategy label). */
static const char *const dims[] = {
	"model", "platform", "gpus_per_node", "nics", "nic_bandwidth", "intra_bandwidth", "inter_latency",
	"gpu_memory", "calibration", "engine", "placement", "what_if", "nodes", "gpus", "zero_stage", "recompute", "a2a",
	"basp_uneven", "cp_comm_type", "attention_kernel", "impl", "zero3_prefetch", "offload_activations", "offload_optimizer",
	"tile_mlp", "tile_logits", "memory_reserve", "zero_overlap", "fp32_grad_comm", "contiguous_gradients", "reduce_bucket", "allgather_bucket",
	"prefetch_bucket", "grad_accum", "seq_len", "micro_batch", NULL,
};
enum { MAX_DIMS = 36 };

/* The order in which fields are pinned to one value when a figure would be crowded:
 * details of the set-up first, the axes of the studies last. */
static const char *const pin_order[] = {
	"engine", "calibration", "placement", "what_if", "inter_latency", "intra_bandwidth", "nics", "gpus_per_node",
	"gpu_memory", "reduce_bucket", "allgather_bucket", "prefetch_bucket", "contiguous_gradients", "fp32_grad_comm", "zero_overlap",
	"memory_reserve", "tile_logits", "tile_mlp", "offload_optimizer", "offload_activations", "zero3_prefetch", "impl", "attention_kernel", "cp_comm_type",
	"grad_accum", "a2a", "basp_uneven", "recompute", "zero_stage", "nic_bandwidth", "gpus", "nodes", "model",
	"platform", "seq_len", "micro_batch", NULL,
};

/* Hardware fields: a what-if varies these. */
static const char *const hw_dims[] = {"platform", "gpus_per_node", "nics", "nic_bandwidth", "intra_bandwidth",
				      "inter_latency", "gpu_memory", "calibration", NULL};

static bool in_list(const char *const *list, const char *s)
{
	for (; list && *list; list++)
		if (strcmp(*list, s) == 0)
			return true;
	return false;
}

/* ------------------------------------------------------------ gnuplot --- */
static bool find_gnuplot(char *out, size_t len)
{
	const char *env = getenv("SPSIM_GNUPLOT");
	if (env && *env) {
		if (strchr(env, '/'))
			return access(env, X_OK) == 0 && (size_t)snprintf(out, len, "%s", env) < len;
	}
	const char *name = env && *env ? env : "gnuplot";
	const char *path = getenv("PATH");
	if (!path)
		path = "/usr/bin:/bin";
	while (*path) {
		const char *colon = strchr(path, ':');
		size_t n = colon ? (size_t)(colon - path) : strlen(path);
		if ((size_t)snprintf(out, len, "%.*s/%s", (int)n, n ? path : ".", name) < len && access(out, X_OK) == 0)
			return true;
		path += n + (colon != NULL);
	}
	return false;
}

bool plan_plot_available(config_error *err)
{
	char path[CONFIG_PATH_MAX];
	if (find_gnuplot(path, sizeof path))
		return true;
	return config_fail(err, "gnuplot not found in PATH: figures are drawn with gnuplot (Debian: apt-get install "
				"gnuplot-nox; or set SPSIM_GNUPLOT to the program)");
}

/* Runs gnuplot on DIR/<name>.gp in DIR; its messages become the error on failure. */
static bool run_gnuplot(const char *dir, const char *name, config_error *err)
{
	char exe[CONFIG_PATH_MAX], script[128];
	if (!find_gnuplot(exe, sizeof exe))
		return plan_plot_available(err);
	snprintf(script, sizeof script, "%s.gp", name);
	int p[2];
	if (pipe(p) != 0)
		return config_fail(err, "pipe: %s", strerror(errno));
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		close(p[0]), close(p[1]);
		return config_fail(err, "fork: %s", strerror(errno));
	}
	if (pid == 0) {
		close(p[0]);
		dup2(p[1], STDOUT_FILENO);
		dup2(p[1], STDERR_FILENO);
		close(p[1]);
		if (chdir(dir) != 0)
			_exit(126);
		execl(exe, exe, script, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	char out[2048];
	size_t used = 0;
	ssize_t r;
	char sink[512];
	while ((r = read(p[0], used < sizeof out - 1 ? out + used : sink,
			 used < sizeof out - 1 ? sizeof out - 1 - used : sizeof sink)) != 0) {
		if (r < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (used < sizeof out - 1)
			used += (size_t)r;
	}
	out[used] = '\0';
	close(p[0]);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		for (char *c = out; *c; c++)
			if (*c == '\n')
				*c = ' ';
		return config_fail(err, "gnuplot failed on %s/%s (status %d): %.600s", dir, script,
				   WIFEXITED(status) ? WEXITSTATUS(status) : -1, out);
	}
	return true;
}

/* ---------------------------------------------------------- row helpers --- */
typedef struct rowset {
	const json_t **r;
	long n;
} rowset;

static bool rowset_add(rowset *s, const json_t *r, long cap)
{
	if (s->n >= cap)
		return false;
	s->r[s->n++] = r;
	return true;
}

/* The raw value of a field, for matching rows. */
static void raw(const json_t *row, const char *k, char *buf, size_t len)
{
	const json_t *v = json_object_get(row, k);
	if (json_is_string(v))
		snprintf(buf, len, "%s", json_string_value(v));
	else if (json_is_integer(v))
		snprintf(buf, len, "%lld", (long long)json_integer_value(v));
	else if (json_is_real(v))
		snprintf(buf, len, "%.17g", json_real_value(v));
	else if (json_is_boolean(v))
		snprintf(buf, len, "%s", json_is_true(v) ? "true" : "false");
	else
		snprintf(buf, len, "-");
}

static const char *seq_text(double s, char *buf, size_t len)
{
	long v = (long)s;
	if (v >= 1024 && v % 1024 == 0)
		snprintf(buf, len, "%ldK", v / 1024);
	else
		snprintf(buf, len, "%ld", v);
	return buf;
}

/* A field as a reader wants it in a legend or subtitle. */
static void pretty(const json_t *row, const char *k, char *buf, size_t len)
{
	double v = plan_row_num(row, k);
	const char *s = plan_row_str(row, k);
	char t[32];
	if (strcmp(k, "seq_len") == 0)
		snprintf(buf, len, "seq %s", seq_text(v, t, sizeof t));
	else if (strcmp(k, "micro_batch") == 0)
		snprintf(buf, len, "B=%g", v);
	else if (strcmp(k, "nodes") == 0)
		snprintf(buf, len, "%g node%s", v, v == 1 ? "" : "s");
	else if (strcmp(k, "gpus") == 0)
		snprintf(buf, len, "%g GPUs", v);
	else if (strcmp(k, "gpus_per_node") == 0)
		snprintf(buf, len, "%g GPUs/node", v);
	else if (strcmp(k, "nics") == 0)
		snprintf(buf, len, "%g NIC%s/node", v, v == 1 ? "" : "s");
	else if (strcmp(k, "nic_bandwidth") == 0)
		snprintf(buf, len, "%g Gb/s", v * 8 / 1e9);
	else if (strcmp(k, "intra_bandwidth") == 0)
		snprintf(buf, len, "intra %g GB/s", v / 1e9);
	else if (strcmp(k, "inter_latency") == 0)
		snprintf(buf, len, "net %g us", v * 1e6);
	else if (strcmp(k, "gpu_memory") == 0)
		snprintf(buf, len, "%g GiB", v / 1073741824.0);
	else if (strcmp(k, "zero_stage") == 0)
		snprintf(buf, len, "ZeRO-%g", v);
	else if (strcmp(k, "recompute") == 0)
		snprintf(buf, len, "recompute %s", s);
	else if (strcmp(k, "a2a") == 0)
		snprintf(buf, len, "%s all-to-all", s);
	else if (strcmp(k, "basp_uneven") == 0)
		snprintf(buf, len, "uneven %s", s);
	else if (strcmp(k, "grad_accum") == 0)
		snprintf(buf, len, "GA %g", v);
	else if (strcmp(k, "tile_mlp") == 0 || strcmp(k, "tile_logits") == 0)
		snprintf(buf, len, "%s tiles %g", k[5] == 'm' ? "MLP" : "logit", v);
	else if (strcmp(k, "memory_reserve") == 0)
		snprintf(buf, len, isfinite(v) ? "reserve %g GiB" : "reserve derived", v / 1073741824.0);
	else if (json_is_boolean(json_object_get(row, k)))
		snprintf(buf, len, "%s %s", k, v != 0 ? "on" : "off");
	else if (strstr(k, "_bucket"))
		snprintf(buf, len, "%s %g", k, v);
	else if (strcmp(k, "cp_comm_type") == 0 || strcmp(k, "impl") == 0 || strcmp(k, "zero3_prefetch") == 0)
		snprintf(buf, len, "%s %s", k, s);
	else if (strcmp(k, "what_if") == 0 && strcmp(s, "none") == 0)
		snprintf(buf, len, "no what-if");
	else if (strcmp(k, "calibration") == 0) {
		const char *b = strrchr(s, '/');
		snprintf(buf, len, "%s%s", s[0] ? "cal " : "uncalibrated", s[0] ? (b ? b + 1 : s) : "");
	} else
		snprintf(buf, len, "%s", s[0] ? s : "-");
	/* Titles go to gnuplot inside double quotes. */
	for (char *c = buf; *c; c++)
		if (*c == '"' || *c == '\\')
			*c = '\'';
}

/* How many distinct values field k takes in s. */
static int distinct(const rowset *s, const char *k)
{
	json_t *seen = json_object();
	char b[256];
	for (long i = 0; i < s->n; i++) {
		raw(s->r[i], k, b, sizeof b);
		json_object_set_new(seen, b, json_true());
	}
	int n = (int)json_object_size(seen);
	json_decref(seen);
	return n;
}

/* The key of a row over the fields in `fields` (NULL-terminated), skipping `except`. */
static void key_of(const json_t *row, const char *const *fields, const char *const *except, char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = '\0';
	for (; *fields; fields++) {
		if (in_list(except, *fields))
			continue;
		char b[256];
		raw(row, *fields, b, sizeof b);
		int w = snprintf(buf + used, len - used, "%s|", b);
		if (w < 0 || (size_t)w >= len - used)
			break;
		used += (size_t)w;
	}
}

/* --------------------------------------------------------------- figures --- */
typedef struct fig {
	const char *dir, *name;
	FILE *dat, *gp;
	char subtitle[512];
	bool any_nofit;
} fig;

/* "/" between dir and a file name, or nothing when dir already ends in one ("figures/"). */
static const char *dir_sep(const char *dir)
{
	size_t n = strlen(dir);
	return n && dir[n - 1] == '/' ? "" : "/";
}

/* DIR/NAME.EXT, with no doubled '/' when DIR ends in one. (The length is taken once: with
 * UndefinedBehaviorSanitizer's checks inlined, gcc otherwise sees a path where dir_sep's
 * strlen had a null argument and warns on the format.) */
static void fig_path(char *buf, size_t len, const char *dir, const char *name, const char *ext)
{
	size_t n = strlen(dir);
	snprintf(buf, len, "%.*s/%s.%s", (int)(n && dir[n - 1] == '/' ? n - 1 : n), dir, name, ext);
}

static bool fig_open(fig *f, const char *dir, const char *name, config_error *err)
{
	char path[CONFIG_PATH_MAX + 64];
	memset(f, 0, sizeof *f);
	f->dir = dir;
	f->name = name;
	fig_path(path, sizeof path, dir, name, "dat");
	f->dat = fopen(path, "w");
	fig_path(path, sizeof path, dir, name, "gp");
	f->gp = f->dat ? fopen(path, "w") : NULL;
	if (!f->dat || !f->gp) {
		if (f->dat)
			fclose(f->dat);
		return config_fail(err, "cannot write %s: %s", path, strerror(errno));
	}
	fprintf(f->gp,
		"# spsim figure '%s': data in %s.dat. Run `gnuplot %s.gp` in this directory to redraw.\n"
		"set terminal svg size %d,%d dynamic noenhanced font 'Helvetica,14' background rgb 'white'\n"
		"set output '%s.svg'\n"
		"set encoding utf8\n"
		"set grid lc rgb '#dddddd'\n"
		"set key below noenhanced height 1.5\n" /* room between the x label and the key */
		"set border 3\n"
		"set tics nomirror\n"
		"set linetype 1 lc rgb '#1f77b4' lw 2\nset linetype 2 lc rgb '#d62728' lw 2\n"
		"set linetype 3 lc rgb '#2ca02c' lw 2\nset linetype 4 lc rgb '#9467bd' lw 2\n"
		"set linetype 5 lc rgb '#ff7f0e' lw 2\nset linetype 6 lc rgb '#8c564b' lw 2\n"
		"set linetype 7 lc rgb '#e377c2' lw 2\nset linetype 8 lc rgb '#17becf' lw 2\n"
		"set linetype cycle 8\n",
		name, name, name, W_PX, H_PX, name);
	return true;
}

/* Writes the plot command (already in f->gp by the caller), the PNG and runs gnuplot. */
static bool fig_close(fig *f, FILE *log, int *written, config_error *err)
{
	fprintf(f->gp,
		"set terminal pngcairo size %d,%d noenhanced font 'Helvetica,11' background rgb 'white'\n"
		"set output '%s.png'\n"
		"replot\n"
		"unset output\n",
		W_PX, H_PX, f->name);
	bool ok = fclose(f->dat) == 0;
	ok = fclose(f->gp) == 0 && ok;
	if (!ok)
		return config_fail(err, "cannot write the files of figure %s in %s", f->name, f->dir);
	if (!run_gnuplot(f->dir, f->name, err))
		return false;
	if (log)
		fprintf(log, "figure: %s%s%s.svg, %s%s%s.png\n", f->dir, dir_sep(f->dir), f->name, f->dir, dir_sep(f->dir),
			f->name);
	(*written)++;
	return true;
}

/* Two title lines: what the figure shows, then what its rows share. */
static void fig_title(fig *f, const char *title, const char *what)
{
	/* The subtitle wraps after a comma when the next item would take a line past 84
	 * characters. */
	char sub[sizeof f->subtitle + 64];
	size_t k = 0, col = 0;
	for (const char *c = f->subtitle; *c && k + 4 < sizeof sub; c++) {
		sub[k++] = *c;
		col++;
		const char *next = *c == ',' ? strchr(c + 1, ',') : NULL;
		size_t item = *c != ',' ? 0 : next ? (size_t)(next - c) : strlen(c);
		if (*c == ',' && c[1] == ' ' && col + item > 84) {
			sub[k++] = '\\', sub[k++] = 'n';
			c++;
			col = 0;
		}
	}
	sub[k] = '\0';
	fprintf(f->gp, "set title \"%s%s%s%s%s\" font ',15'\n", title && *title ? title : "", title && *title ? ": " : "",
		what, sub[0] ? "\\n" : "", sub);
}

static void skip(FILE *log, const char *name, const char *why)
{
	if (log)
		fprintf(log, "figure %s skipped: %s\n", name, why);
}

/* Whether every value of field `by` comes with one value of field k in s. */
static bool one_value_per(const rowset *s, const char *by, const char *k)
{
	json_t *seen = json_object();
	bool same = true;
	char b[256], v[256];
	for (long i = 0; i < s->n && same; i++) {
		raw(s->r[i], by, b, sizeof b);
		raw(s->r[i], k, v, sizeof v);
		const char *old = json_string_value(json_object_get(seen, b));
		if (old)
			same = strcmp(old, v) == 0;
		else
			json_object_set_new(seen, b, json_string(v));
	}
	json_decref(seen);
	return same;
}

/* A hardware field that follows the platform (each platform has one value of it, as
 * loaded): naming the platform says it all. An override that varies within a platform
 * is not derived. */
static bool derived(const rowset *s, const char *k)
{
	static const char *const sub[] = {"gpus_per_node", "nics", "nic_bandwidth", "intra_bandwidth", "inter_latency",
					  "gpu_memory", NULL};
	return in_list(sub, k) && distinct(s, "platform") >= 2 && one_value_per(s, "platform", k);
}

/* A field that follows the strategy label (every label has one value of it: cp_comm_type,
 * which the strategy spec sets): grouping by label already separates its values, so it is
 * not a dimension of its own; pinning it would drop strategies from the figure. */
static bool follows_label(const rowset *s, const char *k)
{
	return distinct(s, "label") >= 2 && one_value_per(s, "label", k);
}

/* The fields that vary in s (among dims, minus except and derived ones) into out;
 * returns how many. */
static int varying(const rowset *s, const char *const *except, const char **out)
{
	int n = 0;
	for (int i = 0; dims[i]; i++)
		if (!in_list(except, dims[i]) && distinct(s, dims[i]) > 1 && !derived(s, dims[i]) &&
		    !follows_label(s, dims[i]))
			out[n++] = dims[i];
	out[n] = NULL;
	return n;
}

/* The value to pin field k at: the one that keeps the most strategy labels in the
 * figure, then the largest number (the longest sequence, the largest micro-batch, the
 * most GPUs: where strategies differ most), or the first name. Returns a row with it. */
static const json_t *pin_value(const rowset *s, const char *k)
{
	const json_t *best = s->r[0];
	int best_labels = -1;
	char want[256], b[256];
	for (long i = 0; i < s->n; i++) {
		raw(s->r[i], k, want, sizeof want);
		json_t *labels = json_object();
		for (long j = 0; j < s->n; j++) {
			raw(s->r[j], k, b, sizeof b);
			if (strcmp(b, want) == 0)
				json_object_set_new(labels, plan_row_str(s->r[j], "label"), json_true());
		}
		int nl = (int)json_object_size(labels);
		json_decref(labels);
		bool numeric = json_is_number(json_object_get(s->r[i], k));
		if (nl > best_labels || (nl == best_labels && numeric && plan_row_num(s->r[i], k) > plan_row_num(best, k))) {
			best = s->r[i];
			best_labels = nl;
		}
	}
	return best;
}

/* Keeps the rows of s whose field k equals row0's. */
static void pin(rowset *s, const char *k, const json_t *row0)
{
	char want[256], b[256];
	raw(row0, k, want, sizeof want);
	long m = 0;
	for (long i = 0; i < s->n; i++) {
		raw(s->r[i], k, b, sizeof b);
		if (strcmp(b, want) == 0)
			s->r[m++] = s->r[i];
	}
	s->n = m;
}

static void append(char *buf, size_t len, const char *text)
{
	size_t u = strlen(buf);
	if (u < len)
		snprintf(buf + u, len - u, "%s%s", u ? ", " : "", text);
}

/* Pins fields (in pin_order, never those in keep) until the combinations of the
 * varying fields plus the labels number at most max. Notes pinned and constant fields in
 * the subtitle. `group_except` are fields that do not make groups (the x axis). */
static void settle(fig *f, rowset *s, const char *const *group_except, const char *const *keep, int max,
		   bool with_labels)
{
	for (;;) {
		const char *v[MAX_DIMS + 1];
		int nv = varying(s, group_except, v);
		json_t *combos = json_object();
		for (long i = 0; i < s->n; i++) {
			char k[2048];
			key_of(s->r[i], v, NULL, k, sizeof k);
			if (with_labels)
				strncat(k, plan_row_str(s->r[i], "label"), sizeof k - strlen(k) - 1);
			json_object_set_new(combos, k, json_true());
		}
		int n = (int)json_object_size(combos);
		json_decref(combos);
		if (n <= max || nv == 0)
			break;
		const char *victim = NULL;
		for (int i = 0; pin_order[i] && !victim; i++)
			if (!in_list(keep, pin_order[i]) && in_list(v, pin_order[i]))
				victim = pin_order[i];
		if (!victim)
			break;
		const json_t *at = pin_value(s, victim);
		char t[128], note[160];
		pretty(at, victim, t, sizeof t);
		snprintf(note, sizeof note, "at %s", t);
		append(f->subtitle, sizeof f->subtitle, note);
		pin(s, victim, at);
	}
	/* What all the rows share, for the reader. */
	static const char *const tell[] = {"model", "platform", "gpus", "seq_len", "micro_batch", "zero_stage",
					   "recompute", "engine", NULL};
	for (int i = 0; tell[i] && s->n; i++)
		if (!in_list(group_except, tell[i]) && distinct(s, tell[i]) == 1) {
			char t[128];
			pretty(s->r[0], tell[i], t, sizeof t);
			if (!strstr(f->subtitle, t))
				append(f->subtitle, sizeof f->subtitle, t);
		}
}

/* A series title: the label and the varying fields other than the x axis. */
static void series_title(const json_t *row, const char *const *v, bool with_label, char *buf, size_t len)
{
	buf[0] = '\0';
	if (with_label)
		append(buf, len, plan_row_str(row, "label"));
	for (; *v; v++) {
		char t[128];
		pretty(row, *v, t, sizeof t);
		append(buf, len, t);
	}
	if (!buf[0])
		snprintf(buf, len, "all");
}

typedef enum ymode { Y_SPEEDUP, Y_TOKENS, Y_MEMORY } ymode;

typedef struct curve_spec {
	const char *name, *title, *xfield, *xlabel, *ylabel;
	ymode y;
	const char *const *collapse; /* fields that make no curves of their own (first row wins) */
} curve_spec;

typedef struct pt {
	double x, y;
	bool fits;
} pt;

static int by_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static int by_x(const void *a, const void *b)
{
	const pt *p = a, *q = b;
	return (p->x > q->x) - (p->x < q->x);
}

/* Curves of y against an x field: speedup over the baseline label, tokens/s, or memory. */
static bool curve_figure(const curve_spec *cs, const rowset *all, const char *baseline, const char *title,
			 const char *dir, FILE *log, int *written, config_error *err)
{
	if (distinct(all, cs->xfield) < 2) {
		char why[128];
		snprintf(why, sizeof why, "%s does not vary", cs->xfield);
		skip(log, cs->name, why);
		return true;
	}
	rowset s = {malloc((size_t)(all->n ? all->n : 1) * sizeof *s.r), 0};
	if (!s.r)
		return config_fail(err, "out of memory");
	json_t *base = json_object(); /* configuration key -> baseline row */
	if (cs->y == Y_SPEEDUP) {
		for (long i = 0; i < all->n; i++)
			if (strcmp(plan_row_str(all->r[i], "label"), baseline) == 0) {
				char k[2048];
				key_of(all->r[i], dims, NULL, k, sizeof k);
				json_object_set(base, k, (json_t *)all->r[i]);
			}
		for (long i = 0; i < all->n; i++) {
			char k[2048];
			key_of(all->r[i], dims, NULL, k, sizeof k);
			if (strcmp(plan_row_str(all->r[i], "label"), baseline) != 0 && json_object_get(base, k))
				rowset_add(&s, all->r[i], all->n);
		}
		if (s.n == 0) {
			json_decref(base);
			free(s.r);
			skip(log, cs->name, "no strategy other than the baseline has a matching baseline row");
			return true;
		}
	} else {
		for (long i = 0; i < all->n; i++)
			rowset_add(&s, all->r[i], all->n);
	}
	fig f;
	if (!fig_open(&f, dir, cs->name, err)) {
		json_decref(base);
		free(s.r);
		return false;
	}
	/* Fields that make no curves: the x axis, derived fields, and the collapsed ones. */
	const char *except[MAX_DIMS + 4];
	int ne = 0;
	except[ne++] = cs->xfield;
	if (strcmp(cs->xfield, "gpus") == 0)
		except[ne++] = "nodes";
	for (int i = 0; cs->collapse && cs->collapse[i]; i++)
		except[ne++] = cs->collapse[i];
	except[ne] = NULL;
	settle(&f, &s, except, NULL, MAX_SERIES, true);
	const char *v[MAX_DIMS + 1];
	varying(&s, except, v);
	bool with_label = distinct(&s, "label") > 1 || cs->y == Y_SPEEDUP;

	/* Group rows into series (first-appearance order), points sorted by x. */
	json_t *index = json_object();
	int n_series = 0;
	char titles[MAX_SERIES * 4][256], colour[MAX_SERIES * 4][8];
	int style[MAX_SERIES * 4];
	pt *pts = malloc((size_t)(s.n ? s.n : 1) * sizeof *pts);
	int *ser = malloc((size_t)(s.n ? s.n : 1) * sizeof *ser);
	double ymax = 0, ymin = INFINITY;
	for (long i = 0; pts && ser && i < s.n; i++) {
		const json_t *r = s.r[i];
		char k[2048];
		key_of(r, v, NULL, k, sizeof k);
		strncat(k, plan_row_str(r, "label"), sizeof k - strlen(k) - 1);
		json_t *id = json_object_get(index, k);
		if (!id) {
			if (n_series >= MAX_SERIES * 4)
				continue;
			series_title(r, v, with_label, titles[n_series], sizeof titles[n_series]);
			snprintf(colour[n_series], sizeof colour[n_series], "%s", strategy_colour(plan_row_str(r, "label")));
			/* the how-many-th series of this strategy: its dash and marker */
			style[n_series] = 0;
			for (int q = 0; q < n_series; q++)
				style[n_series] += strcmp(colour[q], colour[n_series]) == 0;
			json_object_set_new(index, k, id = json_integer(n_series++));
		}
		ser[i] = (int)json_integer_value(id);
		pts[i].x = plan_row_num(r, cs->xfield);
		pts[i].fits = json_is_true(json_object_get(r, "fits"));
		if (cs->y == Y_SPEEDUP) {
			char bk[2048];
			key_of(r, dims, NULL, bk, sizeof bk);
			const json_t *b = json_object_get(base, bk);
			pts[i].y = plan_row_num(r, "tokens_per_s") / plan_row_num(b, "tokens_per_s");
			pts[i].fits = pts[i].fits && json_is_true(json_object_get(b, "fits"));
		} else if (cs->y == Y_TOKENS) {
			pts[i].y = plan_row_num(r, "tokens_per_s");
		} else {
			pts[i].y = plan_row_num(r, "mem_peak") / 1073741824.0;
		}
		if (isfinite(pts[i].y) && pts[i].y > ymax)
			ymax = pts[i].y;
		if (isfinite(pts[i].y) && pts[i].y < ymin)
			ymin = pts[i].y;
	}
	json_decref(index);
	if (!pts || !ser) {
		free(pts), free(ser), free(s.r), json_decref(base);
		fclose(f.dat), fclose(f.gp);
		return config_fail(err, "out of memory");
	}
	/* Data: one block per series. */
	pt *buf = malloc((size_t)(s.n ? s.n : 1) * sizeof *buf);
	for (int k = 0; buf && k < n_series; k++) {
		long m = 0;
		for (long i = 0; i < s.n; i++)
			if (ser[i] == k && isfinite(pts[i].y)) {
				bool dup = false;
				for (long j = 0; j < m; j++)
					dup |= buf[j].x == pts[i].x;
				if (!dup)
					buf[m++] = pts[i];
			}
		qsort(buf, (size_t)m, sizeof *buf, by_x);
		fprintf(f.dat, "# %s\n", titles[k]);
		const int *shape = marker_shapes[(style[k] + style[k] / N_SHAPES) % N_SHAPES];
		for (long j = 0; j < m; j++) {
			fprintf(f.dat, "%.10g %.10g %d\n", buf[j].x, buf[j].y, buf[j].fits ? shape[0] : shape[1]);
			f.any_nofit |= !buf[j].fits;
		}
		fprintf(f.dat, "\n\n");
	}
	free(buf);
	/* Series of one strategy: its colour from darker to lighter, so that they stay told
	 * apart by hue family (the strategy), shade, dash and marker together. */
	char shaded[MAX_SERIES * 4][8];
	for (int k = 0; k < n_series; k++) {
		int same = 0;
		for (int q = 0; q < n_series; q++)
			same += strcmp(colour[q], colour[k]) == 0;
		double t = same > 1 ? -0.35 + 0.75 * style[k] / (same - 1) : 0; /* < 0 darker, > 0 lighter */
		long rgb = strtol(colour[k] + 1, NULL, 16);
		int ch[3] = {(int)(rgb >> 16 & 255), (int)(rgb >> 8 & 255), (int)(rgb & 255)};
		for (int c = 0; c < 3; c++)
			ch[c] = (int)lround(t < 0 ? ch[c] * (1 + t) : ch[c] + (255 - ch[c]) * t);
		snprintf(shaded[k], sizeof shaded[k], "#%02x%02x%02x", ch[0] & 255, ch[1] & 255, ch[2] & 255);
	}
	/* Script. */
	fig_title(&f, title, cs->title);
	fprintf(f.gp, "set xlabel \"%s\"\nset ylabel \"%s\"\n", cs->xlabel, cs->ylabel);
	/* x axis: log2 with a tic at every value present. */
	double xs[64];
	int nx = 0;
	for (long i = 0; i < s.n && nx < 64; i++) {
		double x = plan_row_num(s.r[i], cs->xfield);
		bool seen = false;
		for (int j = 0; j < nx; j++)
			seen |= xs[j] == x;
		if (!seen)
			xs[nx++] = x;
	}
	qsort(xs, (size_t)nx, sizeof *xs, by_double);
	fprintf(f.gp, "set logscale x 2\nset xtics (");
	for (int j = 0; j < nx; j++) {
		char t[32];
		if (strcmp(cs->xfield, "seq_len") == 0)
			seq_text(xs[j], t, sizeof t);
		else
			snprintf(t, sizeof t, "%g", xs[j]);
		fprintf(f.gp, "%s\"%s\" %.10g", j ? ", " : "", t, xs[j]);
	}
	fprintf(f.gp, ")\nset xrange [%.10g:%.10g]\n", xs[0] / 1.25, xs[nx - 1] * 1.25);
	/* One capacity line per distinct GPU memory. */
	double caps[8];
	int nc = 0;
	for (long i = 0; cs->y == Y_MEMORY && i < s.n && nc < 8; i++) {
		double c = plan_row_num(s.r[i], "mem_capacity") / 1073741824.0;
		bool seen = false;
		for (int j = 0; j < nc; j++)
			seen |= caps[j] == c;
		if (!seen && isfinite(c)) {
			caps[nc++] = c;
			if (c > ymax)
				ymax = c;
		}
	}
	if (cs->y == Y_TOKENS)
		fprintf(f.gp, "set logscale y 10\nset format y '%%.0s%%c'\nset mytics 10\n");
	else if (cs->y == Y_SPEEDUP)
		fprintf(f.gp, "set yrange [%.6g:%.6g]\n", (ymin < 1 ? ymin : 1) * 0.95, (ymax > 1 ? ymax : 1) * 1.05);
	else
		fprintf(f.gp, "set yrange [0:%.6g]\n", ymax > 0 ? ymax * 1.15 : 1);
	if (f.any_nofit)
		fprintf(f.gp, "set label 2 \"open markers: does not fit in GPU memory\" at graph 0, graph 1.02 "
			      "font ',10' tc rgb '#666666'\n");
	fprintf(f.gp, "plot ");
	bool first = true;
	if (cs->y == Y_SPEEDUP) {
		fprintf(f.gp, "1 with lines dt 3 lw 2 lc rgb '" BASELINE_GREY "' title \"%s (baseline)\"", baseline);
		first = false;
	}
	for (int j = 0; j < nc; j++) {
		fprintf(f.gp, "%s%.10g with lines dt 2 lw 2 lc rgb '" LIMIT_GREY "' title \"capacity %.4g GiB\"",
			first ? "" : ", ", caps[j], caps[j]);
		first = false;
	}
	for (int k = 0; k < n_series; k++) {
		fprintf(f.gp, "%s\\\n  '%s.dat' index %d using 1:2:3 with linespoints pt variable ps 1.3 lw 2 dt %d "
			      "lc rgb '%s' title \"%s\"",
			first ? "" : ", ", cs->name, k, 1 + style[k] % 5, shaded[k], titles[k]);
		first = false;
	}
	fprintf(f.gp, "\n");
	free(pts), free(ser), free(s.r);
	json_decref(base);
	return fig_close(&f, log, written, err);
}

typedef enum bar_mode { BARS_BREAKDOWN, BARS_TOKENS } bar_mode;

/* Clustered bars: a group per combination of the varying fields, a bar per label. */
static bool bar_figure(const char *name, const char *what, bar_mode mode, const rowset *all, const char *const *only_if,
		       const char *title, const char *dir, FILE *log, int *written, config_error *err)
{
	if (only_if) {
		bool any = false;
		for (int i = 0; only_if[i]; i++)
			any |= distinct(all, only_if[i]) > 1;
		if (!any) {
			skip(log, name, "no hardware field varies");
			return true;
		}
	}
	rowset s = {malloc((size_t)(all->n ? all->n : 1) * sizeof *s.r), 0};
	if (!s.r)
		return config_fail(err, "out of memory");
	for (long i = 0; i < all->n; i++)
		rowset_add(&s, all->r[i], all->n);
	fig f;
	if (!fig_open(&f, dir, name, err)) {
		free(s.r);
		return false;
	}
	static const char *const none[] = {"nodes", NULL}; /* gpus tells it */
	settle(&f, &s, none, only_if, MAX_BARS, true);
	const char *v[MAX_DIMS + 1];
	varying(&s, none, v);
	/* Labels in first-appearance order; groups likewise. */
	json_t *labels = json_object(), *groups = json_object();
	char lname[16][CONFIG_NAME_MAX];
	int nl = 0, ng = 0;
	for (long i = 0; i < s.n; i++) {
		const char *l = plan_row_str(s.r[i], "label");
		if (!json_object_get(labels, l) && nl < 16) {
			snprintf(lname[nl], sizeof lname[nl], "%s", l);
			json_object_set_new(labels, l, json_integer(nl++));
		}
		char k[2048];
		key_of(s.r[i], v, NULL, k, sizeof k);
		if (!json_object_get(groups, k))
			json_object_set_new(groups, k, json_integer(ng++));
	}
	/* Strategies that train different tokens per step in one group (ulysses:sp=N/B) have
	 * step times that do not compare: then every bar is scaled to a million tokens. */
	bool same_tokens = true;
	for (long i = 0; i < s.n; i++)
		for (long j = 0; j < i; j++) {
			char ki[2048], kj[2048];
			key_of(s.r[i], v, NULL, ki, sizeof ki);
			key_of(s.r[j], v, NULL, kj, sizeof kj);
			double ti = plan_row_num(s.r[i], "tokens_per_s") * plan_row_num(s.r[i], "step_time_s"),
			       tj = plan_row_num(s.r[j], "tokens_per_s") * plan_row_num(s.r[j], "step_time_s");
			if (strcmp(ki, kj) == 0 && fabs(ti - tj) > 1e-6 * tj)
				same_tokens = false;
		}
	if (!same_tokens && mode == BARS_BREAKDOWN)
		append(f.subtitle, sizeof f.subtitle, "per million tokens (the strategies train different tokens per step)");
	/* Data: x position, segments or value, tick label. */
	fprintf(f.dat, "# x\tcompute\tcompute+sp\tstep\ttokens_per_s\tlabel\tlabel_index\tcolour\tfits\n");
	double ymax = 0;
	char (*gtext)[256] = calloc((size_t)(ng ? ng : 1), sizeof *gtext);
	for (long i = 0; gtext && i < s.n; i++) {
		const json_t *r = s.r[i];
		json_t *li = json_object_get(labels, plan_row_str(r, "label"));
		if (!li)
			continue;
		char k[2048];
		key_of(r, v, NULL, k, sizeof k);
		int g = (int)json_integer_value(json_object_get(groups, k));
		if (!gtext[g][0])
			for (int j = 0; v[j]; j++) {
				char t[128];
				pretty(r, v[j], t, sizeof t);
				append(gtext[g], sizeof gtext[g], t);
			}
		double x = g * (nl + 1) + (double)json_integer_value(li);
		double c = plan_row_num(r, "compute_s"), sp = plan_row_num(r, "sp_comm_exposed_s"),
		       z = plan_row_num(r, "zero_comm_exposed_s"), tps = plan_row_num(r, "tokens_per_s");
		if (!same_tokens) {
			double scale = 1e6 / (tps * plan_row_num(r, "step_time_s"));
			c *= scale, sp *= scale, z *= scale;
		}
		double top = mode == BARS_BREAKDOWN ? c + sp + z : tps;
		if (top > ymax)
			ymax = top;
		fprintf(f.dat, "%g\t%.10g\t%.10g\t%.10g\t%.10g\t\"%s\"\t%d\t%ld\t%d\n", x, c, c + sp, c + sp + z, tps,
			plan_row_str(r, "label"), 1 + (int)json_integer_value(li),
			strtol(strategy_colour(plan_row_str(r, "label")) + 1, NULL, 16), json_is_true(json_object_get(r, "fits")));
		f.any_nofit |= !json_is_true(json_object_get(r, "fits"));
	}
	json_decref(labels);
	json_decref(groups);
	if (!gtext) {
		free(s.r);
		fclose(f.dat), fclose(f.gp);
		return config_fail(err, "out of memory");
	}
	fig_title(&f, title, what);
	fprintf(f.gp, "set style fill solid 0.9 border rgb '#333333'\nset boxwidth 0.8\nset xrange [-0.8:%g]\n"
		      "set yrange [0:%.6g]\nset format y '%%.3g'\n",
		ng * (nl + 1) - 1.2, ymax * 1.12);
	if (mode == BARS_BREAKDOWN) {
		/* A tic per bar names its strategy; the group is written once below. */
		fprintf(f.gp, "set xtics rotate by -30 font ',10' noenhanced\nset bmargin %d\n", ng > 1 || gtext[0][0] ? 10 : 7);
		for (int g = 0; g < ng; g++)
			if (gtext[g][0])
				fprintf(f.gp, "set label \"%s\" at first %g, graph -0.2 center font ',11' noenhanced\n", gtext[g],
					g * (nl + 1) + (nl - 1) / 2.0);
		fprintf(f.gp, "set ylabel \"%s\"\n", same_tokens ? "time per optimizer step (s)" : "time per million tokens (s)");
		/* Each bar in its strategy's colour; the parts of the step by fill: compute solid,
		 * the SP all-to-all hatched, exposed ZeRO communication pale. */
		fprintf(f.gp,
			"plot '%s.dat' using 1:4:8:xtic(6) with boxes fs solid 0.3 lc rgb variable notitle, \\\n"
			"     '' using 1:3:8 with boxes fs pattern 4 lc rgb variable notitle, \\\n"
			"     '' using 1:2:8 with boxes fs solid 0.9 lc rgb variable notitle, \\\n"
			"     keyentry with boxes fs solid 0.9 lc rgb '#777777' title \"compute\", \\\n"
			"     keyentry with boxes fs pattern 4 lc rgb '#777777' title \"SP all-to-all\", \\\n"
			"     keyentry with boxes fs solid 0.3 lc rgb '#777777' title \"ZeRO comm (exposed)\"",
			name);
		if (f.any_nofit)
			fprintf(f.gp, ", \\\n     '' using 1:($9 == 0 ? $4 : 1/0):(\"no fit\") with labels offset 0,0.7 "
				      "font ',9' tc rgb '" LIMIT_GREY "' notitle");
		fprintf(f.gp, "\n");
	} else {
		/* A tic per group; colours (and the key) tell the strategies apart. */
		fprintf(f.gp, "set ylabel \"tokens/s\"\nset format y '%%.0s%%c'\nset bmargin 8\nset xtics rotate by -20 "
			      "font ',10' noenhanced (");
		for (int g = 0; g < ng; g++)
			fprintf(f.gp, "%s\"%s\" %g", g ? ", " : "", gtext[g], g * (nl + 1) + (nl - 1) / 2.0);
		fprintf(f.gp, ")\nplot ");
		for (int l = 0; l < nl; l++)
			fprintf(f.gp, "%s'%s.dat' using ($7 == %d ? $1 : 1/0):5 with boxes lc rgb '%s' title \"%s\"",
				l ? ", " : "", name, l + 1, strategy_colour(lname[l]), lname[l]);
		if (f.any_nofit)
			fprintf(f.gp, ", '' using 1:($9 == 0 ? $5 : 1/0):(\"no fit\") with labels offset 0,0.7 font ',9' "
				      "tc rgb '" LIMIT_GREY "' notitle");
		fprintf(f.gp, "\n");
	}
	free(gtext);
	free(s.r);
	return fig_close(&f, log, written, err);
}

static bool plot_rowset(const rowset *ok, const char *baseline, const char *title, const char *dir, FILE *log,
			int *written, const char *suffix, config_error *err)
{
	/* Memory depends on none of these: they would only repeat a curve. */
	static const char *const mem_collapse[] = {"engine", "nic_bandwidth", "intra_bandwidth", "inter_latency", "nics",
						   "calibration", NULL};
	char t1[160], t2[160], t3[160], t4[160];
	snprintf(t1, sizeof t1, "speedup vs micro-batch%s", suffix);
	snprintf(t2, sizeof t2, "speedup vs sequence length%s", suffix);
	snprintf(t3, sizeof t3, "scaling vs GPU count%s", suffix);
	snprintf(t4, sizeof t4, "memory per GPU vs sequence length%s", suffix);
	char ylab[128];
	snprintf(ylab, sizeof ylab, "speedup over %s (tokens/s ratio)", baseline);
	curve_spec curves[] = {
		{"speedup-vs-micro-batch", t1, "micro_batch", "micro-batch B (sequences per SP domain)", ylab, Y_SPEEDUP, NULL},
		{"speedup-vs-seq-len", t2, "seq_len", "sequence length (tokens)", ylab, Y_SPEEDUP, NULL},
		{"scaling-vs-gpus", t3, "gpus", "GPUs", "tokens/s", Y_TOKENS, NULL},
		{"memory-vs-seq-len", t4, "seq_len", "sequence length (tokens)", "peak memory per GPU (GiB)", Y_MEMORY,
		 mem_collapse},
	};
	for (size_t i = 0; i < sizeof curves / sizeof *curves; i++)
		if (!curve_figure(&curves[i], ok, baseline, title, dir, log, written, err))
			return false;
	char b1[160], b2[160];
	snprintf(b1, sizeof b1, "step time breakdown%s", suffix);
	snprintf(b2, sizeof b2, "throughput per hardware variant%s", suffix);
	return bar_figure("breakdown", b1, BARS_BREAKDOWN, ok, NULL, title, dir, log, written, err) &&
	       bar_figure("throughput", b2, BARS_TOKENS, ok, hw_dims, title, dir, log, written, err);
}

/* The figures' folder, with the folders above it (`--plot rows/figures` beside a sweep's
 * `-o rows` that the sweep creates in the same run). */
static bool ensure_dir(const char *dir, config_error *err)
{
	struct stat st;
	if (stat(dir, &st) == 0)
		return S_ISDIR(st.st_mode) || config_fail(err, "%s exists and is not a directory", dir);
	return plan_mkdir_p(dir, err);
}

bool plan_plot_rows(const json_t *rows, const char *baseline, const char *title, const char *dir, FILE *log,
		    int *written, config_error *err)
{
	*written = 0;
	if (!plan_plot_available(err) || !ensure_dir(dir, err))
		return false;
	size_t n = json_array_size(rows);
	rowset ok = {malloc((n ? n : 1) * sizeof *ok.r), 0};
	if (!ok.r)
		return config_fail(err, "out of memory");
	for (size_t i = 0; i < n; i++) {
		const json_t *r = json_array_get(rows, i);
		if (strcmp(plan_row_str(r, "status"), "ok") == 0 && isfinite(plan_row_num(r, "tokens_per_s")))
			rowset_add(&ok, r, (long)n);
	}
	bool res = true;
	if (ok.n == 0)
		res = config_fail(err, "no row with status ok to draw");
	else
		res = plot_rowset(&ok, baseline && *baseline ? baseline : plan_row_str(ok.r[0], "label"), title, dir, log,
				  written, "", err);
	free(ok.r);
	return res;
}

/* -------------------------------------------------------------- compare --- */
/* Runs one job on the analytic engine into a row (status ok or invalid). */
static json_t *analytic_row(const report_run *r, const config_platform *p, config_job job, long index)
{
	json_t *row = plan_row_new(index, "");
	plan_strategy st;
	config_error err = {""};
	const char *label = r->label ? r->label : workload_strategy_name(r->job->strategy);
	bool ok = plan_strategy_parse(label, &st, &err) && plan_strategy_apply(&st, &job, &err) &&
		  workload_check(r->model, p, &job, &err);
	plan_row_set_job(row, r->model, p, &job, label, "analytic", r->calibration);
	if (!ok) {
		plan_row_set_status(row, "invalid", err.msg);
		return row;
	}
	plan_sim *sim = malloc(sizeof *sim);
	if (!sim)
		plan_row_set_status(row, "error", "out of memory");
	else if (plan_simulate(r->model, p, &job, engine_find("analytic"), (engine_options){0}, sim, &err)) {
		plan_row_set_sim(row, sim);
		plan_sim_finish(sim);
	} else
		plan_row_set_status(row, "error", err.msg);
	free(sim);
	return row;
}

bool plan_plot_compare(const report_run *runs, int n, const char *dir, FILE *log, config_error *err)
{
	if (n <= 0)
		return config_fail(err, "nothing to draw");
	if (!plan_plot_available(err) || !ensure_dir(dir, err))
		return false;
	int written = 0;
	const char *baseline = runs[0].label ? runs[0].label : workload_strategy_name(runs[0].job->strategy);
	char title[160];
	title[0] = '\0'; /* the subtitle names the model and platform */
	/* The runs themselves, on whatever engine ran them. */
	json_t *mine = json_array();
	for (int i = 0; i < n; i++)
		json_array_append_new(mine, plan_row_from_run(&runs[i], i));
	rowset rs = {malloc((size_t)n * sizeof *rs.r), 0};
	if (!rs.r) {
		json_decref(mine);
		return config_fail(err, "out of memory");
	}
	for (int i = 0; i < n; i++)
		rowset_add(&rs, json_array_get(mine, (size_t)i), n);
	bool ok = bar_figure("breakdown", "step time breakdown", BARS_BREAKDOWN, &rs, NULL, title, dir, log, &written, err);
	free(rs.r);
	json_decref(mine);
	if (!ok)
		return false;

	/* Around the job, on the analytic engine: micro-batch, sequence length, node count. */
	json_t *ctx = json_array();
	const config_job *j0 = runs[0].job;
	const config_platform *p0 = runs[0].platform;
	bool all_gpus = j0->gpus == config_platform_gpus(p0);
	long idx = 0;
	for (int i = 0; i < n; i++) {
		config_job job = *runs[i].job;
		for (int b = 1; b <= 64; b *= 2) {
			job.micro_batch = b;
			json_array_append_new(ctx, analytic_row(&runs[i], p0, job, idx++));
		}
		job = *runs[i].job;
		for (int k = -3; k <= 2; k++) {
			job.seq_len = k < 0 ? j0->seq_len >> -k : j0->seq_len << k;
			if (job.seq_len >= 512)
				json_array_append_new(ctx, analytic_row(&runs[i], p0, job, idx++));
		}
		for (int nodes = 1; nodes <= 64 && nodes <= 8 * p0->nodes; nodes *= 2) {
			config_platform p = *p0;
			p.nodes = nodes;
			job = *runs[i].job;
			job.gpus = all_gpus ? config_platform_gpus(&p) : j0->gpus;
			if (job.gpus > config_platform_gpus(&p))
				continue;
			json_array_append_new(ctx, analytic_row(&runs[i], &p, job, idx++));
		}
	}
	size_t m = json_array_size(ctx);
	rowset all = {malloc((m ? m : 1) * sizeof *all.r), 0};
	if (!all.r) {
		json_decref(ctx);
		return config_fail(err, "out of memory");
	}
	/* Three families of rows, one varying field each: keep each family apart. */
	for (int fam = 0; ok && fam < 3; fam++) {
		all.n = 0;
		for (size_t i = 0; i < m; i++) {
			const json_t *r = json_array_get(ctx, i);
			if (strcmp(plan_row_str(r, "status"), "ok") != 0)
				continue;
			/* A row belongs to the family whose field is the only one off the job's. */
			bool mb = plan_row_num(r, "micro_batch") != j0->micro_batch, sq = plan_row_num(r, "seq_len") != j0->seq_len,
			     gp = plan_row_num(r, "nodes") != p0->nodes;
			bool base = !mb && !sq && !gp;
			bool in = base || (fam == 0 && mb && !sq && !gp) || (fam == 1 && sq && !mb && !gp) ||
				  (fam == 2 && gp && !mb && !sq);
			if (in)
				rowset_add(&all, r, (long)m);
		}
		static const char *const mem_collapse[] = {"engine", NULL};
		char ylab[128];
		snprintf(ylab, sizeof ylab, "speedup over %s (tokens/s ratio)", baseline);
		curve_spec cs[3][2] = {
			{{"speedup-vs-micro-batch", "speedup vs micro-batch (analytic)", "micro_batch",
			  "micro-batch B (sequences per SP domain)", ylab, Y_SPEEDUP, NULL},
			 {NULL, NULL, NULL, NULL, NULL, Y_SPEEDUP, NULL}},
			{{"speedup-vs-seq-len", "speedup vs sequence length (analytic)", "seq_len", "sequence length (tokens)",
			  ylab, Y_SPEEDUP, NULL},
			 {"memory-vs-seq-len", "memory per GPU vs sequence length", "seq_len", "sequence length (tokens)",
			  "peak memory per GPU (GiB)", Y_MEMORY, mem_collapse}},
			{{"scaling-vs-gpus", "scaling vs GPU count (analytic)", "gpus", "GPUs", "tokens/s", Y_TOKENS, NULL},
			 {NULL, NULL, NULL, NULL, NULL, Y_SPEEDUP, NULL}},
		};
		for (int c = 0; ok && c < 2; c++)
			if (cs[fam][c].name)
				ok = curve_figure(&cs[fam][c], &all, baseline, title, dir, log, &written, err);
	}
	free(all.r);
	json_decref(ctx);
	if (ok && log)
		fprintf(log, "%d figures in %s\n", written, dir);
	return ok;
}
