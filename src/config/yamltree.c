/* yamltree: libyaml events -> a located node tree, and strict typed accessors. */
#include "config/yamltree.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

static void node_free(yt_node *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->n; i++) {
		if (n->keys)
			node_free(n->keys[i]);
		node_free(n->items[i]);
	}
	free(n->keys);
	free(n->items);
	free(n->hash);
	free(n->value);
	free(n);
}

void yt_free(yt_doc *doc)
{
	if (!doc)
		return;
	node_free(doc->root);
	free(doc->file);
	free(doc);
}

bool yt_fail(config_error *err, const yt_node *n, const char *fmt, ...)
{
	if (!err)
		return false;
	int k = snprintf(err->msg, sizeof err->msg, "%s:%d:%d: ", n->file, n->line, n->col);
	if (k < 0 || (size_t)k >= sizeof err->msg)
		return false;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err->msg + k, sizeof err->msg - (size_t)k, fmt, ap);
	va_end(ap);
	return false;
}

static char *dup_str(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = malloc(n);
	if (d)
		memcpy(d, s, n);
	return d;
}

static yt_node *node_new(yt_kind kind, const yaml_mark_t *mark, const char *file)
{
	yt_node *n = calloc(1, sizeof *n);
	if (!n)
		return NULL;
	n->kind = kind;
	n->line = (int)mark->line + 1;
	n->col = (int)mark->column + 1;
	n->file = file;
	return n;
}

/* Appends (key, item) to a container; key is NULL for sequences and for a map's value
 * slot filled later. */
static bool node_push(yt_node *c, yt_node *key, yt_node *item)
{
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 8;
		yt_node **items = realloc(c->items, cap * sizeof *items);
		if (!items)
			return false;
		c->items = items;
		if (c->kind == YT_MAP) {
			yt_node **keys = realloc(c->keys, cap * sizeof *keys);
			if (!keys)
				return false;
			c->keys = keys;
		}
		c->cap = cap;
	}
	if (c->kind == YT_MAP)
		c->keys[c->n] = key;
	c->items[c->n++] = item;
	return true;
}

static const char *where(const yt_node *map, char *buf, size_t len)
{
	if (map->name)
		snprintf(buf, len, "in '%s'", map->name);
	else
		snprintf(buf, len, "at the top level");
	return buf;
}

/* FNV-1a: the duplicate-key set's hash. */
static size_t key_hash(const char *s)
{
	size_t h = (size_t)1469598103934665603ULL;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * (size_t)1099511628211ULL;
	return h;
}

/* Whether map c already has key k; *first gets its index. */
static bool key_seen(const yt_node *c, const char *k, size_t *first)
{
	if (!c->hcap)
		return false;
	for (size_t i = key_hash(k) & (c->hcap - 1);; i = (i + 1) & (c->hcap - 1)) {
		size_t e = c->hash[i];
		if (!e)
			return false;
		if (strcmp(c->keys[e - 1]->value, k) == 0) {
			*first = e - 1;
			return true;
		}
	}
}

static void key_insert(size_t *hash, size_t hcap, const char *k, size_t idx)
{
	size_t i = key_hash(k) & (hcap - 1);
	while (hash[i])
		i = (i + 1) & (hcap - 1);
	hash[i] = idx + 1;
}

/* Adds key index idx of map c to its set, growing it to keep it at most half full. */
static bool key_add(yt_node *c, size_t idx)
{
	if (2 * (idx + 1) > c->hcap) {
		size_t cap = c->hcap ? 2 * c->hcap : 16;
		size_t *h = calloc(cap, sizeof *h);
		if (!h)
			return false;
		for (size_t i = 0; i < idx; i++)
			key_insert(h, cap, c->keys[i]->value, i);
		free(c->hash);
		c->hash = h;
		c->hcap = cap;
	}
	key_insert(c->hash, c->hcap, c->keys[idx]->value, idx);
	return true;
}

