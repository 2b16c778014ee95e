/* bench/fidelity: spsim against published measurements. Loads the corpus (one YAML file
 * per source under bench/corpus/, see src/fidelity/fidelity.h), predicts every case and
 * prints one row per case:
 *
 *   id kind predicted published unit err_pct
 *
 * then one `kind K cases N geomean_abs_error_pct X max_abs_error_pct Y` line per kind,
 * `sources N`, and last `cases N geomean_abs_error_pct X max_abs_error_pct Y` (geomean: 100 x
 * (exp(mean |ln(predicted / published)|) - 1)). It is a report: exit 0 whatever the
 * errors; exit 2 on a malformed corpus or bad arguments.
 *
 * --kind LIST and --case GLOB select cases (the summary lines then cover the selection, and
 * `sources` counts the sources that have a selected case); --format json prints the same
 * rows and summaries as one JSON object. */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fidelity/fidelity.h"

#ifndef SPSIM_CORPUS_DIR
#define SPSIM_CORPUS_DIR "bench/corpus"
#endif

#define USAGE                                                                                      \
	"usage: bench/fidelity [--corpus DIR] [--engine analytic|simgrid] [--kind LIST] [--case GLOB]\n" \
	"                      [--format text|json]\n"                                                    \
	"  --kind LIST   cases of these kinds only (comma-separated: collective, attention, gemm, step,\n" \
	"                sp_attention)\n"                                                                  \
	"  --case GLOB   cases whose id matches the shell pattern (e.g. 'ntcluster-*alltoall*')\n"       \
	"  --format F    text (default: one row per case, then the summaries) or json\n"

static int usage(const char *msg)
{
	fprintf(stderr, "bench/fidelity: %s\n" USAGE, msg);
	return 2;
}

/* Parses --kind's comma list into want[]; false with msg on an unknown or repeated kind. */
static bool parse_kinds(const char *list, bool want[FID_KIND_COUNT], char *msg, size_t len)
{
	const char *p = list;
	do {
		size_t n = strcspn(p, ",");
		int k = 0;
		while (k < FID_KIND_COUNT &&
		       !(strlen(fidelity_kind_names[k]) == n && strncmp(p, fidelity_kind_names[k], n) == 0))
			k++;
		if (k == FID_KIND_COUNT || want[k]) {
			snprintf(msg, len, "--kind '%s': %s '%.*s', expected kinds among collective, attention, gemm, "
				 "step, sp_attention, each once", list, k == FID_KIND_COUNT ? "unknown kind" : "repeated kind",
				 (int)n, p);
			return false;
		}
		want[k] = true;
		p += n;
	} while (*p++ == ',');
	return true;
}

