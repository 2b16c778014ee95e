/* Shipped data files: models/<name>.yaml and platforms/<name>.yaml looked up in
 * $SPSIM_DATA_DIR, then the source tree, then the install datadir. */
#include "config/config.h"
#include "spsim_build.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The search roots in order; unset or empty entries are NULL. */
static void data_roots(const char *roots[3])
{
	const char *env = getenv("SPSIM_DATA_DIR");
	roots[0] = env && *env ? env : NULL;
	roots[1] = SPSIM_SOURCE_DATA_DIR;
	roots[2] = SPSIM_INSTALL_DATA_DIR;
}

static bool is_file(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

bool config_check_file(const char *path, const char *what, config_error *err)
{
	struct stat st;
	if (!path[0])
		return config_fail(err, "an empty path, expected %s file", what);
	if (stat(path, &st) != 0)
		return true; /* the open that follows says why (no such file, permission) */
	if (S_ISDIR(st.st_mode))
		return config_fail(err, "%s is a directory, expected %s file", path, what);
	/* a device (/dev/zero, /dev/urandom) never ends or is no text: refused before reading.
	 * Pipes stay readable (process substitution, <(zcat log.gz)); the readers cap their size. */
	if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) || S_ISSOCK(st.st_mode))
		return config_fail(err, "%s is a device, expected %s file", path, what);
	return true;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* "models" -> "model", for messages. */
static void singular(const char *kind, char *buf, size_t len)
{
	size_t n = strlen(kind);
	if (n > 0 && kind[n - 1] == 's')
		n--;
	snprintf(buf, len, "%.*s", (int)n, kind);
}

void config_dir_of(const char *path, char *out, size_t len)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		snprintf(out, len, ".");
	else if (slash == path)
		snprintf(out, len, "/");
	else
		snprintf(out, len, "%.*s", (int)(slash - path), path);
}

FILE *config_open_beside(const char *path, char *tmp, size_t len, config_error *err)
{
	if (snprintf(tmp, len, "%s.XXXXXX", path) >= (int)len) {
		config_fail(err, "%s: path too long", path);
		return NULL;
	}
	int fd = mkstemp(tmp); /* O_EXCL: a name no file has */
	if (fd < 0) {
		config_fail(err, "%s: cannot create a file beside it: %s", path, strerror(errno));
		return NULL;
	}
	mode_t um = umask(0); /* mkstemp makes 0600; a new file's mode is 0666 less the umask */
	umask(um);
	FILE *f = fchmod(fd, 0666 & ~um) == 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		config_fail(err, "%s: cannot write beside it: %s", path, strerror(errno));
		close(fd);
		unlink(tmp);
	}
	return f;
}

static bool path_like(const char *s)
{
	return strchr(s, '/') || ends_with(s, ".yaml") || ends_with(s, ".yml");
}

bool config_resolve_relative(const char *dir, const char *value, char *out, size_t len)
{
	if (!path_like(value) || value[0] == '/' || strcmp(dir, ".") == 0)
		return (size_t)snprintf(out, len, "%s", value) < len;
	return (size_t)snprintf(out, len, "%s/%s", dir, value) < len;
}

bool config_find_data(const char *kind, const char *name_or_path, char *out, size_t out_len, config_error *err)
{
	char what[64];
	singular(kind, what, sizeof what);
	if (!name_or_path || !*name_or_path)
		return config_fail(err, "empty %s name, expected a shipped %s name or a path to a .yaml file", what,
				   what);
	if (path_like(name_or_path)) {
		char desc[80];
		snprintf(desc, sizeof desc, "a %s .yaml", what);
		if (!config_check_file(name_or_path, desc, err))
			return false;
		if (!is_file(name_or_path))
			return config_fail(err, "%s: no such file, expected a path to a %s .yaml file", name_or_path,
					   what);
		int n = snprintf(out, out_len, "%s", name_or_path);
		if (n < 0 || (size_t)n >= out_len)
			return config_fail(err, "%s: path too long", name_or_path);
		return true;
	}
	const char *roots[3];
	data_roots(roots);
	for (int i = 0; i < 3; i++) {
		if (!roots[i])
			continue;
		int n = snprintf(out, out_len, "%s/%s/%s.yaml", roots[i], kind, name_or_path);
		if (n > 0 && (size_t)n < out_len && is_file(out))
			return true;
	}
	char **names = NULL;
	int count = config_list_data(kind, &names);
	char list[CONFIG_ERROR_MAX / 2] = "";
	size_t used = 0;
	for (int i = 0; i < count; i++) {
		int w = snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", names[i]);
		if (w > 0 && (size_t)w < sizeof list - used)
			used += (size_t)w;
		free(names[i]);
	}
	free(names);
	if (count <= 0)
		return config_fail(err, "unknown %s '%s' and no shipped %s found (set SPSIM_DATA_DIR), expected a "
				   "path to a .yaml file", what, name_or_path, kind);
	return config_fail(err, "unknown %s '%s', expected one of the shipped %s: %s (or a path to a .yaml file)",
			   what, name_or_path, kind, list);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int config_list_data(const char *kind, char ***names)
{
	*names = NULL;
	const char *roots[3];
	data_roots(roots);
	char **v = NULL;
	size_t n = 0, cap = 0;
	for (int i = 0; i < 3; i++) {
		if (!roots[i])
			continue;
		char dir[CONFIG_PATH_MAX];
		int w = snprintf(dir, sizeof dir, "%s/%s", roots[i], kind);
		if (w < 0 || (size_t)w >= sizeof dir)
			continue;
		DIR *d = opendir(dir);
		if (!d)
			continue;
		struct dirent *e;
		while ((e = readdir(d))) {
			const char *f = e->d_name;
			if (f[0] == '.' || !ends_with(f, ".yaml"))
				continue;
			size_t len = strlen(f) - strlen(".yaml");
			bool dup = false;
			for (size_t j = 0; j < n; j++)
				if (strlen(v[j]) == len && strncmp(v[j], f, len) == 0)
					dup = true;
			if (dup)
				continue;
			if (n == cap) {
				size_t ncap = cap ? 2 * cap : 16;
				char **nv = realloc(v, ncap * sizeof *nv);
				if (!nv)
					break;
				v = nv;
				cap = ncap;
			}
			char *s = malloc(len + 1);
			if (!s)
				break;
			memcpy(s, f, len);
			s[len] = '\0';
			v[n++] = s;
		}
		closedir(d);
	}
	if (n > 1)
		qsort(v, n, sizeof *v, cmp_str);
	*names = v;
	return (int)n;
}
