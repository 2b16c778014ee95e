/* nccltests: names, size conventions and nccl-tests' output format. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "nccltests/nccltests.h"
#include "engine/nccl.h"

static const struct {
	const char *test;   /* nccl-tests binary */
	const char *names[4];
	workload_coll coll;
} coll_names[] = {
	{"all_reduce_perf", {"all_reduce", "allreduce", "all-reduce", NULL}, WL_COLL_ALLREDUCE},
	{"all_gather_perf", {"all_gather", "allgather", "all-gather", NULL}, WL_COLL_ALLGATHER},
	{"reduce_scatter_perf", {"reduce_scatter", "reducescatter", "reduce-scatter", NULL}, WL_COLL_REDUCESCATTER},
	{"alltoall_perf", {"alltoall", "all_to_all", "all-to-all", "a2a"}, WL_COLL_ALLTOALL},
	{"sendrecv_perf", {"sendrecv", "send_recv", "send-recv", NULL}, WL_COLL_SENDRECV},
	{"broadcast_perf", {"broadcast", "bcast", NULL, NULL}, WL_COLL_BROADCAST},
};
#define N_COLL_NAMES (sizeof coll_names / sizeof coll_names[0])

bool nccltests_coll_from_name(const char *name, workload_coll *out)
{
	if (!name)
		return false;
	for (size_t i = 0; i < N_COLL_NAMES; i++) {
		bool hit = strcasecmp(name, coll_names[i].test) == 0;
		for (int j = 0; j < 4 && !hit && coll_names[i].names[j]; j++)
			hit = strcasecmp(name, coll_names[i].names[j]) == 0;
		if (hit) {
			*out = coll_names[i].coll;
			return true;
		}
	}
	return false;
}

const char *nccltests_test_name(workload_coll c)
{
	for (size_t i = 0; i < N_COLL_NAMES; i++)
		if (coll_names[i].coll == c)
			return coll_names[i].test;
	return "unknown_perf";
}

/* nccl-tests' datatype names (src/common.cu test_typenames) plus common aliases. */
static const struct {
	const char *name;
	int size;
} type_sizes[] = {
	{"int8", 1},    {"uint8", 1},    {"char", 1},      {"int32", 4},    {"uint32", 4}, {"int", 4},
	{"int64", 8},   {"uint64", 8},   {"half", 2},      {"float16", 2},  {"fp16", 2},   {"float", 4},
	{"float32", 4}, {"fp32", 4},     {"double", 8},    {"float64", 8},  {"fp64", 8},   {"bfloat16", 2},
	{"bf16", 2},    {"f8e4m3", 1},   {"f8e5m2", 1},    {"fp8_e4m3", 1}, {"fp8_e5m2", 1},
};

int nccltests_type_size(const char *type)
{
	for (size_t i = 0; i < sizeof type_sizes / sizeof type_sizes[0]; i++)
		if (strcasecmp(type, type_sizes[i].name) == 0)
			return type_sizes[i].size;
	return 0;
}

bool nccltests_redop_known(const char *name)
{
	static const char *const ops[] = {"sum", "prod", "max", "min", "avg", "mulsum", "none"};
	for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
		if (strcmp(name, ops[k]) == 0)
			return true;
	return false;
}

/* nccl-tests passes its reduction name to every test that takes one (all_reduce,
 * reduce_scatter, sendrecv) and "none" otherwise; only rooted tests print a root. */
const char *nccltests_default_redop(workload_coll c)
{
	switch (c) {
	case WL_COLL_ALLREDUCE:
	case WL_COLL_REDUCESCATTER:
	case WL_COLL_SENDRECV:
		return "sum";
	default:
		return "none";
	}
}

int nccltests_default_root(workload_coll c) { return c == WL_COLL_BROADCAST ? 0 : -1; }

static bool per_rank_count(workload_coll c)
{
	return c == WL_COLL_ALLGATHER || c == WL_COLL_REDUCESCATTER || c == WL_COLL_ALLTOALL;
}

/* nccl-tests' <Coll>GetCollByteCount: the count passed to NCCL (and printed) is per rank
 * for all-gather, reduce-scatter and all-to-all, and the printed size is the larger of
 * the send and receive buffers (count x ranks elements). */
double nccltests_count(workload_coll c, double size, int type_size, int ranks)
{
	double count = floor(size / type_size);
	if (per_rank_count(c) && ranks > 0)
		count = floor(count / ranks);
	return count;
}

double nccltests_round_size(workload_coll c, double size, int type_size, int ranks)
{
	double count = nccltests_count(c, size, type_size, ranks);
	if (per_rank_count(c))
		return count * ranks * type_size;
	return count * type_size;
}

workload_alg nccltests_default_alg(workload_coll c)
{
	/* NCCL's all-to-all and send/recv are grouped point-to-point calls to every peer at
	 * once; its all-gather, reduce-scatter, all-reduce and broadcast default to rings for
	 * large messages. The op program uses the same. */
	switch (c) {
	case WL_COLL_ALLTOALL:
	case WL_COLL_SENDRECV:
		return WL_ALG_DIRECT;
	default:
		return WL_ALG_RING;
	}
}

