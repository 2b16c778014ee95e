/* Sweep output: DIR/points.jsonl is the record, appended and flushed as each row arrives;
 * DIR/points.csv holds the same rows and is rebuilt from the record whenever the record is
 * rewritten (resume, final sort), so the two never disagree for long. A line without its
 * newline is a row cut short by an interruption: resume drops it and runs the point again. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plan/plan.h"

struct plan_output {
	char jsonl[CONFIG_PATH_MAX + 32], csv[CONFIG_PATH_MAX + 32];
	FILE *fj, *fc;
	json_t *done; /* point key -> true */
	long count;
};

/* mkdir -p: dir and every missing folder above it */
bool plan_mkdir_p(const char *dir, config_error *err)
{
	char buf[CONFIG_PATH_MAX];
	if (snprintf(buf, sizeof buf, "%s", dir) >= (int)sizeof buf)
		return config_fail(err, "%s: path too long", dir);
	for (char *p = buf + 1;; p++) {
		if (*p == '/' || *p == '\0') {
			char c = *p;
			*p = '\0';
			if (mkdir(buf, 0777) != 0 && errno != EEXIST)
				return config_fail(err, "cannot create directory %s: %s", buf, strerror(errno));
			*p = c;
			if (!c)
				break;
		}
	}
	struct stat st;
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
		return config_fail(err, "%s exists and is not a directory, expected an output directory", dir);
	return true;
}

