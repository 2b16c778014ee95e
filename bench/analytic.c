/* bench/analytic: how many configurations per second the analytic engine evaluates in one
 * process, over a grid of models x platforms x node counts x strategies x micro-batch x
 * sequence length x ZeRO stage x recompute. Each configuration goes the whole way a sweep
 * point does: job check, op program, memory model, engine. Prints the grid size, then
 * `configs_per_second N` as its last line. Usage: bench/analytic [MIN_CONFIGS] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench.h"
#include "engine/engine.h"

int main(int argc, char **argv)
{
	long min_configs;
	int status = bench_min_configs("bench/analytic", "Configurations per second of the analytic engine over a grid of models, platforms, node counts,\nstrategies, micro-batches, sequence lengths, ZeRO stages and recompute,", argc, argv, &min_configs);
	if (status >= 0)
		return status;
	static const char *const models[] = {"llama-3.2-1b", "llama-3.2-3b", "llama-3.1-8b", "qwen1.5-7b",
					     "llama-3.1-70b"};
	static const char *const platforms[] = {"a100-2x4-ib400", "dgx-a100", "dgx-h100", "hgx-h200"};
	static const int nodes[] = {1, 2, 4, 8, 16};
	static const int batches[] = {1, 2, 4, 8};
	static const long seqs[] = {4096, 8192, 16384, 32768, 65536};
	enum { NM = 5, NP = 4, NN = 5, NB = 4, NS = 5 };
	config_model m[NM];
	config_platform p[NP];
	config_error err;
	for (int i = 0; i < NM; i++)
		if (!config_load_model(models[i], &m[i], &err)) {
			fprintf(stderr, "bench/analytic: %s\n", err.msg);
			return 1;
		}
	for (int i = 0; i < NP; i++)
		if (!config_load_platform(platforms[i], &p[i], &err)) {
			fprintf(stderr, "bench/analytic: %s\n", err.msg);
			return 1;
		}
	const engine_ops *e = engine_find("analytic");
	long evaluated = 0, rejected = 0, fits = 0;
	double checksum = 0;
	double t0 = bench_now();
	for (int rounds = 0; evaluated < min_configs; rounds++) {
		for (int a = 0; a < NM; a++)
			for (int b = 0; b < NP; b++)
				for (int c = 0; c < NN; c++)
					for (int st = 0; st < 2; st++)
						for (int d = 0; d < NB; d++)
							for (int s = 0; s < NS; s++)
								for (int z = 0; z <= 3; z++)
									for (int r = 0; r < 2; r++) {
		config_platform pl = p[b];
		pl.nodes = nodes[c];
		config_job job;
		config_job_defaults(&job);
		job.strategy = st ? CONFIG_STRATEGY_BASP : CONFIG_STRATEGY_ULYSSES;
		job.micro_batch = batches[d];
		job.seq_len = seqs[s];
		job.zero_stage = z;
		job.recompute = r ? CONFIG_RECOMPUTE_FULL : CONFIG_RECOMPUTE_NONE;
		if (!workload_check(&m[a], &pl, &job, &err)) {
			rejected++;
			continue;
		}
		workload_plan plan;
		engine_result res;
		if (!workload_plan_make(&m[a], &pl, &job, &plan, &err))
			return 1;
		engine_input in = {.model = &m[a], .platform = &pl, .job = &job, .plan = &plan};
		if (!e->run(&in, &res, &err))
			return 1;
		checksum += res.step_time;
		fits += plan.memory.fits;
		workload_plan_finish(&plan);
		evaluated++;
	}
		(void)rounds;
	}
	double dt = bench_now() - t0;
	printf("grid %d models x %d platforms x %d node counts x 2 strategies x %d micro-batches x %d lengths x 4 ZeRO x 2 recompute\n",
	       NM, NP, NN, NB, NS);
	printf("evaluated %ld configurations (%ld rejected by the job check, %ld fit in memory), checksum %.6g\n",
	       evaluated, rejected, fits, checksum);
	printf("wall_s %.3f\n", dt);
	printf("configs_per_second %.0f\n", evaluated / dt);
	return 0;
}
