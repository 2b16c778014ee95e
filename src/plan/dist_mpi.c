/* plan_dist over MPI: rows travel as strings (tag ROW), a rank's end as an empty message
 * (tag DONE). Rank 0 polls with MPI_Iprobe between its own workers' results, so rows are
 * written as they finish wherever they ran. Worker processes forked by a rank never call
 * MPI: they end with _exit and talk to their rank through pipes. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "plan/dist_mpi.h"

enum { TAG_ROW = 1, TAG_DONE = 2 };

typedef struct mpi_state {
	int running; /* rank 0: other ranks not yet done */
} mpi_state;

bool plan_dist_mpi_launched(void)
{
	static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "PMI_RANK", NULL};
	for (int i = 0; vars[i]; i++)
		if (getenv(vars[i]))
			return true;
	return false;
}

static bool mpi_fail(config_error *err, const char *what, int rc)
{
	char msg[MPI_MAX_ERROR_STRING];
	int len = 0;
	if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS)
		snprintf(msg, sizeof msg, "error %d", rc);
	return config_fail(err, "MPI: %s: %s", what, msg);
}

static bool dist_bcast(plan_dist *d, void *buf, size_t len, config_error *err)
{
	(void)d;
	/* MPI counts are ints: large lists go in pieces. */
	char *p = buf;
	while (len) {
		int n = len > (size_t)INT_MAX ? INT_MAX : (int)len;
		int rc = MPI_Bcast(p, n, MPI_BYTE, 0, MPI_COMM_WORLD);
		if (rc != MPI_SUCCESS)
			return mpi_fail(err, "broadcast", rc);
		p += n;
		len -= (size_t)n;
	}
	return true;
}

static bool dist_send(plan_dist *d, const char *line, config_error *err)
{
	(void)d;
	int rc = line ? MPI_Send(line, (int)strlen(line) + 1, MPI_CHAR, 0, TAG_ROW, MPI_COMM_WORLD)
		      : MPI_Send(NULL, 0, MPI_CHAR, 0, TAG_DONE, MPI_COMM_WORLD);
	return rc == MPI_SUCCESS || mpi_fail(err, "sending a row to rank 0", rc);
}

static int dist_recv(plan_dist *d, bool wait, void (*cb)(void *ctx, const char *line), void *ctx, config_error *err)
{
	mpi_state *st = d->impl;
	for (;;) {
		if (st->running <= 0)
			return 0;
		MPI_Status status;
		int flag = 0, rc;
		if (wait) {
			rc = MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &status);
			flag = 1;
			wait = false; /* one blocking wait, then take what else has arrived */
		} else {
			rc = MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &status);
		}
		if (rc != MPI_SUCCESS) {
			mpi_fail(err, "probing for rows", rc);
			return -1;
		}
		if (!flag)
			return st->running;
		int count = 0;
		MPI_Get_count(&status, MPI_CHAR, &count);
		char *buf = malloc((size_t)count + 1);
		if (!buf) {
			config_fail(err, "out of memory");
			return -1;
		}
		rc = MPI_Recv(buf, count, MPI_CHAR, status.MPI_SOURCE, status.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		if (rc != MPI_SUCCESS) {
			free(buf);
			mpi_fail(err, "receiving a row", rc);
			return -1;
		}
		buf[count] = '\0';
		if (status.MPI_TAG == TAG_DONE)
			st->running--;
		else
			cb(ctx, buf);
		free(buf);
	}
}

bool plan_dist_mpi_open(plan_dist *d, config_error *err)
{
	memset(d, 0, sizeof *d);
	int rc = MPI_Init(NULL, NULL);
	if (rc != MPI_SUCCESS)
		return mpi_fail(err, "initialisation", rc);
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	mpi_state *st = calloc(1, sizeof *st);
	if (!st) {
		MPI_Finalize();
		return config_fail(err, "out of memory");
	}
	MPI_Comm_rank(MPI_COMM_WORLD, &d->rank);
	MPI_Comm_size(MPI_COMM_WORLD, &d->size);
	st->running = d->rank == 0 ? d->size - 1 : 0;
	d->impl = st;
	d->bcast = dist_bcast;
	d->send = dist_send;
	d->recv = dist_recv;
	return true;
}

void plan_dist_mpi_close(plan_dist *d)
{
	free(d->impl);
	d->impl = NULL;
	MPI_Finalize();
}
