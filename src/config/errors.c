/* config_fail: the one place config errors are formatted. */
#include "config/config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Appends n bytes of s to buf[*used], up to cap - 1 bytes in all (as vsnprintf truncates). */
static void put(char *buf, size_t cap, size_t *used, const char *s, size_t n)
{
	if (*used + n > cap - 1)
		n = cap - 1 - *used;
	memcpy(buf + *used, s, n);
	*used += n;
}

static void put_long(char *buf, size_t cap, size_t *used, long v)
{
	char d[24];
	int i = (int)sizeof d;
	unsigned long u = v < 0 ? 0UL - (unsigned long)v : (unsigned long)v;
	do
		d[--i] = (char)('0' + u % 10);
	while (u /= 10);
	if (v < 0)
		d[--i] = '-';
	put(buf, cap, used, d + i, sizeof d - (size_t)i);
}

/* The plain conversions (%s, %d, %ld, %%) formatted by hand, the same text vsnprintf writes:
 * a sweep formats a message per rejected configuration, and vsnprintf's set-up dominated
 * the job check. False (nothing written) when fmt holds any other conversion. */
static bool format_plain(char *buf, size_t cap, const char *fmt, va_list ap)
{
	for (const char *c = strchr(fmt, '%'); c; c = strchr(c + 2, '%'))
		if (!(c[1] == 's' || c[1] == 'd' || c[1] == '%' || (c[1] == 'l' && c[2] == 'd' && c++)))
			return false;
	size_t used = 0;
	for (const char *c = fmt;;) {
		const char *pc = strchr(c, '%');
		if (!pc) {
			put(buf, cap, &used, c, strlen(c));
			break;
		}
		put(buf, cap, &used, c, (size_t)(pc - c));
		if (pc[1] == 's') {
			const char *s = va_arg(ap, const char *);
			if (!s)
				s = "(null)";
			put(buf, cap, &used, s, strlen(s));
		} else if (pc[1] == 'd') {
			put_long(buf, cap, &used, va_arg(ap, int));
		} else if (pc[1] == '%') {
			put(buf, cap, &used, "%", 1);
		} else { /* %ld */
			put_long(buf, cap, &used, va_arg(ap, long));
			pc++;
		}
		c = pc + 2;
	}
	buf[used] = '\0';
	return true;
}

bool config_fail(config_error *err, const char *fmt, ...)
{
	if (!err)
		return false;
	va_list ap;
	va_start(ap, fmt);
	bool done = format_plain(err->msg, sizeof err->msg, fmt, ap);
	va_end(ap);
	if (!done) {
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof err->msg, fmt, ap);
		va_end(ap);
	}
	return false;
}
