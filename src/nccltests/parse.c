/* nccltests: reader for real nccl-tests logs.
 *
 * What a log looks like (nccl-tests src/common.cu):
 *
 *   # nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 ...
 *   #
 *   # Using devices
 *   #  Rank  0 Group  0 Pid  12345 on     node-a device  0 [0x07] NVIDIA A100-SXM4-40GB
 *   ...
 *   #                                                   out-of-place          in-place
 *   #       size         count      type   redop    root     time   algbw   busbw #wrong ...
 *   #        (B)    (elements)                               (us)  (GB/s)  (GB/s)  ...
 *          8             2     float     sum      -1    10.52    0.00    0.00      0 ...
 *   # Out of bounds values : 0 OK
 *   # Avg bus bandwidth    : 42.1
 *
 * Variations seen in the wild and accepted here: MPI/Slurm output prefixes
 * ("[1,0]<stdout>:", "0: "), indentation, CRLF line ends, NCCL INFO/WARN lines and other
 * chatter between the lines, older headers without redop/root columns or with "error"
 * instead of "#wrong", newer ones with "#iters", "#bitdiff", "cputime" or timestamp
 * columns, "N/A" in #wrong, times printed with 0-2 decimals or in exponent notation,
 * several tables (datatypes, reductions) one after another, rccl-tests' rank lines
 * without a Group field. Columns are located by the header, never by position. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/ranges.h"
#include "nccltests/nccltests.h"

#define MAX_TOKENS 48
/* far above any nccl-tests log, NCCL_DEBUG=INFO chatter of a large job included */
#define NCCLTESTS_MAX_LOG_BYTES (256 << 20)
#define MAX_HOSTS_NAME 256

enum col_role { COL_OTHER, COL_SIZE, COL_COUNT, COL_TYPE, COL_REDOP, COL_ROOT, COL_TIME, COL_ALGBW, COL_BUSBW, COL_WRONG };

typedef struct table_cols {
	int n;                  /* columns named by the header */
	enum col_role role[MAX_TOKENS];
	int group[MAX_TOKENS];  /* column group (0 out-of-place, 1 in-place) of the metric columns */
	int idx_size, idx_count, idx_type, idx_redop, idx_root;
	int idx_time[2], idx_algbw[2], idx_busbw[2], idx_wrong[2];
	int groups;
	int line;
} table_cols;

typedef struct rank_entry {
	int rank;
	int host;  /* index into hosts */
	int group; /* "Group" field: nccl-tests' communicator colour; 0 when absent */
	int line;
} rank_entry;

typedef struct parse_state {
	const char *name;
	nccltests_log *log;
	table_cols cols;
	bool have_cols;
	/* rank table */
	rank_entry *ranks;
	int n_ranks, cap_ranks;
	char **hosts;
	int n_hosts, cap_hosts;
	int first_rank_line;
	/* collective evidence */
	bool coll_header, coll_cmd;
	workload_coll coll_h, coll_c;
	int coll_line;
	int cap_rows;
	/* the line being read: tokens point into tok_base, which starts tok_shift bytes into
	 * the line (after a launcher prefix), for columns in messages */
	const char *tok_base;
	int tok_shift;
} parse_state;

/* 1-based column of a token of the current line. */
static int col_of(const parse_state *st, const char *tok) { return (int)(tok - st->tok_base) + st->tok_shift + 1; }

/* ------------------------------------------------------------------ lines --- */
static int tokenize(char *s, char **tok, int max)
{
	int n = 0;
	while (*s) {
		while (*s && isspace((unsigned char)*s))
			s++;
		if (!*s)
			break;
		if (n == max)
			return n + 1; /* too many: the caller treats it as not a table line */
		tok[n++] = s;
		while (*s && !isspace((unsigned char)*s))
			s++;
		if (*s)
			*s++ = '\0';
	}
	return n;
}

/* Strips what launchers put in front of a rank's output: OpenMPI's --tag-output
 * "[1,0]<stdout>:", Slurm's --label "0: ", and leading blanks. */
static char *strip_prefix(char *s)
{
	for (;;) {
		while (*s == ' ' || *s == '\t')
			s++;
		if (*s == '[') {
			char *close = strchr(s, ']');
			if (close && (strncmp(close + 1, "<stdout>:", 9) == 0 || strncmp(close + 1, "<stderr>:", 9) == 0)) {
				s = close + 10;
				continue;
			}
		}
		if (isdigit((unsigned char)*s)) {
			char *p = s;
			while (isdigit((unsigned char)*p))
				p++;
			if (*p == ':' && (p[1] == ' ' || p[1] == '\t' || p[1] == '#')) {
				s = p + 1;
				continue;
			}
		}
		return s;
	}
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

static bool parse_int(const char *s, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end)
		return false;
	*out = v;
	return true;
}