/* Places a freshly parsed node into the tree. Takes ownership of n in all cases. */
static bool attach(yt_doc *doc, yt_node **stack, size_t depth, yt_node *n, config_error *err)
{
	if (depth == 0) {
		if (doc->root) {
			bool r = yt_fail(err, n, "a second document, expected a single YAML document");
			node_free(n);
			return r;
		}
		doc->root = n;
		return true;
	}
	yt_node *c = stack[depth - 1];
	if (c->kind == YT_SEQ) {
		n->name = c->name;
		if (!node_push(c, NULL, n)) {
			node_free(n);
			return config_fail(err, "%s: out of memory", doc->file);
		}
		return true;
	}
	if (c->n > 0 && c->items[c->n - 1] == NULL) { /* the value of the last key */
		n->name = c->keys[c->n - 1]->value;
		c->items[c->n - 1] = n;
		return true;
	}
	char w[CONFIG_NAME_MAX + 32];
	if (n->kind != YT_SCALAR) {
		bool r = yt_fail(err, n, "a %s used as a key %s, expected a plain key name",
				 n->kind == YT_MAP ? "mapping" : "sequence", where(c, w, sizeof w));
		node_free(n);
		return r;
	}
	size_t first;
	if (key_seen(c, n->value, &first)) {
		bool r = yt_fail(err, n, "duplicate key '%s' %s (first at line %d), expected each key once", n->value,
				 where(c, w, sizeof w), c->keys[first]->line);
		node_free(n);
		return r;
	}
	if (!node_push(c, n, NULL) || !key_add(c, c->n - 1)) {
		if (c->n == 0 || c->keys[c->n - 1] != n)
			node_free(n);
		return config_fail(err, "%s: out of memory", doc->file);
	}
	return true;
}

static bool parse(yaml_parser_t *parser, yt_doc *doc, config_error *err)
{
	yt_node **stack = NULL;
	size_t depth = 0, cap = 0;
	bool ok = false, done = false;
	while (!done) {
		yaml_event_t ev;
		if (!yaml_parser_parse(parser, &ev)) {
			yaml_mark_t m = parser->problem_mark;
			if (parser->context)
				config_fail(err, "%s:%d:%d: YAML syntax error: %s (%s at line %d), expected valid YAML",
					    doc->file, (int)m.line + 1, (int)m.column + 1,
					    parser->problem ? parser->problem : "unknown problem", parser->context,
					    (int)parser->context_mark.line + 1);
			else
				config_fail(err, "%s:%d:%d: YAML syntax error: %s, expected valid YAML", doc->file,
					    (int)m.line + 1, (int)m.column + 1,
					    parser->problem ? parser->problem : "unknown problem");
			goto out;
		}
		yt_node *n = NULL;
		bool push = false, good = true;
		switch (ev.type) {
		case YAML_STREAM_END_EVENT:
			done = true;
			break;
		case YAML_SCALAR_EVENT:
			/* a quoted "\0" would end the C string there: the rest of the value lost */
			if (strlen((const char *)ev.data.scalar.value) != ev.data.scalar.length) {
				config_fail(err, "%s:%d:%d: a NUL character (\\0) in a value, expected text", doc->file,
					    (int)ev.start_mark.line + 1, (int)ev.start_mark.column + 1);
				yaml_event_delete(&ev);
				goto out;
			}
			n = node_new(YT_SCALAR, &ev.start_mark, doc->file);
			if (n && !(n->value = dup_str((const char *)ev.data.scalar.value))) {
				free(n);
				n = NULL;
			}
			good = n != NULL;
			break;
		case YAML_MAPPING_START_EVENT:
			n = node_new(YT_MAP, &ev.start_mark, doc->file);
			good = n != NULL;
			push = true;
			break;
		case YAML_SEQUENCE_START_EVENT:
			n = node_new(YT_SEQ, &ev.start_mark, doc->file);
			good = n != NULL;
			push = true;
			break;
		case YAML_MAPPING_END_EVENT:
		case YAML_SEQUENCE_END_EVENT:
			depth--;
			break;
		case YAML_ALIAS_EVENT:
			config_fail(err, "%s:%d:%d: alias '*%s' is not supported, expected plain values", doc->file,
				    (int)ev.start_mark.line + 1, (int)ev.start_mark.column + 1,
				    (const char *)ev.data.alias.anchor);
			yaml_event_delete(&ev);
			goto out;
		default:
			break;
		}
		yaml_event_delete(&ev);
		if (!good) {
			config_fail(err, "%s: out of memory", doc->file);
			goto out;
		}
		if (!n)
			continue;
		if (push && depth >= YT_MAX_DEPTH) {
			yt_fail(err, n, "nesting deeper than %d levels, expected at most %d (no spsim file needs more than 4)",
				YT_MAX_DEPTH, YT_MAX_DEPTH);
			node_free(n);
			goto out;
		}
		if (!attach(doc, stack, depth, n, err))
			goto out;
		if (push) {
			if (depth == cap) {
				size_t ncap = cap ? 2 * cap : 16;
				yt_node **s = realloc(stack, ncap * sizeof *s);
				if (!s) {
					config_fail(err, "%s: out of memory", doc->file);
					goto out;
				}
				stack = s;
				cap = ncap;
			}
			stack[depth++] = n;
		}
	}
	ok = true;
out:
	free(stack);
	return ok;
}

