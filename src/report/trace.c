#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "report/trace.h"

struct report_trace {
	json_t *events;
};

report_trace *report_trace_create(void)
{
	report_trace *t = calloc(1, sizeof *t);
	if (!t)
		return NULL;
	t->events = json_array();
	if (!t->events) {
		free(t);
		return NULL;
	}
	return t;
}

void report_trace_destroy(report_trace *t)
{
	if (!t)
		return;
	json_decref(t->events);
	free(t);
}

static void meta(report_trace *t, const char *what, int pid, int tid, const char *name)
{
	json_t *e = json_pack("{s:s, s:s, s:i, s:i, s:{s:s}}", "name", what, "ph", "M", "pid", pid, "tid", tid, "args",
			      "name", name);
	if (e)
		json_array_append_new(t->events, e);
}

void report_trace_process(report_trace *t, int pid, const char *name) { meta(t, "process_name", pid, 0, name); }

void report_trace_thread(report_trace *t, int pid, int tid, const char *name)
{
	meta(t, "thread_name", pid, tid, name);
	json_t *e = json_pack("{s:s, s:s, s:i, s:i, s:{s:i}}", "name", "thread_sort_index", "ph", "M", "pid", pid, "tid",
			      tid, "args", "sort_index", tid);
	if (e)
		json_array_append_new(t->events, e);
}

int report_trace_tid(int rank_in_node, const workload_op *op)
{
	int kind = 0;
	if (op->cat == WL_CAT_SP_COMM)
		kind = 1;
	else if (op->cat == WL_CAT_ZERO_COMM || op->cat == WL_CAT_HOST_COMM) /* the track of the stream */
		kind = op->stream == WL_STREAM_PREFETCH ? 3 : 2;
	return rank_in_node * REPORT_TRACE_TIDS_PER_GPU + kind;
}

const char *report_trace_tid_name(int tid_kind)
{
	/* the side streams' tracks also carry activation offload's host copies (their slots) */
	static const char *const names[REPORT_TRACE_TIDS_PER_GPU] = {"compute", "sp comm", "zero comm / host copies",
								      "zero prefetch / host copies"};
	return names[tid_kind % REPORT_TRACE_TIDS_PER_GPU];
}

void report_trace_op(report_trace *t, int pid, int tid, const workload_op *op, int layer, int micro_step,
		     double start, double end)
{
	json_t *args = json_object();
	if (!args)
		return;
	if (layer >= 0)
		json_object_set_new(args, "layer", json_integer(layer));
	json_object_set_new(args, "micro_step", json_integer(micro_step));
	if (op->cat == WL_CAT_HOST_COMM) {
		json_object_set_new(args, "bytes", json_real(op->bytes));
		json_object_set_new(args, "link", json_string("host"));
	} else if (op->kernel == WL_KERNEL_HOST_ADAM) {
		json_object_set_new(args, "bytes", json_real(op->bytes));
		json_object_set_new(args, "memory", json_string("host"));
	} else if (op->kind == WL_OP_COMPUTE) {
		if (op->flops > 0)
			json_object_set_new(args, "flops", json_real(op->flops));
		if (op->hbm_bytes > 0)
			json_object_set_new(args, "hbm_bytes", json_real(op->hbm_bytes));
	} else {
		json_object_set_new(args, "bytes", json_real(op->bytes));
		json_object_set_new(args, "collective", json_string(workload_coll_name(op->coll)));
		json_object_set_new(args, "algorithm", json_string(workload_alg_name(op->alg)));
		json_object_set_new(args, "group", json_string(op->group == WL_GROUP_SP ? "sp" : "world"));
	}
	const char *cat = op->cat == WL_CAT_COMPUTE    ? "compute"
			  : op->cat == WL_CAT_SP_COMM  ? "sp_comm"
			  : op->cat == WL_CAT_HOST_COMM ? "host_comm"
						       : "zero_comm";
	json_t *e = json_pack("{s:s, s:s, s:s, s:f, s:f, s:i, s:i, s:o}", "name", op->name, "cat", cat, "ph", "X", "ts",
			      start * 1e6, "dur", (end - start) * 1e6, "pid", pid, "tid", tid, "args", args);
	if (e)
		json_array_append_new(t->events, e);
}

bool report_trace_write(report_trace *t, const char *path, config_error *err)
{
	char tmp[CONFIG_PATH_MAX + 16];
	json_t *root = json_pack("{s:O, s:s}", "traceEvents", t->events, "displayTimeUnit", "ms");
	if (!root)
		return config_fail(err, "%s: out of memory building the trace", path);
	config_error oe;
	FILE *f = config_open_beside(path, tmp, sizeof tmp, &oe);
	if (!f) {
		json_decref(root);
		return config_fail(err, "%s: cannot write the trace (check the folder exists and is writable)", path);
	}
	int rc = json_dumpf(root, f, JSON_COMPACT);
	json_decref(root);
	if (fclose(f) != 0)
		rc = -1;
	if (rc != 0) {
		unlink(tmp);
		return config_fail(err, "%s: cannot write the trace (check the folder exists and is writable)", path);
	}
	if (rename(tmp, path) != 0) {
		unlink(tmp);
		return config_fail(err, "%s: cannot move the trace into place", path);
	}
	return true;
}
