/* A sweep: the spec's grid, minus what the output already holds, through the worker pool,
 * into the output; spread over the ranks of a launcher when a plan_dist is given.
 *
 * With several ranks, rank 0 alone reads and writes the output (no shared file system is
 * needed): it finds what is left to do and broadcasts that list; rank r takes every
 * size-th point from position r; every other rank sends each row to rank 0 as it
 * finishes, and rank 0 writes it as if it were its own. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plan/plan.h"

typedef struct sweep {
	const plan_spec *s;
	const plan_sweep_opts *o;
	plan_dist *dist;
	plan_output *out;
	plan_progress prog;
	long rows, ok, invalid, failed;
	bool write_failed, send_failed;
	config_error werr;
} sweep;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static json_t *eval(void *ctx, long task)
{
	sweep *w = ctx;
	return w->o->eval ? w->o->eval(w->s, task, w->o->eval_ctx) : plan_point_eval(w->s, task);
}

static bool isolated(void *ctx, long task)
{
	const plan_spec *s = ((sweep *)ctx)->s;
	plan_point p;
	plan_point_at(s, task, &p);
	return plan_engine_isolated(s->values[PLAN_AXIS_ENGINE][p.at[PLAN_AXIS_ENGINE]].text);
}

static json_t *failed(void *ctx, long task, const char *why) { return plan_point_failed(((sweep *)ctx)->s, task, why); }

/* A row reached rank 0 (its own or another rank's): count it, write it. */
static void record(sweep *w, const json_t *row)
{
	const char *st = plan_row_str(row, "status");
	w->rows++;
	if (strcmp(st, "ok") == 0)
		w->ok++;
	else if (strcmp(st, "invalid") == 0)
		w->invalid++;
	else
		w->failed++;
	if (w->out && !w->write_failed && !plan_output_add(w->out, row, &w->werr))
		w->write_failed = true;
	plan_progress_update(&w->prog, w->rows, w->failed);
}

static void on_line(void *ctx, const char *line)
{
	json_t *row = json_loads(line, 0, NULL);
	if (row && json_is_object(row))
		record(ctx, row);
	json_decref(row);
}

static void done(void *ctx, long task, const json_t *row)
{
	sweep *w = ctx;
	if (w->dist && w->dist->rank > 0) {
		char *line = json_dumps(row, JSON_COMPACT | JSON_REAL_PRECISION(17));
		if (!line || !w->dist->send(w->dist, line, &w->werr))
			w->send_failed = true;
		free(line);
		w->rows++;
		return;
	}
	record(w, row);
}

static void tick(void *ctx)
{
	sweep *w = ctx;
	if (w->dist && w->dist->rank == 0 && !w->send_failed &&
	    w->dist->recv(w->dist, false, on_line, w, &w->werr) < 0)
		w->send_failed = true;
}

bool plan_sweep_run(const plan_spec *s, const plan_sweep_opts *o, plan_sweep_summary *sum, config_error *err)
{
	double t0 = now();
	sweep w = {.s = s, .o = o, .dist = o->dist};
	int rank = w.dist ? w.dist->rank : 0, size = w.dist ? w.dist->size : 1;
	FILE *log = o->log ? o->log : stderr;
	memset(sum, 0, sizeof *sum);
	sum->points = s->n_points;

	/* Rank 0: what is left to do. */
	long *todo = NULL, n_todo = 0;
	bool opened = true;
	config_error oerr = {""};
	if (rank == 0) {
		opened = plan_output_open(o->out_dir, o->mode, o->retry_failed, &w.out, &oerr);
		if (opened) {
			todo = malloc((size_t)(s->n_points ? s->n_points : 1) * sizeof *todo);
			if (!todo) {
				opened = config_fail(&oerr, "out of memory");
			} else {
				char key[4096];
				for (long i = 0; i < s->n_points; i++) {
					plan_point p;
					plan_point_at(s, i, &p);
					plan_point_key(s, &p, key, sizeof key);
					if (!plan_output_done(w.out, key))
						todo[n_todo++] = i;
				}
			}
		}
	}
	if (w.dist) {
		long hdr[2] = {opened, n_todo};
		if (!w.dist->bcast(w.dist, hdr, sizeof hdr, err))
			goto fail;
		if (!hdr[0]) {
			if (rank == 0)
				*err = oerr;
			else
				config_fail(err, "rank 0 could not open the output; see its message");
			goto fail;
		}
		n_todo = hdr[1];
		if (rank > 0 && !(todo = malloc((size_t)(n_todo ? n_todo : 1) * sizeof *todo))) {
			config_fail(err, "out of memory");
			goto fail;
		}
		if (n_todo && !w.dist->bcast(w.dist, todo, (size_t)n_todo * sizeof *todo, err))
			goto fail;
	} else if (!opened) {
		*err = oerr;
		goto fail;
	}
	sum->already = s->n_points - n_todo;
	if (rank == 0 && !o->quiet) {
		fprintf(log, "sweep %s: %ld points", s->name, s->n_points);
		if (sum->already)
			fprintf(log, ", %ld already in %s", sum->already, o->out_dir);
		if (size > 1)
			fprintf(log, ", %ld to run over %d ranks\n", n_todo, size);
		else
			fprintf(log, ", %ld to run\n", n_todo);
	}

	/* This rank's share: every size-th point from position rank. */
	long n_mine = 0;
	for (long i = rank; i < n_todo; i += size)
		todo[n_mine++] = todo[i];
	plan_progress_start(&w.prog, log, n_todo, o->quiet || rank > 0);
	plan_pool_ops ops = {.ctx = &w, .eval = eval, .isolated = isolated, .failed = failed, .done = done, .tick = tick};
	plan_pool_opts po = {.jobs = o->jobs, .timeout_s = o->timeout_s};
	bool ok = plan_pool_run(todo, n_mine, &po, &ops, err);
	if (w.dist) {
		if (rank > 0) {
			ok = w.dist->send(w.dist, NULL, ok ? err : &w.werr) && ok;
		} else {
			int left;
			while ((left = w.dist->recv(w.dist, true, on_line, &w, &w.werr)) > 0)
				;
			if (left < 0)
				w.send_failed = true;
		}
	}
	if (rank == 0)
		plan_progress_end(&w.prog);
	if (ok && (w.write_failed || w.send_failed)) {
		*err = w.werr;
		ok = false;
	}
	if (rank == 0) {
		/* Ordered by point once the grid is complete, so finished outputs compare. */
		bool complete = ok && w.rows == n_todo;
		if (!plan_output_close(w.out, complete, ok ? err : &oerr))
			ok = false;
		w.out = NULL;
	}
	sum->ran = w.rows;
	sum->ok = w.ok;
	sum->invalid = w.invalid;
	sum->failed = w.failed;
	sum->wall_s = now() - t0;
	free(todo);
	return ok;
fail:
	plan_output_close(w.out, false, NULL);
	free(todo);
	return false;
}
