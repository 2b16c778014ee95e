/* bench/plan: how fast the planner searches. One `spsim plan`-style query per round over
 * several models, every shipped 8-GPU platform and GPU budgets from 8 to 1024, each
 * configuration going the whole way: job check, memory filter, op program and analytic
 * engine for those that fit, then the ranking. Rounds repeat until MIN_CONFIGS
 * configurations were searched (default 10000). Prints the search size, then
 * `configs_per_second N` as its last line. Usage: bench/plan [MIN_CONFIGS] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench.h"
#include "plan/plan.h"

int main(int argc, char **argv)
{
	long min_configs;
	int status = bench_min_configs("bench/plan", "How fast the planner searches: plan queries over models, platforms and GPU budgets,", argc, argv, &min_configs);
	if (status >= 0)
		return status;
	static const char *const models[] = {"llama-3.1-8b", "qwen1.5-7b", "llama-3.1-70b"};
	static const char *const platforms[] = {"dgx-a100", "dgx-h100", "hgx-h200"};
	static const int budgets[] = {8, 16, 32, 64, 128, 256, 512, 1024};
	enum { NM = 3, NP = 3, NB = 8 };
	config_model m[NM];
	config_platform p[NP];
	double price[NP] = {1.8, 4.0, 5.0};
	config_error err;
	for (int i = 0; i < NM; i++)
		if (!config_load_model(models[i], &m[i], &err)) {
			fprintf(stderr, "bench/plan: %s\n", err.msg);
			return 1;
		}
	for (int i = 0; i < NP; i++)
		if (!config_load_platform(platforms[i], &p[i], &err)) {
			fprintf(stderr, "bench/plan: %s\n", err.msg);
			return 1;
		}
	long searched = 0, fit = 0, rounds = 0;
	double best = 0, t0 = bench_now();
	while (searched < min_configs) {
		for (int i = 0; i < NM; i++) {
			plan_query q = {.model = &m[i], .platforms = p, .price = price, .n_platforms = NP, .budgets = budgets,
					.n_budgets = NB, .seq_len = 32768, .global_tokens = 1024L * 32768};
			plan_candidate *c;
			long n;
			plan_search_stats st;
			if (!plan_search(&q, &c, &n, &st, &err)) {
				fprintf(stderr, "bench/plan: %s\n", err.msg);
				return 1;
			}
			plan_rank(c, n, PLAN_RANK_COST);
			plan_rank(c, n, PLAN_RANK_THROUGHPUT);
			n = plan_merge(c, n);
			if (n && c[0].tokens_per_s > best)
				best = c[0].tokens_per_s;
			searched += st.searched;
			fit += st.fit;
			free(c);
		}
		rounds++;
	}
	double dt = bench_now() - t0;
	printf("query: %d models x %d platforms x %d GPU budgets (8..1024), seq 32K, global batch 1024 sequences\n", NM, NP,
	       NB);
	printf("searched %ld configurations in %ld round%s (%ld fit in memory and were evaluated), best %.0f tokens/s\n",
	       searched, rounds, rounds == 1 ? "" : "s", fit, best);
	printf("wall_s %.3f\n", dt);
	printf("configs_per_second %.0f\n", searched / dt);
	return 0;
}
