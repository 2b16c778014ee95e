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
 * Usage: bench/fidelity [--corpus DIR] [--engine analytic|simgrid] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fidelity/fidelity.h"

#ifndef SPSIM_CORPUS_DIR
#define SPSIM_CORPUS_DIR "bench/corpus"
#endif

static int usage(const char *msg)
{
	fprintf(stderr, "bench/fidelity: %s\nusage: bench/fidelity [--corpus DIR] [--engine analytic|simgrid]\n", msg);
	return 2;
}

int main(int argc, char **argv)
{
	const char *dir = SPSIM_CORPUS_DIR, *engine = "analytic";
	bool dir_set = false, engine_set = false;
	for (int i = 1; i < argc; i++) {
		bool is_corpus = strcmp(argv[i], "--corpus") == 0, is_engine = strcmp(argv[i], "--engine") == 0;
		if ((is_corpus || is_engine) && i + 1 == argc)
			return usage(is_corpus ? "--corpus expects a directory (DIR), got nothing"
					       : "--engine expects analytic or simgrid, got nothing");
		/* a second one replaced the first without a word: which corpus or engine ran? */
		if ((is_corpus && dir_set) || (is_engine && engine_set))
			return usage(is_corpus ? "--corpus given twice, expected one directory"
					       : "--engine given twice, expected one engine");
		if (is_corpus) {
			dir = argv[++i];
			dir_set = true;
		} else if (is_engine) {
			engine = argv[++i];
			engine_set = true;
			if (strcmp(engine, "analytic") != 0 && strcmp(engine, "simgrid") != 0)
				return usage("--engine must be analytic or simgrid");
		} else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			printf("usage: bench/fidelity [--corpus DIR] [--engine analytic|simgrid]\n");
			return 0;
		} else {
			char msg[256];
			snprintf(msg, sizeof msg, "unknown argument '%s' (or a flag without its value)", argv[i]);
			return usage(msg);
		}
	}
	fidelity_corpus c = {0};
	config_error err;
	if (!fidelity_load_dir(dir, &c, &err)) {
		fprintf(stderr, "bench/fidelity: %s\n", err.msg);
		fidelity_corpus_free(&c);
		return 2;
	}
	size_t cap = (size_t)c.n;
	double *pred = calloc(cap, sizeof *pred), *pub = calloc(cap, sizeof *pub);
	double *kp = calloc(cap, sizeof *kp), *kq = calloc(cap, sizeof *kq);
	int *which = calloc(cap, sizeof *which);
	if (!pred || !pub || !kp || !kq || !which) {
		fprintf(stderr, "bench/fidelity: out of memory\n");
		return 1;
	}
	int n = 0, status = 0;
	printf("%-40s %-12s %12s %12s %-12s %9s\n", "id", "kind", "predicted", "published", "unit", "err_pct");
	for (int i = 0; i < c.n; i++) {
		const fidelity_case *k = &c.cases[i];
		double p = 0;
		if (!fidelity_predict(k, engine, &p, &err) || !(p > 0)) {
			fprintf(stderr, "bench/fidelity: %s:%d:%d: case '%s': %s\n", k->file, k->line, k->col, k->id,
				p > 0 ? err.msg : "no positive prediction");
			status = 2;
			continue;
		}
		pred[n] = p, pub[n] = k->published, which[n] = i, n++;
		printf("%-40s %-12s %12.4g %12.4g %-12s %+9.1f\n", k->id, fidelity_kind_names[k->kind], p, k->published,
		       fidelity_metric_units[k->metric], fidelity_err_pct(p, k->published));
	}
	/* Per kind, so that a change to one part of the model shows where it moved. */
	for (int kind = 0; kind < FID_KIND_COUNT; kind++) {
		int m = 0;
		for (int j = 0; j < n; j++)
			if (c.cases[which[j]].kind == (fidelity_kind)kind)
				kp[m] = pred[j], kq[m] = pub[j], m++;
		fidelity_summary ks = fidelity_summarize(kp, kq, m);
		printf("kind %s cases %d geomean_abs_error_pct %.1f max_abs_error_pct %.1f\n", fidelity_kind_names[kind], ks.n,
		       ks.geomean_abs_error_pct, ks.max_abs_error_pct);
	}
	fidelity_summary s = fidelity_summarize(pred, pub, n);
	printf("sources %d\n", c.n_sources);
	printf("cases %d geomean_abs_error_pct %.1f max_abs_error_pct %.1f\n", s.n, s.geomean_abs_error_pct,
	       s.max_abs_error_pct);
	free(pred);
	free(pub);
	free(kp);
	free(kq);
	free(which);
	fidelity_corpus_free(&c);
	return status;
}
