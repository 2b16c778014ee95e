/* Rank placement: which GPU each world rank runs on. The workload layout forms groups
 * from contiguous rank ranges; placement decides whether those ranges share nodes. */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"

bool engine_placement_parse(const char *text, engine_options *opt, config_error *err)
{
	if (!text)
		return config_fail(err, "--placement needs a value: contiguous, strided or random:SEED");
	if (strcmp(text, "contiguous") == 0) {
		opt->placement = ENGINE_PLACE_CONTIGUOUS;
		opt->placement_seed = 0;
		return true;
	}
	if (strcmp(text, "strided") == 0) {
		opt->placement = ENGINE_PLACE_STRIDED;
		opt->placement_seed = 0;
		return true;
	}
	if (strncmp(text, "random:", 7) == 0) {
		const char *s = text + 7;
		char *end;
		errno = 0;
		unsigned long long v = strtoull(s, &end, 10);
		if (*s == '\0' || *s == '-' || *s == '+' || *end != '\0' || errno == ERANGE || v > ULONG_MAX)
			return config_fail(err, "--placement %s: the seed must be a non-negative integer, as in random:42",
					   text);
		opt->placement = ENGINE_PLACE_RANDOM;
		opt->placement_seed = (unsigned long)v;
		return true;
	}
	if (strcmp(text, "random") == 0)
		return config_fail(err, "--placement random needs a seed, as in random:42 (same seed, same placement)");
	return config_fail(err, "--placement '%s' is not known; expected contiguous, strided or random:SEED", text);
}

/* splitmix64 (Steele, Lea, Flood 2014): a fixed generator, so a seed means the same map
 * on every machine and libc. */
static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Unbiased draw in [0, n) by rejection. */
static uint64_t below(uint64_t *s, uint64_t n)
{
	uint64_t limit = UINT64_MAX - UINT64_MAX % n;
	uint64_t v;
	do
		v = splitmix64(s);
	while (v >= limit);
	return v % n;
}

bool engine_placement_map(const config_platform *p, int world, const engine_options *opt, int *gpu_of_rank,
			  config_error *err)
{
	int G = p->gpus_per_node;
	if (world < 1 || world > config_platform_gpus(p))
		return config_fail(err, "placement: %d ranks do not fit platform '%s' (%d GPUs)", world, p->name,
				   config_platform_gpus(p));
	/* The job occupies the first ceil(world / G) nodes; the last may be partly used. */
	int nodes = (world + G - 1) / G;
	switch (opt->placement) {
	case ENGINE_PLACE_CONTIGUOUS:
		for (int r = 0; r < world; r++)
			gpu_of_rank[r] = r;
		return true;
	case ENGINE_PLACE_STRIDED: {
		/* deal ranks round-robin over the nodes: local slot major, node minor */
		int r = 0;
		for (int j = 0; j < G && r < world; j++)
			for (int u = 0; u < nodes && r < world; u++) {
				int g = u * G + j;
				if (g < world)
					gpu_of_rank[r++] = g;
			}
		return true;
	}
	case ENGINE_PLACE_RANDOM: {
		uint64_t s = opt->placement_seed;
		for (int r = 0; r < world; r++)
			gpu_of_rank[r] = r;
		for (int i = world - 1; i > 0; i--) { /* Fisher-Yates */
			int j = (int)below(&s, (uint64_t)i + 1);
			int t = gpu_of_rank[i];
			gpu_of_rank[i] = gpu_of_rank[j];
			gpu_of_rank[j] = t;
		}
		return true;
	}
	}
	return config_fail(err, "internal: unknown placement %d", (int)opt->placement);
}
