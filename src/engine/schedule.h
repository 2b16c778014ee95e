/* The op program's max-plus schedule (workload.h), evaluated with given op durations.
 * Used by the analytic engine; any engine whose op durations do not depend on what runs
 * at the same time can use it. */
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

/* Exposed SP and ZeRO time from the step time and the totals in b; side[0]: SP
 * communication on side streams (ring attention), side[1]: ZeRO collectives on the main
 * stream, accumulated with engine_side_add. Shared by every engine. */
void engine_side_add(const workload_op *op, double t, double side[2]);
void engine_breakdown_expose(engine_breakdown *b, double step, const double side[2]);

#endif