/* A number of a log's table as nccl-tests prints it ("%7.2f", "%12li"): plain decimal,
 * finite (strtod alone took 0x10 as 16 us and inf as a rate). */
static bool parse_num(const char *s, double *out) { return config_parse_plain_number(s, false, out); }

static bool contains_nocase(const char *hay, const char *needle)
{
	size_t n = strlen(needle);
	for (; *hay; hay++)
		if (strncasecmp(hay, needle, n) == 0)
			return true;
	return false;
}

/* A token naming an nccl-tests binary ("./build/all_reduce_perf", "all_gather_perf_mpi"). */
static bool token_test_name(const char *tok, workload_coll *out)
{
	const char *base = strrchr(tok, '/');
	base = base ? base + 1 : tok;
	char buf[64];
	size_t len = strlen(base);
	if (len >= sizeof buf)
		return false;
	memcpy(buf, base, len + 1);
	char *perf = strstr(buf, "_perf");
	if (!perf)
		return false;
	perf[5] = '\0';
	return nccltests_coll_from_name(buf, out);
}

/* ------------------------------------------------------------- header line -- */
static bool parse_header(parse_state *st, char **tok, int n, int line, config_error *err)
{
	table_cols c = {0};
	c.line = line;
	c.idx_size = c.idx_count = c.idx_type = c.idx_redop = c.idx_root = -1;
	for (int g = 0; g < 2; g++)
		c.idx_time[g] = c.idx_algbw[g] = c.idx_busbw[g] = c.idx_wrong[g] = -1;
	int g = -1;
	for (int i = 0; i < n; i++) {
		const char *t = tok[i];
		enum col_role r = COL_OTHER;
		if (strcmp(t, "size") == 0)
			r = COL_SIZE, c.idx_size = i;
		else if (strcmp(t, "count") == 0)
			r = COL_COUNT, c.idx_count = i;
		else if (strcmp(t, "type") == 0)
			r = COL_TYPE, c.idx_type = i;
		else if (strcmp(t, "redop") == 0)
			r = COL_REDOP, c.idx_redop = i;
		else if (strcmp(t, "root") == 0)
			r = COL_ROOT, c.idx_root = i;
		else if (strcmp(t, "time") == 0 || strcmp(t, "cputime") == 0) {
			if (++g >= 2)
				return config_fail(err, "%s:%d:%d: more than two column groups (time ... time ... time) in the header, "
						   "expected out-of-place and in-place", st->name, line, 1);
			r = COL_TIME, c.idx_time[g] = i;
		} else if (g >= 0 && strcmp(t, "algbw") == 0)
			r = COL_ALGBW, c.idx_algbw[g] = i;
		else if (g >= 0 && strcmp(t, "busbw") == 0)
			r = COL_BUSBW, c.idx_busbw[g] = i;
		else if (g >= 0 && (strcmp(t, "#wrong") == 0 || strcmp(t, "error") == 0) && c.idx_wrong[g] < 0)
			r = COL_WRONG, c.idx_wrong[g] = i;
		c.role[i] = r;
		c.group[i] = g;
	}
	c.n = n;
	c.groups = g + 1;
	if (c.idx_size < 0 || c.idx_count < 0 || c.idx_type < 0 || c.groups < 1)
		return config_fail(err, "%s:%d:%d: column header lacks size, count, type or time, expected nccl-tests' "
				   "'#  size  count  type  redop  root  time  algbw  busbw  #wrong ...'", st->name, line, 1);
	for (int k = 0; k < c.groups; k++)
		if (c.idx_algbw[k] < 0 || c.idx_busbw[k] < 0)
			return config_fail(err, "%s:%d:%d: column group %d has a time column but no algbw and busbw, expected "
					   "'time  algbw  busbw  #wrong'", st->name, line, 1, k + 1);
	st->cols = c;
	st->have_cols = true;
	if (!st->log->header_line)
		st->log->header_line = line;
	if (st->log->groups && st->log->groups != c.groups)
		return config_fail(err, "%s:%d:%d: this table has %d column groups, an earlier one at line %d had %d; split "
				   "the log", st->name, line, 1, c.groups, st->log->header_line, st->log->groups);
	st->log->groups = c.groups;
	return true;
}

/* ---------------------------------------------------------------- data row -- */
/* A number of a result row's metric column: finite, and > 0 (times) or >= 0 (bandwidths,
 * #wrong). nccl-tests prints times in us with 2 decimals, so a measured one is never 0. */
