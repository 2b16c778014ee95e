/* yamltree: a YAML file as a small tree of maps, sequences and scalars that remembers
 * where each node sits (file:line:column, 1-based), plus typed, strict accessors whose
 * errors read "FILE:LINE:COL: what is wrong, what was expected". Private to config. */
#ifndef SPSIM_CONFIG_YAMLTREE_H
#define SPSIM_CONFIG_YAMLTREE_H

#include "config/config.h"
#include "config/ranges.h"

/* Limits checked before libyaml sees a file (its cost grows faster than linearly with
 * nesting): no config file is near them (the largest shipped one is a few KB). */
#define YT_MAX_BYTES (1L << 20)
#define YT_MAX_DEPTH 64

typedef enum yt_kind { YT_SCALAR, YT_MAP, YT_SEQ } yt_kind;

typedef struct yt_node yt_node;
struct yt_node {
	yt_kind kind;
	int line, col;
	const char *file; /* owned by the document */
	const char *name; /* key this node is the value of; NULL at the top level */
	char *value;      /* scalar text */
	/* map: keys[i] (scalars) -> items[i]; sequence: items[i] */
	yt_node **keys, **items;
	size_t n, cap;
	/* map: open-addressing set of key indices + 1 (0 = empty), hcap slots, for a linear
	 * duplicate-key check */
	size_t *hash, hcap;
};

typedef struct yt_doc {
	char *file;
	yt_node *root; /* NULL for an empty document */
} yt_doc;

/* Loads path (at most YT_MAX_BYTES, nesting at most YT_MAX_DEPTH); on failure err holds "path:line:col: ..." (or "path: ...") and *out is NULL. */
bool yt_load(const char *path, yt_doc **out, config_error *err);
void yt_free(yt_doc *doc);

/* Formats "file:line:col: " + message into err, pointing at node n. Returns false. */
bool yt_fail(config_error *err, const yt_node *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The document's root as a mapping holding exactly the key top (e.g. "model"); returns
 * the mapping under it. */
bool yt_top(const yt_doc *doc, const char *top, const yt_node **out, config_error *err);

/* Fails on any key of map not in known (NULL-terminated), listing the known keys. */
bool yt_check_keys(const yt_node *map, const char *const *known, config_error *err);

/* The value of key in map, or NULL. */
const yt_node *yt_find(const yt_node *map, const char *key);

/* Typed accessors. `required`: a missing key is an error ("missing required key 'k' in
 * 'map'"); otherwise a missing key leaves *out untouched. *found (may be NULL) tells
 * whether the key was there. */
bool yt_map(const yt_node *map, const char *key, bool required, const yt_node **out, config_error *err);
bool yt_int(const yt_node *map, const char *key, bool required, long min, long max, long *out, bool *found,
	    config_error *err);
bool yt_posint(const yt_node *map, const char *key, bool required, int *out, bool *found, config_error *err);
/* A number in [lo, hi], or (lo, hi] when lo_open. */
bool yt_double(const yt_node *map, const char *key, bool required, double lo, bool lo_open, double hi,
	       double *out, bool *found, config_error *err);
bool yt_bool(const yt_node *map, const char *key, bool required, bool *out, bool *found, config_error *err);
/* One of names[0..n-1]; *out gets its index. */
bool yt_enum(const yt_node *map, const char *key, bool required, const char *const *names, int n, int *out,
	     bool *found, config_error *err);
bool yt_quantity(const yt_node *map, const char *key, bool required, config_unit_kind kind, double *out,
		 bool *found, config_error *err);
/* A size with a unit, or 0 (config_parse_size_or_zero). */
bool yt_size_or_zero(const yt_node *map, const char *key, double *out, bool *found, config_error *err);
bool yt_string(const yt_node *map, const char *key, bool required, char *out, size_t len, bool *found,
	       config_error *err);

/* platform.c: the `gpu:` mapping under t into *gpu (name, peak_bf16, memory,
 * hbm_bandwidth, sms, arch). nodegroups.c: the optional `node_groups:` list of t. */
bool config_read_gpu(const yt_node *t, config_gpu *gpu, config_error *err);
bool config_read_node_groups(const yt_node *t, config_platform *p, config_error *err);
/* Numbers from the range table (config/ranges.h): the key is the row's, the value is
 * parsed and checked by config_range_parse. */
bool yt_range(const yt_node *map, config_range_id id, bool required, double *out, bool *found, config_error *err);
bool yt_range_int(const yt_node *map, config_range_id id, bool required, int *out, bool *found, config_error *err);
bool yt_range_long(const yt_node *map, config_range_id id, bool required, long *out, bool *found,
		   config_error *err);


/* A value node seen as the one entry of a mapping {key: v}, so the accessors above read
 * one item of a list (a sweep axis) with the checks and messages they give a key. */
typedef struct yt_entry {
	yt_node map, key;
	yt_node *keys[1], *items[1];
} yt_entry;
const yt_node *yt_entry_of(yt_entry *e, const char *key, const yt_node *v);

/* job.c: setting i of the job-settings table (config.h, config_job_setting_find) read
 * from map t into job when t has it (*found, may be NULL, says so), with the job file's
 * checks and messages. */
bool config_job_setting_read(const yt_node *t, int i, config_job *job, bool *found, config_error *err);
/* job.c: the keys a job mapping takes (NULL-terminated): those of a job file's `job:`
 * mapping, and of a fidelity corpus step case (src/fidelity/corpus.c); docs/job.md lists
 * them with their defaults (tests/test_config.c holds the two to each other). */
extern const char *const config_job_keys[];
/* job.c: every key of a job mapping t (config_job_keys; unknown keys are errors), read
 * with the job file's checks and messages: settings into *job (keys absent keep its
 * value), model/platform/calibration (CONFIG_PATH_MAX buffers, may be NULL, untouched
 * when absent) resolved relative to doc_path's directory, nodes (0 when absent), and the
 * `what_if:` mapping appended to *whatif (NULL: what_if is checked as a key only, job
 * files read it with config_load_whatif). The out-params change only when the whole
 * mapping is valid; *job may be partly written on failure (pass a copy). */
bool config_job_read_fields(const yt_node *t, const char *doc_path, config_job *job, char *model, char *platform,
			    char *calibration, int *nodes, config_whatif *whatif, config_error *err);
/* whatif.c: a `what_if:` mapping (slow_gpu, slow_node, degrade, fail_node, background)
 * appended to w; nothing is appended unless the whole mapping is valid. */
bool config_read_whatif(const yt_node *wi, config_whatif *w, config_error *err);
const char *config_job_setting_key(int i);
bool config_job_setting_read(const yt_node *t, int i, config_job *job, bool *found, config_error *err);
void config_job_setting_copy(int i, config_job *dst, const config_job *src);

#endif