bool yt_load(const char *path, yt_doc **out, config_error *err)
{
	*out = NULL;
	if (!config_check_file(path, "a YAML", err))
		return false;
	FILE *f = fopen(path, "rb");
	if (!f) {
		char buf[256];
		if (strerror_r(errno, buf, sizeof buf) != 0)
			snprintf(buf, sizeof buf, "error %d", errno);
		return config_fail(err, "%s: cannot open: %s, expected a readable YAML file", path, buf);
	}
	/* The whole file, refused when larger than any config, before libyaml reads it. */
	size_t size = 0, cap = 4096;
	unsigned char *text = malloc(cap);
	while (text && size <= YT_MAX_BYTES) {
		size += fread(text + size, 1, cap - size, f);
		if (size < cap || size > YT_MAX_BYTES)
			break;
		unsigned char *bigger = realloc(text, 2 * cap);
		if (!bigger) {
			free(text);
			text = NULL;
			break;
		}
		text = bigger;
		cap *= 2;
	}
	bool read_err = text && ferror(f);
	fclose(f);
	if (!text)
		return config_fail(err, "%s: out of memory", path);
	if (read_err || size > YT_MAX_BYTES) {
		free(text);
		if (read_err)
			return config_fail(err, "%s: cannot read, expected a readable YAML file", path);
		return config_fail(err, "%s: the file is larger than %ld bytes, expected a YAML file of at most %ld bytes",
				   path, YT_MAX_BYTES, YT_MAX_BYTES);
	}
	yt_doc *doc = calloc(1, sizeof *doc);
	if (!doc || !(doc->file = dup_str(path))) {
		free(doc);
		free(text);
		return config_fail(err, "%s: out of memory", path);
	}
	yaml_parser_t parser;
	if (!yaml_parser_initialize(&parser)) {
		yt_free(doc);
		free(text);
		return config_fail(err, "%s: cannot initialise the YAML parser", path);
	}
	yaml_parser_set_input_string(&parser, text, size);
	bool ok = parse(&parser, doc, err);
	yaml_parser_delete(&parser);
	free(text);
	if (!ok) {
		yt_free(doc);
		return false;
	}
	*out = doc;
	return true;
}

/* ------------------------------------------------------------- accessors --- */

/* How a node reads in "got ..." messages. */
static const char *got(const yt_node *v, char *buf, size_t len)
{
	if (v->kind == YT_MAP)
		return "a mapping";
	if (v->kind == YT_SEQ)
		return "a sequence";
	if (v->value[0] == '\0')
		return "nothing";
	snprintf(buf, len, "'%.200s'", v->value);
	return buf;
}

const yt_node *yt_find(const yt_node *map, const char *key)
{
	if (!map || map->kind != YT_MAP)
		return NULL;
	for (size_t i = 0; i < map->n; i++)
		if (strcmp(map->keys[i]->value, key) == 0)
			return map->items[i];
	return NULL;
}

