/* Quantities with units: "400Gbps", "50GB/s", "2us", "40GiB", "312TFLOPS".
 *
 * Decimal prefixes are powers of 1000, binary prefixes (Ki, Mi, Gi, Ti, Pi) powers of
 * 1024; a lowercase "b" counts bits, an uppercase "B" bytes. Values come out in SI base
 * units: bytes/s, seconds, bytes, FLOP/s. */
#include "config/config.h"
#include "config/ranges.h"

#include <errno.h>
#include <limits.h>

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_noun[] = {
	[CONFIG_UNIT_BANDWIDTH] = "a bandwidth",
	[CONFIG_UNIT_TIME] = "a time",
	[CONFIG_UNIT_SIZE] = "a size",
	[CONFIG_UNIT_FLOPS] = "a FLOP rate",
};

static const char *const kind_example[] = {
	[CONFIG_UNIT_BANDWIDTH] = "400Gbps or 50GB/s",
	[CONFIG_UNIT_TIME] = "2us or 1.5ms",
	[CONFIG_UNIT_SIZE] = "40GiB or 512MiB",
	[CONFIG_UNIT_FLOPS] = "312TFLOPS or 989TFLOP/s",
};

const char *config_unit_name(config_unit_kind kind)
{
	switch (kind) {
	case CONFIG_UNIT_BANDWIDTH: return "B/s";
	case CONFIG_UNIT_TIME: return "s";
	case CONFIG_UNIT_SIZE: return "B";
	case CONFIG_UNIT_FLOPS: return "FLOP/s";
	}
	return "";
}

const char *config_unit_kind_name(config_unit_kind kind)
{
	switch (kind) {
	case CONFIG_UNIT_BANDWIDTH: return "bandwidth";
	case CONFIG_UNIT_TIME: return "time";
	case CONFIG_UNIT_SIZE: return "size";
	case CONFIG_UNIT_FLOPS: return "FLOP rate";
	}
	return "";
}

char *config_format_quantity(double value, config_unit_kind kind, char *buf, size_t len)
{
	static const char *const dec[] = {"", "k", "M", "G", "T", "P"};
	if (kind == CONFIG_UNIT_TIME) {
		static const char *const t[] = {"s", "ms", "us", "ns"};
		double v = value;
		int i = 0;
		while (i < 3 && v != 0 && fabs(v) < 1) {
			v *= 1000;
			i++;
		}
		snprintf(buf, len, "%.4g %s", v, t[i]);
		return buf;
	}
	double v = value;
	int i = 0;
	while (i < 5 && fabs(v) >= 1000) {
		v /= 1000;
		i++;
	}
	snprintf(buf, len, "%.4g %s%s", v, dec[i], config_unit_name(kind));
	return buf;
}

/* Multiplier of an SI or binary prefix at the start of s; *used gets its length. */
static double prefix_scale(const char *s, size_t *used)
{
	static const struct {
		const char *p;
		double scale;
	} table[] = {
		{"Ki", 1024.0}, {"Mi", 1048576.0}, {"Gi", 1073741824.0}, {"Ti", 1099511627776.0},
		{"Pi", 1125899906842624.0}, {"k", 1e3}, {"K", 1e3}, {"M", 1e6}, {"G", 1e9},
		{"T", 1e12}, {"P", 1e15},
	};
	for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
		size_t n = strlen(table[i].p);
		if (strncmp(s, table[i].p, n) == 0) {
			*used = n;
			return table[i].scale;
		}
	}
	*used = 0;
	return 1.0;
}

/* Scale of unit text u for kind, or 0 when u is not a unit of that kind. */
static double unit_scale(const char *u, config_unit_kind kind)
{
	if (kind == CONFIG_UNIT_TIME) {
		static const struct {
			const char *u;
			double scale;
		} t[] = {
			{"s", 1.0}, {"ms", 1e-3}, {"us", 1e-6}, {"\xC2\xB5s", 1e-6} /* MICRO SIGN */,
			{"\xCE\xBCs", 1e-6} /* GREEK SMALL LETTER MU */, {"ns", 1e-9},
		};
		for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
			if (strcmp(u, t[i].u) == 0)
				return t[i].scale;
		return 0;
	}
	size_t used;
	double scale = prefix_scale(u, &used);
	const char *base = u + used;
	/* "b" alone is not a prefix: "bps" must not read as a prefix-free "ps". */
	switch (kind) {
	case CONFIG_UNIT_BANDWIDTH:
		if (strcmp(base, "B/s") == 0 || strcmp(base, "Bps") == 0)
			return scale;
		if (strcmp(base, "b/s") == 0 || strcmp(base, "bps") == 0 || strcmp(base, "bit/s") == 0)
			return scale / 8;
		return 0;
	case CONFIG_UNIT_SIZE:
		if (strcmp(base, "B") == 0)
			return scale;
		if (strcmp(base, "b") == 0 || strcmp(base, "bit") == 0)
			return scale / 8;
		return 0;
	case CONFIG_UNIT_FLOPS:
		if (strcmp(base, "FLOPS") == 0 || strcmp(base, "FLOP/s") == 0 || strcmp(base, "flops") == 0 ||
		    strcmp(base, "flop/s") == 0)
			return scale;
		return 0;
	case CONFIG_UNIT_TIME:
		break;
	}
	return 0;
}

