/* config_fail: the one place config errors are formatted. */
#include "config/config.h"

#include <stdarg.h>
#include <stdio.h>

bool config_fail(config_error *err, const char *fmt, ...)
{
	if (!err)
		return false;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof err->msg, fmt, ap);
	va_end(ap);
	return false;
}
