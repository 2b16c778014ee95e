/* Chrome trace / Perfetto JSON writer (the "Trace Event Format": complete events "X" with
 * microsecond timestamps, process and thread names as "M" metadata events). */
#ifndef SPSIM_REPORT_TRACE_H
#define SPSIM_REPORT_TRACE_H

#include <stdbool.h>

#include "config/config.h"
#include "workload/workload.h"

typedef struct report_trace report_trace;

report_trace *report_trace_create(void);
void report_trace_destroy(report_trace *t);
void report_trace_process(report_trace *t, int pid, const char *name);
void report_trace_thread(report_trace *t, int pid, int tid, const char *name);
/* One slice of an op: name, layer (-1: none), FLOPs or bytes as args. Times in seconds. */
void report_trace_op(report_trace *t, int pid, int tid, const workload_op *op, int layer, int micro_step,
		     double start, double end);
/* Writes the trace to path (atomically: a temporary file renamed over it). */
bool report_trace_write(report_trace *t, const char *path, config_error *err);

/* Thread ids per stream kind, shared by every engine: compute, SP comm, ZeRO comm,
 * ZeRO prefetch. */
int report_trace_tid(int rank_in_node, const workload_op *op);
const char *report_trace_tid_name(int tid_kind);
#define REPORT_TRACE_TIDS_PER_GPU 4

#endif
