/* The op program's schedule (workload.h), evaluated with given op durations.
 *
 * engine_schedule_run is the max-plus recurrence: every op takes its given duration,
 * whatever runs beside it. engine_schedule_run_shared adds shared capacity: concurrent
 * communication ops on different streams that load the same link share it (max-min
 * fairness over their flows, docs/model.md §5), so an op's duration depends on what runs
 * at the same time; it falls back to the max-plus recurrence when no two streams carry
 * communication. Used by the analytic engine. */
#ifndef SPSIM_ENGINE_SCHEDULE_H
#define SPSIM_ENGINE_SCHEDULE_H

#include "engine/engine.h"

/* Called for every executed op instance when non-NULL (disables extrapolation). */
typedef void (*engine_schedule_visit)(void *ctx, const workload_block *blk, int iteration, int micro_step,
				      const workload_op *op, double start, double end);

/* dur[b][j]: duration of op j of block b, blocks numbered micro first, then step.
 * Fills step_time, breakdown and fwd/bwd times of r. Returns false on an invalid program
 * (a dependency on a later op of the same iteration). */
bool engine_schedule_run(const workload_program *prog, double *const *dur, engine_result *r,
			 engine_schedule_visit visit, void *ctx, config_error *err);

/* --------------------------------------------------------- shared links --- */
/* The shared resources of a rank class (linkload.c): the NIC it sends through, the leaf
 * uplink of an oversubscribed fat-tree, the GPU's NVSwitch port or PCIe link, and on an
 * NVLink mesh the pair link to each local GPU. */
enum {
	ENGINE_LINK_NIC,
	ENGINE_LINK_LEAF,
	ENGINE_LINK_PORT,
	ENGINE_LINK_PAIR0, /* pair link to local GPU 1; GPU j is PAIR0 + j - 1 */
	ENGINE_LINK_COUNT = ENGINE_LINK_PAIR0 + 15
};
#define ENGINE_LOAD_MAX 10

/* What one op puts on the links when it runs alone: busy[k] seconds of resource res[k]
 * (its bytes over the link's effective bandwidth) and the flows it keeps there at once per
 * GB/s of that link's bandwidth (its weight in max-min sharing, which equalises flows'
 * bandwidth in bytes/s: linkload.c). Compute ops have n = 0. */
typedef struct engine_op_load {
	int n;
	unsigned char res[ENGINE_LOAD_MAX];
	double busy[ENGINE_LOAD_MAX];
	double flows[ENGINE_LOAD_MAX];
} engine_op_load;

/* The load of op on a group of shape s. */
void engine_op_load_of(const config_platform *p, engine_group_shape s, const workload_op *op, engine_op_load *out);
/* Loads of every op of a plan, [block][op] as engine_analytic_durations; free with free(). */
bool engine_analytic_loads(const config_platform *p, const workload_plan *plan, engine_op_load ***out,
			   config_error *err);

/* True when ops on two different streams carry communication (sharing can matter). */
bool engine_schedule_streams_share(const workload_program *prog);

/* The schedule with shared links: load[b][j] as dur[b][j]. An op runs no faster than its
 * busiest link allows alone (its duration is max(dur, busy)); while several run at once
 * each progresses at the rate max-min fairness over their flows leaves it. load == NULL
 * or a program whose communication is all on one stream: engine_schedule_run. */
bool engine_schedule_run_shared(const workload_program *prog, double *const *dur, engine_op_load *const *load,
				engine_result *r, engine_schedule_visit visit, void *ctx, config_error *err);

#endif