bool yt_check_keys(const yt_node *map, const char *const *known, config_error *err)
{
	for (size_t i = 0; i < map->n; i++) {
		const char *k = map->keys[i]->value;
		bool ok = false;
		for (const char *const *p = known; *p; p++)
			if (strcmp(*p, k) == 0)
				ok = true;
		if (ok)
			continue;
		char list[768] = ""; /* a sweep spec has 37 keys */
		size_t used = 0;
		for (const char *const *p = known; *p; p++) {
			int w = snprintf(list + used, sizeof list - used, "%s%s", p == known ? "" : ", ", *p);
			if (w < 0 || (size_t)w >= sizeof list - used)
				break;
			used += (size_t)w;
		}
		char w[CONFIG_NAME_MAX + 32];
		return yt_fail(err, map->keys[i], "unknown key '%s' %s, expected one of: %s", k, where(map, w, sizeof w),
			       list);
	}
	return true;
}

/* Looks key up; a missing required key is an error at the map. */
static bool lookup(const yt_node *map, const char *key, bool required, const yt_node **v, bool *found,
		   config_error *err)
{
	*v = yt_find(map, key);
	if (found)
		*found = *v != NULL;
	if (!*v && required) {
		char w[CONFIG_NAME_MAX + 32];
		return yt_fail(err, map, "missing required key '%s' %s", key, where(map, w, sizeof w));
	}
	return true;
}

bool yt_top(const yt_doc *doc, const char *top, const yt_node **out, config_error *err)
{
	const yt_node *r = doc->root;
	if (!r)
		return config_fail(err, "%s:1:1: empty file, expected a mapping with the key '%s'", doc->file, top);
	if (r->kind != YT_MAP) {
		char b[256];
		return yt_fail(err, r, "the top level is %s, expected a mapping with the key '%s'", got(r, b, sizeof b),
			       top);
	}
	const char *const known[] = {top, NULL};
	if (!yt_check_keys(r, known, err))
		return false;
	return yt_map(r, top, true, out, err);
}

bool yt_map(const yt_node *map, const char *key, bool required, const yt_node **out, config_error *err)
{
	const yt_node *v;
	if (!lookup(map, key, required, &v, NULL, err))
		return false;
	if (!v) {
		*out = NULL;
		return true;
	}
	if (v->kind != YT_MAP) {
		char b[256];
		return yt_fail(err, v, "'%s' must be a mapping, got %s", key, got(v, b, sizeof b));
	}
	*out = v;
	return true;
}

static bool parse_long(const char *s, long *out)
{
	if (!*s)
		return false;
	for (const char *p = (*s == '-' || *s == '+') ? s + 1 : s; *p; p++)
		if (*p < '0' || *p > '9')
			return false;
	if (s[0] && (s[0] == '-' || s[0] == '+') && !s[1])
		return false;
	errno = 0;
	char *end;
	long v = strtol(s, &end, 10);
	if (errno || *end)
		return false;
	*out = v;
	return true;
}

bool yt_int(const yt_node *map, const char *key, bool required, long min, long max, long *out, bool *found,
	    config_error *err)
{
	const yt_node *v;
	if (!lookup(map, key, required, &v, found, err))
		return false;
	if (!v)
		return true;
	long x = 0;
	if (v->kind != YT_SCALAR || !parse_long(v->value, &x) || x < min || x > max) {
		char b[256], what[96];
		/* the bound is named where a value can pass it (99999999999 is positive) */
		if (min == 1 && max == LONG_MAX)
			snprintf(what, sizeof what, "a positive integer");
		else if (min == 1 && max >= INT_MAX)
			snprintf(what, sizeof what, "a positive integer up to %ld", max);
		else if (max >= INT_MAX)
			snprintf(what, sizeof what, "an integer from %ld to %ld", min, max);
		else
			snprintf(what, sizeof what, "an integer from %ld to %ld", min, max);
		return yt_fail(err, v, "'%s' must be %s, got %s", key, what, got(v, b, sizeof b));
	}
	*out = x;
	return true;
}