static bool row_metric(parse_state *st, const char *t, int line, const char *what, bool positive, double *out,
		       config_error *err)
{
	double v;
	if (!parse_num(t, &v) || !isfinite(v) || v < 0 || (positive && v == 0))
		return config_fail(err, "%s:%d:%d: %s '%s' is not a %s, expected a finite number %s", st->name, line,
				   col_of(st, t), what, t, positive ? "duration" : "rate or count",
				   positive ? "> 0 (microseconds)" : ">= 0");
	*out = v;
	return true;
}

static bool parse_row(parse_state *st, char **tok, int n, int line, config_error *err)
{
	const table_cols *c = &st->cols;
	/* trailing extras (a timestamp prints as two tokens) are fine; missing columns are not */
	if (n < c->n)
		return config_fail(err, "%s:%d:%d: %d fields in a result row, the header at line %d has %d columns", st->name,
				   line, col_of(st, tok[n - 1]), n, c->line, c->n);
	nccltests_row r = {0};
	r.line = line;
	r.root = -1;
	char e[160];
	/* sizes and counts within the range table's collective sizes (config/ranges.h) */
	const char *ts_ = tok[c->idx_size], *tc = tok[c->idx_count];
	if (!all_digits(ts_) || !parse_num(ts_, &r.size) || !config_range_ok(CONFIG_R_COLL_BYTES, r.size))
		return config_fail(err, "%s:%d:%d: size '%s' is not a byte count, expected %s", st->name, line,
				   col_of(st, ts_), ts_, config_range_expect(CONFIG_R_COLL_BYTES, e, sizeof e));
	r.count_col = col_of(st, tc);
	if (!all_digits(tc) || !parse_num(tc, &r.count) || !config_range_ok(CONFIG_R_COLL_BYTES, r.count))
		return config_fail(err, "%s:%d:%d: count '%s' is not an element count, expected an integer from 0 to %.0f",
				   st->name, line, r.count_col, tc, config_range_get(CONFIG_R_COLL_BYTES)->hi);
	snprintf(r.type, sizeof r.type, "%s", tok[c->idx_type]);
	int type_size = nccltests_type_size(r.type);
	if (type_size == 0)
		return config_fail(err, "%s:%d:%d: unknown datatype '%s', expected one of nccl-tests' types (float, half, "
				   "bfloat16, double, int8, int32, ...)", st->name, line, col_of(st, tok[c->idx_type]), r.type);
	/* nccl-tests prints size = count x type size, times the ranks for the per-rank
	 * collectives (checked once P is known): either way a whole multiple */
	double per = r.count * type_size, q = per > 0 ? r.size / per : 0;
	if ((r.count == 0) != (r.size == 0) || q != floor(q))
		return config_fail(err, "%s:%d:%d: count %s x %d B (%s) does not divide size %s, expected count = size / "
				   "type size (/ ranks for all-gather, reduce-scatter and all-to-all)", st->name, line,
				   r.count_col, tc, type_size, r.type, ts_);
	if (c->idx_redop >= 0) {
		const char *t = tok[c->idx_redop];
		if (!nccltests_redop_known(t)) /* it is printed back in collective --compare */
			return config_fail(err, "%s:%d:%d: redop '%s' is not a reduction nccl-tests prints, expected "
					   NCCLTESTS_REDOPS, st->name, line, col_of(st, t), t);
		snprintf(r.redop, sizeof r.redop, "%s", t);
	}
	if (c->idx_root >= 0) {
		long root;
		const char *t = tok[c->idx_root];
		if (!parse_int(t, &root) || (root != -1 && !config_range_ok(CONFIG_R_LOG_RANK, root)))
			return config_fail(err, "%s:%d:%d: root '%s' is not a rank number, expected -1 or %s", st->name, line,
					   col_of(st, t), t, config_range_expect(CONFIG_R_LOG_RANK, e, sizeof e));
		r.root = (int)root;
	}
	for (int g = 0; g < c->groups; g++) {
		if (!row_metric(st, tok[c->idx_time[g]], line, "time", true, &r.time_us[g], err) ||
		    !row_metric(st, tok[c->idx_algbw[g]], line, "algbw", false, &r.algbw[g], err) ||
		    !row_metric(st, tok[c->idx_busbw[g]], line, "busbw", false, &r.busbw[g], err))
			return false;
		r.wrong[g] = -1;
		if (c->idx_wrong[g] >= 0) {
			const char *t = tok[c->idx_wrong[g]];
			if (strcasecmp(t, "N/A") != 0 && !row_metric(st, t, line, "#wrong", false, &r.wrong[g], err))
				return false;
		}
		r.has[g] = true;
	}
	nccltests_log *log = st->log;
	if (log->n_rows == st->cap_rows) {
		int cap = st->cap_rows ? 2 * st->cap_rows : 32;
		nccltests_row *rows = realloc(log->rows, (size_t)cap * sizeof *rows);
		if (!rows)
			return config_fail(err, "%s:%d:%d: out of memory", st->name, line, 1);
		log->rows = rows;
		st->cap_rows = cap;
	}
	log->rows[log->n_rows++] = r;
	return true;
}

