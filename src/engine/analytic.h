#ifndef SPSIM_ENGINE_ANALYTIC_H
#define SPSIM_ENGINE_ANALYTIC_H

#include "engine/engine.h"
#include "engine/schedule.h"

extern const engine_ops engine_analytic;

/* Closed-form duration of one op for a rank of layout l (collectives: all chunks). */
double engine_op_time(const config_platform *p, const workload_layout *l, const workload_op *op);
/* Durations of every op of a plan, [block][op], blocks micro first then step. */
bool engine_analytic_durations(const config_platform *p, const workload_plan *plan, double ***out, config_error *err);
void engine_durations_free(double **dur, int n);
/* Runs the schedule and writes a Chrome/Perfetto trace of rank 0's streams. */
bool engine_trace_schedule(const engine_input *in, double *const *dur, engine_result *out, config_error *err);
/* The same with shared links (load as engine_analytic_loads, NULL for none). */
bool engine_trace_schedule_shared(const engine_input *in, double *const *dur, engine_op_load *const *load,
				  engine_result *out, config_error *err);

#endif