int main(int argc, char **argv)
{
	const char *dir = SPSIM_CORPUS_DIR, *engine = "analytic", *pattern = NULL, *kinds = NULL, *format = "text";
	/* the value flags, each once: a second one replaced the first without a word */
	const char *const flags[] = {"--corpus", "--engine", "--kind", "--case", "--format"};
	const char **vals[] = {&dir, &engine, &kinds, &pattern, &format};
	bool set[5] = {false};
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			fputs(USAGE, stdout);
			return 0;
		}
		int f = 0;
		while (f < 5 && strcmp(argv[i], flags[f]) != 0)
			f++;
		char msg[512];
		if (f == 5) {
			snprintf(msg, sizeof msg, "unknown argument '%.200s' (or a flag without its value)", argv[i]);
			return usage(msg);
		}
		if (i + 1 == argc || argv[i + 1][0] == '\0') {
			snprintf(msg, sizeof msg, "%s expects a value, got %s", flags[f], i + 1 == argc ? "nothing" : "''");
			return usage(msg);
		}
		if (set[f]) {
			snprintf(msg, sizeof msg, "%s given twice, expected it once", flags[f]);
			return usage(msg);
		}
		set[f] = true;
		*vals[f] = argv[++i];
	}
	if (strcmp(engine, "analytic") != 0 && strcmp(engine, "simgrid") != 0)
		return usage("--engine must be analytic or simgrid");
	if (strcmp(format, "text") != 0 && strcmp(format, "json") != 0)
		return usage("--format must be text or json");
	bool want[FID_KIND_COUNT] = {false};
	if (kinds) {
		char msg[512];
		if (!parse_kinds(kinds, want, msg, sizeof msg))
			return usage(msg);
	} else {
		for (int k = 0; k < FID_KIND_COUNT; k++)
			want[k] = true;
	}
	const bool json = strcmp(format, "json") == 0;
	fidelity_corpus c = {0};
	config_error err;
	if (!fidelity_load_dir(dir, &c, &err)) {
		fprintf(stderr, "bench/fidelity: %s\n", err.msg);
		fidelity_corpus_free(&c);
		return 2;
	}
	size_t cap = (size_t)c.n + 1;
	double *pred = calloc(cap, sizeof *pred), *pub = calloc(cap, sizeof *pub);
	double *kp = calloc(cap, sizeof *kp), *kq = calloc(cap, sizeof *kq);
	int *which = calloc(cap, sizeof *which);
	json_t *out = json ? json_object() : NULL, *rows = json ? json_array() : NULL;
	if (!pred || !pub || !kp || !kq || !which || (json && (!out || !rows))) {
		fprintf(stderr, "bench/fidelity: out of memory\n");
		return 1;
	}
	/* the selection first: an empty one is a mistaken pattern, not a report of zeros */
	int n = 0, status = 0, selected = 0, sources = 0;
	for (int i = 0; i < c.n; i++) {
		const fidelity_case *k = &c.cases[i];
		if (!want[k->kind] || (pattern && fnmatch(pattern, k->id, 0) != 0))
			continue;
		which[selected++] = i;
		int first = 0; /* the sources behind the selected cases (all of them without a selection) */
		while (strcmp(c.cases[which[first]].source, k->source) != 0)
			first++;
		sources += first == selected - 1;
	}
	if (selected == 0) {
		fprintf(stderr, "bench/fidelity: no case of the corpus (%d cases) matches%s%s%s%s%s, expected a selection "
				"that names at least one case\n",
			c.n, kinds ? " --kind " : "", kinds ? kinds : "", pattern ? " --case '" : "", pattern ? pattern : "",
			pattern ? "'" : "");
		status = 2;
		goto done;
	}
	if (!json)
		printf("%-40s %-12s %12s %12s %-12s %9s\n", "id", "kind", "predicted", "published", "unit", "err_pct");
	for (int sel = 0; sel < selected; sel++) {
		const int i = which[sel];
		const fidelity_case *k = &c.cases[i];
		double p = 0;
		if (!fidelity_predict(k, engine, &p, &err) || !(p > 0)) {
			fprintf(stderr, "bench/fidelity: %s:%d:%d: case '%s': %s\n", k->file, k->line, k->col, k->id,
				p > 0 ? err.msg : "no positive prediction");
			status = 2;
			continue;
		}
		pred[n] = p, pub[n] = k->published, which[n] = i, n++;
		if (json)
			json_array_append_new(rows, json_pack("{s:s, s:s, s:s, s:f, s:f, s:s, s:f}", "id", k->id, "kind",
							      fidelity_kind_names[k->kind], "source", k->source,
							      "predicted", p, "published", k->published, "unit",
							      fidelity_metric_units[k->metric], "err_pct",
							      fidelity_err_pct(p, k->published)));
		else
			printf("%-40s %-12s %12.4g %12.4g %-12s %+9.1f\n", k->id, fidelity_kind_names[k->kind], p,
			       k->published, fidelity_metric_units[k->metric], fidelity_err_pct(p, k->published));
	}
	/* Per kind, so that a change to one part of the model shows where it moved. */
	json_t *by_kind = json ? json_array() : NULL;
	for (int kind = 0; kind < FID_KIND_COUNT; kind++) {
		if (!want[kind])
			continue;
		int m = 0;
		for (int j = 0; j < n; j++)
			if (c.cases[which[j]].kind == (fidelity_kind)kind)
				kp[m] = pred[j], kq[m] = pub[j], m++;
		fidelity_summary ks = fidelity_summarize(kp, kq, m);
		if (json)
			json_array_append_new(by_kind, json_pack("{s:s, s:i, s:f, s:f}", "kind", fidelity_kind_names[kind],
								 "cases", ks.n, "geomean_abs_error_pct",
								 ks.geomean_abs_error_pct, "max_abs_error_pct",
								 ks.max_abs_error_pct));
		else
			printf("kind %s cases %d geomean_abs_error_pct %.1f max_abs_error_pct %.1f\n",
			       fidelity_kind_names[kind], ks.n, ks.geomean_abs_error_pct, ks.max_abs_error_pct);
	}
	fidelity_summary s = fidelity_summarize(pred, pub, n);
	if (json) {
		json_object_set_new(out, "engine", json_string(engine));
		json_object_set_new(out, "cases", rows);
		json_object_set_new(out, "kinds", by_kind);
		json_object_set_new(out, "sources", json_integer(sources));
		json_object_set_new(out, "summary", json_pack("{s:i, s:f, s:f}", "cases", s.n, "geomean_abs_error_pct",
							      s.geomean_abs_error_pct, "max_abs_error_pct",
							      s.max_abs_error_pct));
		json_dumpf(out, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12));
		putchar('\n');
	} else {
		printf("sources %d\n", sources);
		printf("cases %d geomean_abs_error_pct %.1f max_abs_error_pct %.1f\n", s.n, s.geomean_abs_error_pct,
		       s.max_abs_error_pct);
	}
done:
	json_decref(out);
	free(pred);
	free(pub);
	free(kp);
	free(kq);
	free(which);
	fidelity_corpus_free(&c);
	return status;
}