bool nccltests_parse_size(const char *text, double *out)
{
	char *end;
	double v = strtod(text, &end);
	if (end == text || !(v >= 0) || !isfinite(v))
		return false;
	double mult = 1;
	switch (*end) {
	case 'k': case 'K': mult = 1024.0; end++; break;
	case 'm': case 'M': mult = 1024.0 * 1024; end++; break;
	case 'g': case 'G': mult = 1024.0 * 1024 * 1024; end++; break;
	case 't': case 'T': mult = 1024.0 * 1024 * 1024 * 1024; end++; break;
	default: break;
	}
	if (mult > 1 && *end == 'i')
		end++;
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end)
		return false;
	*out = floor(v * mult);
	return true;
}

bool nccltests_alg_from_name(workload_coll c, const char *name, workload_alg *out)
{
	for (int a = 0; a < WL_ALG_COUNT; a++) {
		if (strcasecmp(name, workload_alg_name((workload_alg)a)) != 0)
			continue;
		/* the algorithms engine_collective_time implements for each collective */
		bool ok;
		switch (c) {
		case WL_COLL_ALLTOALL: ok = a != WL_ALG_RING; break;
		case WL_COLL_ALLGATHER:
		case WL_COLL_REDUCESCATTER:
		case WL_COLL_ALLREDUCE: ok = a == WL_ALG_RING || a == WL_ALG_HIERARCHICAL; break;
		case WL_COLL_SENDRECV: ok = a == WL_ALG_DIRECT; break;
		case WL_COLL_BROADCAST: ok = a == WL_ALG_RING; break;
		default: ok = false; break;
		}
		if (!ok)
			return false;
		*out = (workload_alg)a;
		return true;
	}
	return false;
}

bool nccltests_resolve_alg(workload_coll c, const char *name, workload_alg *alg, int *force_algo)
{
	nccl_algo na;
	*alg = nccltests_default_alg(c);
	*force_algo = 0;
	bool ring_family = c != WL_COLL_ALLTOALL && c != WL_COLL_SENDRECV;
	if (ring_family && nccl_algo_from_name(name, &na) && na != NCCL_ALGO_P2P) {
		*force_algo = (int)na + 1;
		return true;
	}
	return nccltests_alg_from_name(c, name, alg);
}

/* nccl-tests' getFloatStr (src/common.cu): count the integer digits, then pick the
 * precision that fits the column. */
void nccltests_format_float(double value, int width, char *buf, size_t len)
{
	int power = 0;
	if (!isfinite(value)) {
		snprintf(buf, len, "%*s", width, value != value ? "nan" : "inf");
		return;
	}
	for (uint64_t v = 1; value >= (double)v && power < 19; v *= 10)
		power++;
	if (power < width - 2)
		snprintf(buf, len, "%*.2f", width, value);
	else if (power < width - 1)
		snprintf(buf, len, "%*.1f", width, value);
	else if (power < width + 1)
		snprintf(buf, len, "%*.0f", width, value);
	else if (width >= 7)
		snprintf(buf, len, "%*.1e", width, value);
	else
		snprintf(buf, len, "%*.0e", width, value);
}

void nccltests_result_make(workload_coll c, int ranks, int type_size, double size, double time_s, nccltests_result *r)
{
	r->size = size;
	r->count = nccltests_count(c, size, type_size, ranks);
	r->time_us = time_s * 1e6;
	/* algbw = S / t in GB/s; busbw = algbw x factor (nccl-tests doc/PERFORMANCE.md) */
	r->algbw = time_s > 0 ? size / time_s / 1e9 : 0.0;
	r->busbw = r->algbw * engine_busbw_factor(c, ranks);
}

/* The header of nccl-tests' result table (src/common.cu, columns since 2.13): the first
 * line names the two column groups, the second the columns, the third their units. */
void nccltests_print_table_header(FILE *f)
{
	fprintf(f, "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n", "", "", "",
		"", "");
	fprintf(f, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s\n", "size", "count", "type", "redop",
		"root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
	fprintf(f, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s\n", "(B)", "(elements)", "", "", "",
		"(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
}

void nccltests_print_row(FILE *f, const nccltests_result *r, const char *type, const char *redop, int root)
{
	char t[32], a[32], b[32];
	nccltests_format_float(r->time_us, 7, t, sizeof t);
	nccltests_format_float(r->algbw, 6, a, sizeof a);
	nccltests_format_float(r->busbw, 6, b, sizeof b);
	fprintf(f, "%12.0f  %12.0f  %8s  %6s  %6d", r->size, r->count, type, redop, root);
	/* a prediction has no correctness check: nccl-tests prints N/A there too when it
	 * does not verify results */
	for (int g = 0; g < 2; g++)
		fprintf(f, "  %7s  %6s  %6s    N/A", t, a, b);
	fputc('\n', f);
}
