/* Measurements as JSON lines, each written through to disk as it completes (validate.h). */
#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

#include "validate.h"

int validate_log_open(validate_log *log, const char *path, bool writer)
{
	memset(log, 0, sizeof *log);
	snprintf(log->path, sizeof log->path, "%s", path);
	if (!writer)
		return VALIDATE_OK;
	log->f = fopen(path, "a");
	if (!log->f) {
		fprintf(stderr, "spsim-validate: %s: cannot open for appending: %s\n", path, strerror(errno));
		return VALIDATE_EIO;
	}
	return VALIDATE_OK;
}

int validate_log_append(validate_log *log, const char *kind, const char *fields_fmt, ...)
{
	if (!log || !log->f)
		return VALIDATE_OK;
	va_list ap;
	va_start(ap, fields_fmt);
	fprintf(log->f, "{\"kind\": \"%s\", ", kind);
	vfprintf(log->f, fields_fmt, ap);
	va_end(ap);
	fputs("}\n", log->f);
	/* Through to the disk: a crash (or a hung collective killed by the scheduler) keeps
	 * every line already written. */
	if (fflush(log->f) != 0 || fsync(fileno(log->f)) != 0 || ferror(log->f)) {
		fprintf(stderr, "spsim-validate: %s: write failed: %s\n", log->path, strerror(errno));
		return VALIDATE_EIO;
	}
	return VALIDATE_OK;
}

void validate_log_close(validate_log *log)
{
	if (log && log->f) {
		fclose(log->f);
		log->f = NULL;
	}
}