/* Length of a plain decimal number ([+-]digits[.digits][e[+-]digits]) at s, 0 if none.
 * strtod alone would also take "inf", "nan" and hex floats. */
static size_t number_length(const char *s)
{
	size_t i = 0, digits = 0;
	if (s[i] == '+' || s[i] == '-')
		i++;
	while (isdigit((unsigned char)s[i]))
		i++, digits++;
	if (s[i] == '.') {
		i++;
		while (isdigit((unsigned char)s[i]))
			i++, digits++;
	}
	if (digits == 0)
		return 0;
	if (s[i] == 'e' || s[i] == 'E') {
		size_t j = i + 1;
		if (s[j] == '+' || s[j] == '-')
			j++;
		if (isdigit((unsigned char)s[j])) {
			while (isdigit((unsigned char)s[j]))
				j++;
			i = j;
		}
	}
	return i;
}

/* A number with a unit of `kind`; zero (with a unit: 0GB) only when allow_zero. */
static bool parse_quantity(const char *text, config_unit_kind kind, bool allow_zero, double *out, config_error *err)
{
	const char *noun = kind_noun[kind], *ex = kind_example[kind];
	if (!text)
		text = "";
	const char *s = text;
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = number_length(s);
	if (n == 0)
		return config_fail(err, "'%s' is not a number with a unit, expected %s such as %s", text, noun, ex);
	char num[64];
	if (n >= sizeof num)
		return config_fail(err, "'%s' has too many digits, expected %s such as %s", text, noun, ex);
	memcpy(num, s, n);
	num[n] = '\0';
	double v = strtod(num, NULL);
	const char *u = s + n;
	while (*u == ' ' || *u == '\t')
		u++;
	char unit[64];
	size_t ul = strlen(u);
	while (ul > 0 && (u[ul - 1] == ' ' || u[ul - 1] == '\t'))
		ul--;
	if (ul >= sizeof unit)
		ul = sizeof unit - 1;
	memcpy(unit, u, ul);
	unit[ul] = '\0';
	if (ul == 0)
		return config_fail(err, "'%s' has no unit, expected %s such as %s", text, noun, ex);
	double scale = unit_scale(unit, kind);
	if (scale == 0) {
		for (int k = CONFIG_UNIT_BANDWIDTH; k <= CONFIG_UNIT_FLOPS; k++)
			if (k != (int)kind && unit_scale(unit, (config_unit_kind)k) != 0)
				return config_fail(err, "'%s' is %s, expected %s such as %s", text,
						   kind_noun[k], noun, ex);
		return config_fail(err, "'%s' has an unknown unit '%s', expected %s such as %s", text, unit, noun,
				   ex);
	}
	double r = v * scale;
	if (!isfinite(v) || !isfinite(r))
		return config_fail(err, "'%s' is out of range, expected %s such as %s", text, noun, ex);
	if (!(r > 0) && !(allow_zero && r == 0))
		return config_fail(err, "'%s' must be positive, expected %s such as %s", text, noun, ex);
	*out = r;
	return true;
}

bool config_parse_quantity(const char *text, config_unit_kind kind, double *out, config_error *err)
{
	return parse_quantity(text, kind, false, out, err);
}

bool config_parse_quantity_or_zero(const char *text, config_unit_kind kind, double *out, config_error *err)
{
	return parse_quantity(text, kind, true, out, err);
}

bool config_parse_size_or_zero(const char *text, double *out, config_error *err)
{
	const char *s = text ? text : "";
	while (*s == ' ' || *s == '\t')
		s++;
	if (s[0] == '0' && (s[1] == '\0' || s[1] == ' ' || s[1] == '\t')) {
		const char *e = s + 1;
		while (*e == ' ' || *e == '\t')
			e++;
		if (*e == '\0') {
			*out = 0;
			return true;
		}
	}
	if (parse_quantity(text, CONFIG_UNIT_SIZE, true, out, err)) {
		/* a reserve is part of a GPU's memory: bounded as the platform's memory key, so the
		 * peak printed beside it stays a size (1e30GiB printed a 27-digit peak) */
		const double hi = config_range_get(CONFIG_R_GPU_MEMORY)->hi;
		if (*out <= hi)
			return true;
		return config_fail(err, "'%s' is %g bytes, expected at most %g bytes (a GPU's memory range), or 0", text, *out,
				   hi);
	}
	if (err) { /* say that 0 is allowed too */
		size_t n = strlen(err->msg);
		if (n + 7 < sizeof err->msg)
			memcpy(err->msg + n, ", or 0", 7);
	}
	return false;
}

bool config_parse_tokens(const char *text, long *out)
{
	/* one token parser: the range table's (config/ranges.h) */
	double v;
	if (!config_range_parse(CONFIG_R_SEQ_LEN, NULL, text, &v, NULL))
		return false;
	*out = (long)v;
	return true;
}