/* --------------------------------------------------------------- rank table -- */
/* "#  Rank %2d Group %2d Pid %6d on %10s device %2d [...] name" (rccl-tests omits Group). */
static bool parse_rank_line(parse_state *st, char **tok, int n, int line, config_error *err)
{
	long rank;
	char e[160];
	if (n < 4 || !parse_int(tok[1], &rank) || rank < 0)
		return config_fail(err, "%s:%d:%d: rank line without a rank number, expected '#  Rank N Group G Pid P on HOST "
				   "device D ...'", st->name, line, 1);
	if (!config_range_ok(CONFIG_R_LOG_RANK, rank))
		return config_fail(err, "%s:%d:%d: rank %s, expected %s", st->name, line, col_of(st, tok[1]), tok[1],
				   config_range_expect(CONFIG_R_LOG_RANK, e, sizeof e));
	const char *host = NULL;
	long group = 0;
	for (int i = 2; i + 1 < n; i++) {
		if (strcmp(tok[i], "Group") == 0 &&
		    (!parse_int(tok[i + 1], &group) || !config_range_ok(CONFIG_R_LOG_RANK, group)))
			return config_fail(err, "%s:%d:%d: Group '%s' is not a group number, expected %s", st->name, line,
					   col_of(st, tok[i + 1]),
					   tok[i + 1], config_range_expect(CONFIG_R_LOG_RANK, e, sizeof e));
		if (strcmp(tok[i], "on") == 0) {
			/* an empty hostname prints as "on        device": one unnamed host */
			host = strcmp(tok[i + 1], "device") == 0 ? "" : tok[i + 1];
			break;
		}
	}
	if (!host)
		return config_fail(err, "%s:%d:%d: rank line without 'on HOST', expected '#  Rank N Group G Pid P on HOST "
				   "device D ...'", st->name, line, 1);
	int h;
	for (h = 0; h < st->n_hosts; h++)
		if (strcmp(st->hosts[h], host) == 0)
			break;
	if (h == st->n_hosts) {
		if (st->n_hosts == st->cap_hosts) {
			int cap = st->cap_hosts ? 2 * st->cap_hosts : 16;
			char **hosts = realloc(st->hosts, (size_t)cap * sizeof *hosts);
			if (!hosts)
				return config_fail(err, "%s:%d:%d: out of memory", st->name, line, 1);
			st->hosts = hosts;
			st->cap_hosts = cap;
		}
		st->hosts[h] = strdup(host);
		if (!st->hosts[h])
			return config_fail(err, "%s:%d:%d: out of memory", st->name, line, 1);
		st->n_hosts++;
	}
	for (int i = 0; i < st->n_ranks; i++)
		if (st->ranks[i].rank == rank)
			return config_fail(err, "%s:%d:%d: rank %ld listed twice (first at line %d); split concatenated logs",
					   st->name, line, col_of(st, tok[1]), rank, st->ranks[i].line);
	if (st->n_ranks == st->cap_ranks) {
		int cap = st->cap_ranks ? 2 * st->cap_ranks : 64;
		rank_entry *r = realloc(st->ranks, (size_t)cap * sizeof *r);
		if (!r)
			return config_fail(err, "%s:%d:%d: out of memory", st->name, line, 1);
		st->ranks = r;
		st->cap_ranks = cap;
	}
	st->ranks[st->n_ranks++] = (rank_entry){(int)rank, h, (int)group, line};
	if (!st->first_rank_line)
		st->first_rank_line = line;
	return true;
}

