/* The one table of numeric ranges (ranges.h) and its parser and checker. */
#include "config/ranges.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const config_range table[CONFIG_R_COUNT] = {
#define CONFIG_RANGE_ROW(id, key, flag, type, ...) [CONFIG_R_##id] = {key, flag, CONFIG_RANGE_##type, __VA_ARGS__},
	CONFIG_RANGES(CONFIG_RANGE_ROW)
#undef CONFIG_RANGE_ROW
};

const config_range *config_range_get(config_range_id id) { return &table[id]; }

static bool whole(config_range_type t)
{
	return t == CONFIG_RANGE_INT || t == CONFIG_RANGE_TOKENS || t == CONFIG_RANGE_COUNT;
}

/* Inline: every configuration of a sweep checks its model, platform and job through here.
 * A finite v is whole when v == floor(v): at or above 2^53 every double is, below it the
 * round trip through long long truncates exactly (no libm call). */
static inline bool range_ok(config_range_id id, double v)
{
	const config_range *r = &table[id];
	return isfinite(v) && v >= r->lo && v <= r->hi &&
	       (!whole(r->type) || fabs(v) >= 0x1p53 || v == (double)(long long)v);
}

bool config_range_ok(config_range_id id, double v)
{
	return range_ok(id, v);
}

const char *config_range_expect(config_range_id id, char *buf, size_t len)
{
	const config_range *r = &table[id];
	switch (r->type) {
	case CONFIG_RANGE_INT: snprintf(buf, len, "an integer from %.0f to %.0f", r->lo, r->hi); break;
	case CONFIG_RANGE_TOKENS:
		snprintf(buf, len, "a token count from %.0f to %.0f (K and M suffixes: 16K = 16384)", r->lo, r->hi);
		break;
	case CONFIG_RANGE_NUMBER: snprintf(buf, len, "a number from %g to %g", r->lo, r->hi); break;
	case CONFIG_RANGE_COUNT: snprintf(buf, len, "a whole number from %g to %g (e.g. 5e8)", r->lo, r->hi); break;
	default: {
		config_unit_kind k = (config_unit_kind)r->type;
		char lo[32], hi[32];
		config_format_quantity(r->lo, k, lo, sizeof lo);
		config_format_quantity(r->hi, k, hi, sizeof hi);
		snprintf(buf, len, "a %s from %s to %s", config_unit_kind_name(k), r->lo == 0 ? "0" : lo, hi);
	}
	}
	return buf;
}

/* A plain decimal integer or number: no inf, nan, hex, or trailing text. */
bool config_parse_plain_number(const char *s, bool integer, double *out)
{
	const char *p = s;
	if (*p == '+' || *p == '-')
		p++;
	if (!*p)
		return false;
	for (const char *q = p; *q; q++) {
		bool digit = *q >= '0' && *q <= '9';
		if (integer ? !digit : !(digit || *q == '.' || *q == 'e' || *q == 'E' || *q == '+' || *q == '-'))
			return false;
	}
	if (!integer && !((*p >= '0' && *p <= '9') || *p == '.'))
		return false;
	errno = 0;
	char *end;
	double v = strtod(s, &end);
	if (end == s || *end || !isfinite(v))
		return false;
	*out = v;
	return true;
}

bool config_range_parse(config_range_id id, const char *key, const char *text, double *out, config_error *err)
{
	const config_range *r = &table[id];
	if (!key)
		key = r->key;
	if (!text)
		text = "";
	double v = NAN;
	bool parsed;
	switch (r->type) {
	case CONFIG_RANGE_INT: parsed = config_parse_plain_number(text, true, &v); break;
	case CONFIG_RANGE_TOKENS: {
		/* K and M are powers of 1024 here, as for --seq-len */
		size_t n = strlen(text);
		double mul = 1;
		char num[64];
		if (n > 0 && n < sizeof num) {
			memcpy(num, text, n + 1);
			if (num[n - 1] == 'K' || num[n - 1] == 'k')
				mul = 1024, num[n - 1] = '\0';
			else if (num[n - 1] == 'M' || num[n - 1] == 'm')
				mul = 1048576, num[n - 1] = '\0';
			parsed = config_parse_plain_number(num, true, &v);
			v *= mul;
		} else {
			parsed = false;
		}
		break;
	}
	case CONFIG_RANGE_NUMBER:
	case CONFIG_RANGE_COUNT: parsed = config_parse_plain_number(text, false, &v); break;
	default: {
		/* A quantity; 0, bare or with a unit, where the range holds 0 (no per-call overhead,
		 * a fitted latency at its lower bound: spsim calibrate writes it as 0us). */
		config_error qe;
		if (r->lo <= 0 && config_parse_plain_number(text, false, &v) && v == 0) {
			parsed = true;
			break;
		}
		parsed = r->lo <= 0 ? config_parse_quantity_or_zero(text, (config_unit_kind)r->type, &v, &qe)
				    : config_parse_quantity(text, (config_unit_kind)r->type, &v, &qe);
		if (!parsed && !strstr(qe.msg, "positive") && !strstr(qe.msg, "out of range"))
			return config_fail(err, "'%s': %s", key, qe.msg);
	}
	}
	if (!parsed || !config_range_ok(id, v)) {
		char e[160];
		return config_fail(err, "'%s' must be %s, got '%.200s'", key, config_range_expect(id, e, sizeof e), text);
	}
	*out = v;
	return true;
}

bool config_range_check(config_range_id id, const char *key, double v, config_error *err)
{
	if (range_ok(id, v))
		return true;
	char e[160];
	return config_fail(err, "'%s' is %.17g, expected %s", key ? key : table[id].key, v,
			   config_range_expect(id, e, sizeof e));
}

bool config_range_check_all(const char *kind, const char *name, const config_range_value *vals, size_t n,
			    config_error *err)
{
	for (size_t i = 0; i < n; i++) {
		config_error e;
		if (range_ok(vals[i].id, vals[i].v) || config_range_check(vals[i].id, NULL, vals[i].v, &e))
			continue;
		if (name)
			return config_fail(err, "%s '%s': %s", kind, name, e.msg);
		return config_fail(err, "%s: %s", kind, e.msg);
	}
	return true;
}
