/* report: one run or a comparison as a table or JSON (CSV rows: plan/rows.c). */
#ifndef SPSIM_REPORT_REPORT_H
#define SPSIM_REPORT_REPORT_H

#include <stdio.h>

#include <jansson.h>

#include "engine/engine.h"

typedef enum report_format { REPORT_TABLE, REPORT_JSON, REPORT_CSV } report_format;

typedef struct report_run {
	const char *label; /* "ulysses", "basp", "ulysses:sp=4" */
	const config_model *model;
	const config_platform *platform;
	const config_job *job;
	const workload_plan *plan;
	const engine_result *result;
	const char *calibration; /* path or NULL */
	/* BASP with N % B != 0: the parts and (unequal groups) their results; may be NULL */
	const workload_composite *composite;
	const engine_result *part_results;
	/* the run's what-ifs (--slow-gpu, --degrade, ...), NULL or empty for none */
	const config_whatif *whatif;
} report_run;

bool report_format_parse(const char *s, report_format *out);
json_t *report_run_json(const report_run *r);
void report_run_table(FILE *f, const report_run *r);
/* runs[0] is the baseline of the speedups. */
json_t *report_compare_json(const report_run *runs, int n);
void report_compare_table(FILE *f, const report_run *runs, int n);
/* Writes a JSON value to f, indented, with a newline. */
void report_json_print(FILE *f, json_t *v);

/* "1.23 s", "456 ms", "7.8 us" */
const char *report_time(double s, char *buf, size_t len);
/* "31.2 GiB" */
const char *report_bytes(double b, char *buf, size_t len);

#endif