/* ----------------------------------------------------------- comment lines -- */
static bool parse_comment(parse_state *st, char *body, int line, config_error *err)
{
	char *tok[MAX_TOKENS];
	int n = tokenize(body, tok, MAX_TOKENS);
	if (n == 0 || n > MAX_TOKENS)
		return true;
	if (strcmp(tok[0], "nThread") == 0 && n >= 4 && strcmp(tok[2], "nGpus") == 0) {
		long a, b;
		if (parse_int(tok[1], &a) && parse_int(tok[3], &b)) {
			if (!config_range_ok(CONFIG_R_GPUS, a) || !config_range_ok(CONFIG_R_GPUS, b))
				return config_fail(err, "%s:%d:%d: nThread %s nGpus %s, expected counts from 1 to %.0f", st->name,
						   line, col_of(st, tok[1]), tok[1], tok[3], config_range_get(CONFIG_R_GPUS)->hi);
			st->log->nthreads = (int)a;
			st->log->ngpus = (int)b;
		}
		return true;
	}
	if ((strcmp(tok[0], "Rank") == 0 || strcmp(tok[0], "rank") == 0) && n >= 2 && all_digits(tok[1]))
		return parse_rank_line(st, tok, n, line, err);
	if (n >= 4 && strcmp(tok[0], "Collective") == 0 && strcmp(tok[1], "test") == 0 &&
	    strcmp(tok[2], "starting:") == 0) {
		workload_coll c;
		if (!token_test_name(tok[3], &c))
			return config_fail(err, "%s:%d:%d: test '%s' is not one spsim models, expected all_reduce_perf, "
					   "all_gather_perf, reduce_scatter_perf, alltoall_perf, sendrecv_perf or "
					   "broadcast_perf", st->name, line, col_of(st, tok[3]), tok[3]);
		if (st->coll_header && st->coll_h != c)
			return config_fail(err, "%s:%d:%d: a second test (%s) in the same log after %s at line %d; split the log",
					   st->name, line, col_of(st, tok[3]), nccltests_test_name(c), nccltests_test_name(st->coll_h),
					   st->coll_line);
		st->coll_header = true;
		st->coll_h = c;
		st->coll_line = line;
		return true;
	}
	bool has_size = false, has_count = false;
	for (int i = 0; i < n; i++) {
		has_size |= strcmp(tok[i], "size") == 0;
		has_count |= strcmp(tok[i], "count") == 0;
	}
	if (has_size && has_count)
		return parse_header(st, tok, n, line, err);
	if (n >= 5 && strcmp(tok[0], "Avg") == 0 && strcmp(tok[1], "bus") == 0) {
		double v;
		for (int i = 2; i < n; i++)
			if (parse_num(tok[i], &v)) {
				st->log->has_avg_busbw = true;
				st->log->avg_busbw = v;
				break;
			}
	}
	return true;
}

static bool parse_line(parse_state *st, char *s, int line, config_error *err)
{
	char *line0 = s;
	s = strip_prefix(s);
	st->tok_base = line0; /* comments are tokenized in place */
	st->tok_shift = 0;
	if (*s == '#')
		return parse_comment(st, s + 1, line, err);
	char *tok[MAX_TOKENS];
	char copy[4096];
	snprintf(copy, sizeof copy, "%s", s);
	st->tok_base = copy;
	st->tok_shift = (int)(s - line0);
	int n = tokenize(copy, tok, MAX_TOKENS);
	if (n == 0)
		return true;
	/* command lines name the test binary ("mpirun ... ./build/all_reduce_perf -b 8 ...") */
	if (!st->coll_cmd && !st->have_cols)
		for (int i = 0; i < n && i < MAX_TOKENS; i++)
			if (token_test_name(tok[i], &st->coll_c)) {
				st->coll_cmd = true;
				if (!st->coll_line)
					st->coll_line = line;
				break;
			}
	/* a result row starts with the size in bytes; anything else (NCCL INFO lines,
	 * version banners, prompts) is chatter. A line that starts with a digit and has a
	 * datatype where the header puts one is a row gone wrong, not chatter. */
	if (!st->have_cols || n > MAX_TOKENS || !isdigit((unsigned char)tok[0][0]))
		return true;
	int ti = st->cols.idx_type;
	if (!all_digits(tok[0]) && !(ti < n && nccltests_type_size(tok[ti]) > 0))
		return true;
	return parse_row(st, tok, n, line, err);
}