bool yt_posint(const yt_node *map, const char *key, bool required, int *out, bool *found, config_error *err)
{
	long x;
	bool f = false;
	if (!yt_int(map, key, required, 1, INT_MAX, &x, &f, err))
		return false;
	if (found)
		*found = f;
	if (f)
		*out = (int)x;
	return true;
}

/* A plain decimal number (no inf, nan or hex). */
static bool parse_double(const char *s, double *out)
{
	const char *p = s;
	if (*p == '+' || *p == '-')
		p++;
	if (!((*p >= '0' && *p <= '9') || *p == '.'))
		return false;
	for (const char *q = p; *q; q++)
		if (!((*q >= '0' && *q <= '9') || *q == '.' || *q == 'e' || *q == 'E' || *q == '+' || *q == '-'))
			return false;
	errno = 0;
	char *end;
	double v = strtod(s, &end);
	if (end == s || *end || errno == ERANGE || !isfinite(v))
		return false;
	*out = v;
	return true;
}

bool yt_double(const yt_node *map, const char *key, bool required, double lo, bool lo_open, double hi,
	       double *out, bool *found, config_error *err)
{
	const yt_node *v;
	if (!lookup(map, key, required, &v, found, err))
		return false;
	if (!v)
		return true;
	double x = 0;
	if (v->kind != YT_SCALAR || !parse_double(v->value, &x) || x < lo || (lo_open && x == lo) || x > hi) {
		char b[256], what[96];
		if (isinf(hi))
			snprintf(what, sizeof what, "a number %s %g", lo_open ? ">" : ">=", lo);
		else
			snprintf(what, sizeof what, "a number in %s%g, %g]", lo_open ? "(" : "[", lo, hi);
		return yt_fail(err, v, "'%s' must be %s, got %s", key, what, got(v, b, sizeof b));
	}
	*out = x;
	return true;
}

bool yt_bool(const yt_node *map, const char *key, bool required, bool *out, bool *found, config_error *err)
{
	const yt_node *v;
	if (!lookup(map, key, required, &v, found, err))
		return false;
	if (!v)
		return true;
	if (v->kind == YT_SCALAR) {
		static const char *const yes[] = {"true", "True", "TRUE", "yes", "on"};
		static const char *const no[] = {"false", "False", "FALSE", "no", "off"};
		for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
			if (strcmp(v->value, yes[i]) == 0) {
				*out = true;
				return true;
			}
			if (strcmp(v->value, no[i]) == 0) {
				*out = false;
				return true;
			}
		}
	}
	char b[256];
	return yt_fail(err, v, "'%s' must be true or false, got %s", key, got(v, b, sizeof b));
}

bool yt_enum(const yt_node *map, const char *key, bool required, const char *const *names, int n, int *out,
	     bool *found, config_error *err)
{
	const yt_node *v;
	if (!lookup(map, key, required, &v, found, err))
		return false;
	if (!v)
		return true;
	if (v->kind == YT_SCALAR)
		for (int i = 0; i < n; i++)
			if (strcmp(v->value, names[i]) == 0) {
				*out = i;
				return true;
			}
	char b[256], list[512] = "";
	size_t used = 0;
	for (int i = 0; i < n; i++) {
		int w = snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", names[i]);
		if (w < 0 || (size_t)w >= sizeof list - used)
			break;
		used += (size_t)w;
	}
	return yt_fail(err, v, "'%s' must be one of: %s, got %s", key, list, got(v, b, sizeof b));
}

bool yt_quantity(const yt_node *map, const char *key, bool required, config_unit_kind kind, double *out,
		 bool *found, config_error *err)
{
	const yt_node *v;
	if (!lookup(map, key, required, &v, found, err))
		return false;
	if (!v)
		return true;
	if (v->kind != YT_SCALAR) {
		char b[256];
		return yt_fail(err, v, "'%s' must be a %s with a unit, got %s", key, config_unit_kind_name(kind),
			       got(v, b, sizeof b));
	}
	config_error qe;
	if (!config_parse_quantity(v->value, kind, out, &qe))
		return yt_fail(err, v, "'%s': %s", key, qe.msg);
	return true;
}

