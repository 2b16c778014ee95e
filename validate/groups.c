/* Rank groups and per-rank layout of Ulysses and BASP (basp.md), and the deterministic
 * test data every rank generates for its own shard. */
#include <stdio.h>
#include <string.h>

#include "validate.h"

const char *validate_strategy_name(validate_strategy s) { return s == VALIDATE_BASP ? "basp" : "ulysses"; }

bool validate_strategy_parse(const char *name, validate_strategy *out)
{
	if (!strcmp(name, "ulysses"))
		*out = VALIDATE_ULYSSES;
	else if (!strcmp(name, "basp"))
		*out = VALIDATE_BASP;
	else
		return false;
	return true;
}

#define FAIL(...)                                           \
	do {                                                \
		if (err && errlen)                          \
			snprintf(err, errlen, __VA_ARGS__); \
		return VALIDATE_EINVAL;                     \
	} while (0)

int validate_groups_make(validate_strategy st, int N, int B, long S, int heads, int kv_heads, validate_groups *out,
			 char *err, size_t errlen)
{
	if (N < 1 || B < 1 || S < 1 || heads < 1 || kv_heads < 1)
		FAIL("ranks, micro-batch, sequence length and head counts must all be >= 1");
	if (heads % kv_heads != 0)
		FAIL("%d query heads are not a multiple of %d kv heads", heads, kv_heads);
	int K = N, nseq = B;
	if (st == VALIDATE_BASP) {
		if (B > N)
			FAIL("BASP with B = %d > N = %d sequences falls back to data parallelism; use B <= N", B, N);
		if (N % B != 0)
			FAIL("BASP needs N divisible by B (N = %d, B = %d): groups of K = N / B ranks", N, B);
		K = N / B;
		nseq = 1;
	}
	if (S % K != 0)
		FAIL("sequence length %ld is not divisible by the all-to-all group size K = %d", S, K);
	if (heads % K != 0)
		FAIL("%d query heads do not divide among K = %d ranks", heads, K);
	if (kv_heads % K != 0 && K % kv_heads != 0)
		FAIL("%d kv heads and group size K = %d: one must divide the other", kv_heads, K);
	memset(out, 0, sizeof *out);
	out->strategy = st;
	out->world = N;
	out->K = K;
	out->n_groups = N / K;
	out->nseq = nseq;
	out->seq = S;
	out->tokens = S / K;
	out->heads = heads;
	out->kv_heads = kv_heads;
	out->heads_per_rank = heads / K;
	out->kv_rep = kv_heads < K ? K / kv_heads : 1;
	out->kv_per_rank = kv_heads * out->kv_rep / K;
	return VALIDATE_OK;
}

validate_place validate_place_of(const validate_groups *g, int rank)
{
	validate_place p;
	p.group = rank / g->K;
	p.grank = rank % g->K;
	p.seq0 = p.group * g->nseq;
	p.tok0 = (long)p.grank * g->tokens;
	return p;
}

/* The finaliser of splitmix64 (Java's SplittableRandom): a cheap, well-mixed 64-bit hash. */
static uint64_t mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

void validate_fill(kernels_bf16 *dst, size_t n, uint64_t seed, uint64_t tensor, uint64_t first, float scale)
{
	const uint64_t base = mix(seed ^ mix(tensor + 0x9e3779b97f4a7c15ull));
	for (size_t i = 0; i < n; i++) {
		uint64_t x = mix(base + (first + i) * 0x9e3779b97f4a7c15ull);
		double u = (double)(x >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0;
		dst[i] = kernels_f32_to_bf16(scale * (float)u);
	}
}