/* ------------------------------------------------------------- collective --- */
/* Which collective a table is, from the columns alone. Needs P. */
static bool coll_from_columns(const nccltests_log *log, workload_coll *out)
{
	const nccltests_row *r = NULL;
	for (int i = 0; i < log->n_rows; i++)
		if (log->rows[i].count > 0 && (!r || log->rows[i].algbw[0] > r->algbw[0]))
			r = &log->rows[i];
	if (!r || log->ranks < 2)
		return false;
	int ts = nccltests_type_size(r->type);
	bool per_rank = fabs(r->count * ts * log->ranks - r->size) < 0.5;
	bool whole = fabs(r->count * ts - r->size) < 0.5;
	bool reduces = r->redop[0] && strcmp(r->redop, "none") != 0;
	if (r->root >= 0 && whole && !reduces) {
		*out = WL_COLL_BROADCAST;
		return true;
	}
	if (per_rank && reduces) {
		*out = WL_COLL_REDUCESCATTER;
		return true;
	}
	if (whole && r->algbw[0] >= 1.0) {
		double ratio = r->busbw[0] / r->algbw[0];
		double ar = 2.0 * (log->ranks - 1) / log->ranks;
		if (fabs(ratio - ar) < 0.02 * ar && fabs(ar - 1.0) > 0.05) {
			*out = WL_COLL_ALLREDUCE;
			return true;
		}
		if (fabs(ratio - 1.0) < 0.02 && fabs(ar - 1.0) > 0.05) {
			*out = WL_COLL_SENDRECV;
			return true;
		}
	}
	return false; /* all-gather and all-to-all print alike */
}

/* P from the count column (per-rank collectives) or from busbw/algbw (all-reduce). */
static int ranks_from_columns(const nccltests_log *log, workload_coll c)
{
	int p = 0;
	if (c == WL_COLL_ALLGATHER || c == WL_COLL_REDUCESCATTER || c == WL_COLL_ALLTOALL) {
		for (int i = 0; i < log->n_rows; i++) {
			const nccltests_row *r = &log->rows[i];
			if (r->count <= 0)
				continue;
			double q = r->size / (r->count * nccltests_type_size(r->type));
			int qi = (int)lround(q);
			if (fabs(q - qi) > 1e-9 || (p && qi != p))
				return 0;
			p = qi;
		}
		return p;
	}
	if (c == WL_COLL_ALLREDUCE) {
		const nccltests_row *best = NULL;
		for (int i = 0; i < log->n_rows; i++)
			if (!best || log->rows[i].algbw[0] > best->algbw[0])
				best = &log->rows[i];
		if (!best || !(best->algbw[0] >= 10.0))
			return 0;
		double ratio = best->busbw[0] / best->algbw[0]; /* 2(P-1)/P */
		if (!(ratio < 1.99))
			return 0;
		return (int)lround(2.0 / (2.0 - ratio));
	}
	return 0;
}

static bool resolve_layout(parse_state *st, const nccltests_parse_opts *o, config_error *err)
{
	nccltests_log *log = st->log;
	if (st->n_ranks > 0) {
		int maxr = 0;
		for (int i = 0; i < st->n_ranks; i++)
			maxr = st->ranks[i].rank > maxr ? st->ranks[i].rank : maxr;
		if (maxr + 1 != st->n_ranks)
			return config_fail(err, "%s:%d:%d: the rank table lists %d ranks but numbers them up to %d (truncated "
					   "table?); pass --gpus-per-node and --nodes", st->name, st->first_rank_line, 1,
					   st->n_ranks, maxr);
		for (int i = 1; i < st->n_ranks; i++)
			if (st->ranks[i].group != st->ranks[0].group)
				return config_fail(err, "%s:%d:%d: ranks in several communicators (Group %d and %d); spsim reads "
						   "runs of one communicator", st->name, st->ranks[i].line, 1, st->ranks[0].group,
						   st->ranks[i].group);
		int *per_host = calloc((size_t)st->n_hosts, sizeof *per_host);
		if (!per_host)
			return config_fail(err, "%s: out of memory", st->name);
		for (int i = 0; i < st->n_ranks; i++)
			per_host[st->ranks[i].host]++;
		int gpn = per_host[0];
		for (int h = 1; h < st->n_hosts; h++)
			if (per_host[h] != gpn && o->gpus_per_node <= 0) {
				int have = per_host[h];
				free(per_host);
				return config_fail(err, "%s:%d:%d: hosts run different numbers of ranks (%s: %d, %s: %d); spsim needs "
						   "the same GPUs per node, pass --gpus-per-node to override", st->name,
						   st->first_rank_line, 1, st->hosts[0], gpn, st->hosts[h], have);
			}
		free(per_host);
		log->ranks = st->n_ranks;
		log->nodes = st->n_hosts;
		log->gpus_per_node = gpn;
	} else {
		if (o->gpus_per_node > 0 && o->nodes > 0)
			log->ranks = o->gpus_per_node * o->nodes;
		else
			log->ranks = ranks_from_columns(log, log->coll);
		if (log->ranks <= 0)
			return config_fail(err, "%s:%d:%d: no '# Using devices' rank table and the columns do not tell the number "
					   "of ranks of a %s table; pass --gpus-per-node and --nodes", st->name, log->header_line, 1,
					   nccltests_test_name(log->coll));
	}
	if (o->gpus_per_node > 0 || o->nodes > 0) {
		int gpn = o->gpus_per_node > 0 ? o->gpus_per_node : log->ranks / o->nodes;
		int nodes = o->nodes > 0 ? o->nodes : log->ranks / o->gpus_per_node;
		if (gpn <= 0 || nodes <= 0 || gpn * nodes != log->ranks) {
			/* the flag given alone names what it does not divide ('8 ranks cannot be 0 nodes of
			 * 16 GPUs' read before) */
			if (o->nodes <= 0)
				return config_fail(err, "%s: %d ranks do not fill whole nodes of %d GPUs (--gpus-per-node %d), "
						   "expected a divisor of %d; fix --gpus-per-node/--nodes",
						   st->name, log->ranks, gpn, gpn, log->ranks);
			if (o->gpus_per_node <= 0)
				return config_fail(err, "%s: %d ranks do not split over %d nodes (--nodes %d), expected a divisor "
						   "of %d; fix --gpus-per-node/--nodes",
						   st->name, log->ranks, o->nodes, o->nodes, log->ranks);
			return config_fail(err, "%s: %d ranks cannot be %d nodes of %d GPUs; fix --gpus-per-node/--nodes",
					   st->name, log->ranks, nodes, gpn);
		}
		log->gpus_per_node = gpn;
		log->nodes = nodes;
	} else if (st->n_ranks == 0) {
		return config_fail(err, "%s:%d:%d: no '# Using devices' rank table, so the GPUs per node of these %d ranks are "
				   "unknown; pass --gpus-per-node (or --nodes)", st->name, log->header_line, 1, log->ranks);
	}
	return true;
}