static long file_size(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* Reads the rows of a record into an array (file order). A missing file is an empty record.
 * The last line without its newline is a row cut by an interruption and is left out; any
 * other line that is not a row (a JSON object with a 'point' string; blank lines aside) is
 * an error at its line: resume rewrites the record, and would lose it without a word. */
static bool read_record(const char *path, json_t **rows, config_error *err)
{
	*rows = json_array();
	FILE *f = fopen(path, "r");
	if (!f) {
		if (errno == ENOENT)
			return true;
		json_decref(*rows);
		return config_fail(err, "cannot read %s: %s", path, strerror(errno));
	}
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	long lineno = 0;
	bool ok = true;
	while (ok && (n = getline(&line, &cap, f)) > 0) {
		lineno++;
		if (line[n - 1] != '\n')
			break; /* cut short: its point runs again */
		if (n == 1)
			continue;
		json_t *o = json_loadb(line, (size_t)n - 1, 0, NULL);
		if (o && json_is_object(o) && json_is_string(json_object_get(o, "point")))
			json_array_append_new(*rows, o);
		else {
			json_decref(o);
			ok = config_fail(err,
					 "%s:%ld:1: not a sweep row, expected one JSON object with a 'point' key per line "
					 "(as spsim sweep writes them); remove the line, or pass --force to discard the record "
					 "and start again",
					 path, lineno);
		}
	}
	free(line);
	fclose(f);
	if (!ok) {
		json_decref(*rows);
		*rows = NULL;
	}
	return ok;
}

static bool write_line(FILE *f, const json_t *row)
{
	char *s = json_dumps(row, JSON_COMPACT | JSON_REAL_PRECISION(17));
	if (!s)
		return false;
	bool ok = fputs(s, f) >= 0 && fputc('\n', f) != EOF;
	free(s);
	return ok;
}

/* Replaces the record and the CSV with rows, through temporary files renamed into place. */
static bool rewrite(plan_output *o, const json_t *rows, config_error *err)
{
	char tj[sizeof o->jsonl + 8] = "", tc[sizeof o->csv + 8] = "";
	config_error oe;
	FILE *fj = config_open_beside(o->jsonl, tj, sizeof tj, &oe);
	FILE *fc = fj ? config_open_beside(o->csv, tc, sizeof tc, &oe) : NULL;
	bool ok = fj && fc;
	if (ok) {
		plan_row_csv_header(fc);
		size_t i;
		const json_t *r;
		json_array_foreach(rows, i, r)
		{
			ok = ok && write_line(fj, r);
			plan_row_csv(fc, r);
		}
	}
	if (fj && fclose(fj) != 0)
		ok = false;
	if (fc && fclose(fc) != 0)
		ok = false;
	if (!ok || rename(tj, o->jsonl) != 0 || rename(tc, o->csv) != 0) {
		int e = errno;
		if (fj)
			unlink(tj);
		if (fc)
			unlink(tc);
		return config_fail(err, "cannot rewrite %s: %s", o->jsonl, strerror(e));
	}
	return true;
}

bool plan_output_check(const char *dir, plan_output_mode mode, config_error *err)
{
	struct stat st;
	if (stat(dir, &st) == 0 && !S_ISDIR(st.st_mode))
		return config_fail(err, "%s exists and is not a directory, expected an output directory", dir);
	char j[CONFIG_PATH_MAX + 16], c[CONFIG_PATH_MAX + 16];
	snprintf(j, sizeof j, "%s/points.jsonl", dir);
	snprintf(c, sizeof c, "%s/points.csv", dir);
	if (mode == PLAN_OUTPUT_NEW && (file_size(j) > 0 || file_size(c) > 0))
		return config_fail(err,
				   "%s already holds sweep output (points.jsonl, points.csv); pass --resume to continue "
				   "that sweep or --force to discard it and start again",
				   dir);
	if (mode == PLAN_OUTPUT_RESUME) { /* a record resume cannot keep whole is found before any point runs */
		json_t *rows;
		if (!read_record(j, &rows, err))
			return false;
		json_decref(rows);
	}
	return true;
}

bool plan_output_open(const char *dir, plan_output_mode mode, bool retry_failed, plan_output **out,
		      config_error *err)
{
	*out = NULL;
	if (!plan_output_check(dir, mode, err) || !plan_mkdir_p(dir, err))
		return false;
	plan_output *o = calloc(1, sizeof *o);
	if (!o)
		return config_fail(err, "out of memory");
	snprintf(o->jsonl, sizeof o->jsonl, "%s/points.jsonl", dir);
	snprintf(o->csv, sizeof o->csv, "%s/points.csv", dir);
	o->done = json_object();
	long sj = file_size(o->jsonl), sc = file_size(o->csv);
	bool exists = sj > 0 || sc > 0;
	json_t *rows = json_array();
	if (exists && mode == PLAN_OUTPUT_RESUME) {
		json_decref(rows);
		if (!read_record(o->jsonl, &rows, err)) {
			json_decref(o->done);
			free(o);
			return false;
		}
		/* Keep the first row of each point; with retry_failed, let errors run again. */
		json_t *keep = json_array();
		size_t i;
		json_t *r;
		json_array_foreach(rows, i, r)
		{
			const char *key = plan_row_str(r, "point");
			if (json_object_get(o->done, key))
				continue;
			if (retry_failed && strcmp(plan_row_str(r, "status"), "error") == 0)
				continue;
			json_object_set_new(o->done, key, json_true());
			json_array_append(keep, r);
		}
		json_decref(rows);
		rows = keep;
	}
	o->count = (long)json_array_size(rows);
	bool ok = rewrite(o, rows, err);
	json_decref(rows);
	if (ok) {
		o->fj = fopen(o->jsonl, "a");
		o->fc = fopen(o->csv, "a");
		if (!o->fj || !o->fc)
			ok = config_fail(err, "cannot open %s for appending: %s", !o->fj ? o->jsonl : o->csv,
					 strerror(errno));
	}
	if (!ok) {
		plan_output_close(o, false, NULL);
		return false;
	}
	*out = o;
	return true;
}

bool plan_output_done(const plan_output *o, const char *key) { return json_object_get(o->done, key) != NULL; }

long plan_output_count(const plan_output *o) { return o->count; }

bool plan_output_add(plan_output *o, const json_t *row, config_error *err)
{
	bool ok = write_line(o->fj, row) && fflush(o->fj) == 0;
	plan_row_csv(o->fc, row);
	ok = ok && fflush(o->fc) == 0 && !ferror(o->fc);
	if (!ok)
		return config_fail(err, "writing %s: %s", o->jsonl, strerror(errno));
	json_object_set_new(o->done, plan_row_str(row, "point"), json_true());
	o->count++;
	return true;
}

static int by_index(const void *a, const void *b)
{
	const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
	json_int_t i = json_integer_value(json_object_get(x, "index")), j = json_integer_value(json_object_get(y, "index"));
	if (i != j)
		return i < j ? -1 : 1;
	return strcmp(plan_row_str(x, "point"), plan_row_str(y, "point"));
}

bool plan_output_close(plan_output *o, bool sort, config_error *err)
{
	if (!o)
		return true;
	bool ok = true;
	if (o->fj && fclose(o->fj) != 0)
		ok = config_fail(err, "closing %s: %s", o->jsonl, strerror(errno));
	if (o->fc && fclose(o->fc) != 0)
		ok = config_fail(err, "closing %s: %s", o->csv, strerror(errno));
	if (ok && sort) {
		json_t *rows;
		ok = read_record(o->jsonl, &rows, err);
		if (ok) {
			size_t n = json_array_size(rows);
			json_t **v = malloc((n ? n : 1) * sizeof *v);
			if (!v)
				ok = config_fail(err, "out of memory");
			if (ok) {
				for (size_t i = 0; i < n; i++)
					v[i] = json_array_get(rows, i);
				qsort(v, n, sizeof *v, by_index);
				json_t *sorted = json_array();
				for (size_t i = 0; i < n; i++)
					json_array_append(sorted, v[i]);
				ok = rewrite(o, sorted, err);
				json_decref(sorted);
				free(v);
			}
			json_decref(rows);
		}
	}
	json_decref(o->done);
	free(o);
	return ok;
}

bool plan_rows_load(const char *dir, json_t **rows, config_error *err)
{
	char path[CONFIG_PATH_MAX + 32];
	snprintf(path, sizeof path, "%s/points.jsonl", dir);
	if (access(path, F_OK) != 0)
		return config_fail(err, "%s: no such file, expected the record of a sweep", path);
	return read_record(path, rows, err);
}