bool yt_size_or_zero(const yt_node *map, const char *key, double *out, bool *found, config_error *err)
{
	const yt_node *v;
	if (!lookup(map, key, false, &v, found, err))
		return false;
	if (!v)
		return true;
	if (v->kind != YT_SCALAR) {
		char b[256];
		return yt_fail(err, v, "'%s' must be a size with a unit or 0, got %s", key, got(v, b, sizeof b));
	}
	config_error qe;
	if (!config_parse_size_or_zero(v->value, out, &qe))
		return yt_fail(err, v, "'%s': %s", key, qe.msg);
	return true;
}

bool yt_string(const yt_node *map, const char *key, bool required, char *out, size_t len, bool *found,
	       config_error *err)
{
	const yt_node *v;
	if (!lookup(map, key, required, &v, found, err))
		return false;
	if (!v)
		return true;
	char b[256];
	if (v->kind != YT_SCALAR || v->value[0] == '\0')
		return yt_fail(err, v, "'%s' must be a non-empty string, got %s", key, got(v, b, sizeof b));
	size_t n = strlen(v->value);
	if (n >= len)
		return yt_fail(err, v, "'%s' is %zu characters long, expected at most %zu", key, n, len - 1);
	/* names and paths are printed in tables, CSV and messages: a line break or escape
	 * sequence ("a\nb" in quotes) would break them */
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)v->value[i] < 0x20 || v->value[i] == 0x7f)
			return yt_fail(err, v, "'%s' holds a control character (byte 0x%02x at position %zu), expected "
				       "printable text", key, (unsigned char)v->value[i], i + 1);
	memcpy(out, v->value, n + 1);
	return true;
}

bool yt_range(const yt_node *map, config_range_id id, bool required, double *out, bool *found, config_error *err)
{
	const char *key = config_range_get(id)->key;
	const yt_node *v;
	if (!lookup(map, key, required, &v, found, err))
		return false;
	if (!v)
		return true;
	config_error re;
	if (v->kind != YT_SCALAR || v->value[0] == '\0') {
		char b[256], e[160];
		return yt_fail(err, v, "'%s' must be %s, got %s", key, config_range_expect(id, e, sizeof e),
			       got(v, b, sizeof b));
	}
	if (!config_range_parse(id, key, v->value, out, &re))
		return yt_fail(err, v, "%s", re.msg);
	return true;
}

bool yt_range_long(const yt_node *map, config_range_id id, bool required, long *out, bool *found, config_error *err)
{
	double d = 0;
	bool f = false;
	if (!yt_range(map, id, required, &d, &f, err))
		return false;
	if (found)
		*found = f;
	if (f)
		*out = (long)d; /* whole and within the table's bounds, which fit a long */
	return true;
}

bool yt_range_int(const yt_node *map, config_range_id id, bool required, int *out, bool *found, config_error *err)
{
	long l = 0;
	bool f = false;
	if (!yt_range_long(map, id, required, &l, &f, err))
		return false;
	if (found)
		*found = f;
	if (f)
		*out = (int)l; /* every INT row's bounds fit an int */
	return true;
}

const yt_node *yt_entry_of(yt_entry *e, const char *key, const yt_node *v)
{
	memset(e, 0, sizeof *e);
	e->key.kind = YT_SCALAR;
	e->key.line = v->line;
	e->key.col = v->col;
	e->key.file = v->file;
	e->key.value = (char *)key; /* read only: the entry is never freed by yt_free */
	e->keys[0] = &e->key;
	e->items[0] = (yt_node *)v;
	e->map.kind = YT_MAP;
	e->map.line = v->line;
	e->map.col = v->col;
	e->map.file = v->file;
	e->map.keys = e->keys;
	e->map.items = e->items;
	e->map.n = 1;
	return &e->map;
}