/* Which collective the log is, from the strongest evidence; false when only the columns
 * can tell (they need the layout first). */
static bool resolve_coll(parse_state *st, const nccltests_parse_opts *o)
{
	nccltests_log *log = st->log;
	if (o && o->coll_set) {
		log->coll = o->coll;
		log->coll_from = "option";
	} else if (st->coll_header) {
		log->coll = st->coll_h;
		log->coll_from = "header";
	} else if (st->coll_cmd) {
		log->coll = st->coll_c;
		log->coll_from = "command line";
	} else {
		/* the file name: "all_gather_perf.2n.log", "alltoall-16gpu.txt" */
		const char *base = strrchr(st->name, '/');
		base = base ? base + 1 : st->name;
		static const char *keys[] = {"all_reduce", "allreduce", "all_gather", "allgather", "reduce_scatter",
					     "reducescatter", "alltoall", "all_to_all", "sendrecv", "broadcast"};
		for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
			if (contains_nocase(base, keys[i]) && nccltests_coll_from_name(keys[i], &log->coll)) {
				log->coll_from = "file name";
				return true;
			}
		return false;
	}
	return true;
}

bool nccltests_log_one_process_per_node(const nccltests_log *log)
{
	int per_process = log->nthreads * log->ngpus;
	return per_process > 1 && per_process >= log->gpus_per_node;
}

void nccltests_log_finish(nccltests_log *log)
{
	if (!log)
		return;
	free(log->rows);
	log->rows = NULL;
	log->n_rows = 0;
}

bool nccltests_parse_text(const char *name, const char *text, const nccltests_parse_opts *opts, nccltests_log *out,
			  config_error *err)
{
	static const nccltests_parse_opts none = {0};
	if (!opts)
		opts = &none;
	memset(out, 0, sizeof *out);
	snprintf(out->path, sizeof out->path, "%s", name);
	parse_state st = {0};
	st.name = name;
	st.log = out;
	bool ok = true;
	int line = 0;
	const char *p = text;
	char buf[4096];
	while (ok && *p) {
		line++;
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);
		if (len >= sizeof buf) {
			/* long lines are chatter (environment dumps); a table line is never this long */
			p = eol ? eol + 1 : p + len;
			continue;
		}
		memcpy(buf, p, len);
		buf[len] = '\0';
		if (len && buf[len - 1] == '\r')
			buf[len - 1] = '\0';
		ok = parse_line(&st, buf, line, err);
		p = eol ? eol + 1 : p + len;
	}
	if (ok && !st.have_cols)
		ok = config_fail(err, "%s: no nccl-tests result table, expected a header line '#  size  count  type  redop  "
				 "root  time  algbw  busbw  #wrong ...'", name);
	if (ok && out->n_rows == 0)
		ok = config_fail(err, "%s:%d:%d: no result rows under the column header", name, out->header_line, 1);
	bool coll_known = false;
	if (ok)
		coll_known = resolve_coll(&st, opts);
	if (ok && !coll_known) {
		/* the layout first (with a rank table or both options it needs no collective),
		 * then the columns */
		if (st.n_ranks == 0 && !(opts->gpus_per_node > 0 && opts->nodes > 0))
			ok = config_fail(err, "%s:%d:%d: cannot tell which collective this table is (no 'Collective test starting' "
					 "line, no *_perf command, no hint in the file name) nor how many ranks ran it; pass "
					 "--op and --gpus-per-node/--nodes", name, out->header_line, 1);
		if (ok)
			ok = resolve_layout(&st, opts, err);
		if (ok && !coll_from_columns(out, &out->coll))
			ok = config_fail(err, "%s:%d:%d: cannot tell which collective this table is (all-gather and all-to-all "
					 "print alike); pass --op or name the file after the test (alltoall_perf.log)", name,
					 out->header_line, 1);
		if (ok)
			out->coll_from = "columns";
	} else if (ok) {
		ok = resolve_layout(&st, opts, err);
	}
	/* the count column is what nccl-tests passes to NCCL: size / type size, / P for the
	 * per-rank collectives; a mismatch means the collective or the rank count is wrong */
	if (ok)
		for (int i = 0; i < out->n_rows && ok; i++) {
			const nccltests_row *r = &out->rows[i];
			int ts = nccltests_type_size(r->type);
			if (fabs(nccltests_count(out->coll, r->size, ts, out->ranks) - r->count) > 0.5)
				ok = config_fail(err, "%s:%d:%d: count %.0f, expected %.0f: what %s prints for size %.0f of %s "
						 "(%d B) on %d ranks; wrong collective (from %s) or rank count", name, r->line,
						 r->count_col, r->count, nccltests_count(out->coll, r->size, ts, out->ranks),
						 nccltests_test_name(out->coll), r->size, r->type, ts, out->ranks, out->coll_from);
		}
	for (int h = 0; h < st.n_hosts; h++)
		free(st.hosts[h]);
	free(st.hosts);
	free(st.ranks);
	if (!ok)
		nccltests_log_finish(out);
	return ok;
}

bool nccltests_parse_file(const char *path, const nccltests_parse_opts *opts, nccltests_log *out, config_error *err)
{
	if (!config_check_file(path, "an nccl-tests log", err))
		return false;
	FILE *f = fopen(path, "rb");
	if (!f)
		return config_fail(err, "%s: cannot open: %s", path, strerror(errno));
	/* The whole log, refused at its first NUL byte (a binary file, a pipe from /dev/zero) or
	 * once it passes NCCLTESTS_MAX_LOG_BYTES, so no input reads without end. */
	size_t cap = 1 << 16, len = 0;
	char *text = malloc(cap);
	if (!text) {
		fclose(f);
		return config_fail(err, "%s: out of memory", path);
	}
	size_t got, nul = SIZE_MAX; /* offset of the first NUL (an offset: text moves when it grows) */
	while (nul == SIZE_MAX && len <= NCCLTESTS_MAX_LOG_BYTES && (got = fread(text + len, 1, cap - len - 1, f)) > 0) {
		const char *z = memchr(text + len, '\0', got);
		if (z)
			nul = (size_t)(z - text);
		len += got;
		if (len + 1 == cap && len <= NCCLTESTS_MAX_LOG_BYTES) {
			char *bigger = realloc(text, cap * 2);
			if (!bigger) {
				free(text);
				fclose(f);
				return config_fail(err, "%s: out of memory", path);
			}
			text = bigger;
			cap *= 2;
		}
	}
	bool read_error = ferror(f);
	fclose(f);
	if (read_error) {
		free(text);
		return config_fail(err, "%s: read error", path);
	}
	text[len] = '\0';
	if (nul != SIZE_MAX) {
		int line = 1, col = 1;
		for (size_t i = 0; i < nul; i++, col++)
			if (text[i] == '\n')
				line++, col = 0;
		free(text);
		return config_fail(err, "%s:%d:%d: NUL byte in the log (a binary file?), expected text", path, line, col);
	}
	if (len > NCCLTESTS_MAX_LOG_BYTES) {
		free(text);
		return config_fail(err, "%s: larger than %d MiB, expected an nccl-tests log (split it)", path,
				   NCCLTESTS_MAX_LOG_BYTES >> 20);
	}
	bool ok = nccltests_parse_text(path, text, opts, out, err);
	free(text);
	return ok;
}
