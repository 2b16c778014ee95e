/* MPI launch (transport.h): one process per GPU under mpirun or srun. Built with OpenMPI
 * when meson found it; otherwise validate_launch_mpi says the build lacks it. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "validate.h"

#if VALIDATE_HAVE_MPI

#include <mpi.h>

static char host[64] = "?";

/* MPI errors return (MPI_ERRORS_RETURN) and are reported with rank, host, file:line. */
#define MPI_CHECK(l, call)                                                                                       \
	do {                                                                                                     \
		int e_ = (call);                                                                                 \
		if (e_ != MPI_SUCCESS) {                                                                         \
			char s_[MPI_MAX_ERROR_STRING];                                                           \
			int n_ = 0;                                                                              \
			MPI_Error_string(e_, s_, &n_);                                                           \
			fprintf(stderr, "[rank %d on %s] %s:%d: %s failed: %s\n", (l)->proc, host, __FILE__, __LINE__, \
				#call, s_);                                                                      \
			return VALIDATE_ECOMM;                                                                   \
		}                                                                                                \
	} while (0)

static int mpi_max(validate_launch *l, double *v, int n)
{
	MPI_CHECK(l, MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
	return VALIDATE_OK;
}

static int mpi_sum(validate_launch *l, double *v, int n)
{
	MPI_CHECK(l, MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
	return VALIDATE_OK;
}

static int mpi_bcast(validate_launch *l, void *buf, size_t bytes, int root)
{
	MPI_CHECK(l, MPI_Bcast(buf, (int)bytes, MPI_BYTE, root, MPI_COMM_WORLD));
	return VALIDATE_OK;
}

static int mpi_allgather(validate_launch *l, const void *mine, void *all, size_t bytes)
{
	MPI_CHECK(l, MPI_Allgather(mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE, MPI_COMM_WORLD));
	return VALIDATE_OK;
}

static int mpi_barrier(validate_launch *l)
{
	MPI_CHECK(l, MPI_Barrier(MPI_COMM_WORLD));
	return VALIDATE_OK;
}

static void mpi_finish(validate_launch *l)
{
	(void)l;
	MPI_Finalize();
}

/* MPI_Abort ends every process of the job (mpirun kills the others); _exit in case it
 * returns. */
static void mpi_abort(validate_launch *l, int status)
{
	(void)l;
	fflush(NULL);
	MPI_Abort(MPI_COMM_WORLD, status);
	_exit(status);
}

int validate_launch_mpi(int *argc, char ***argv, validate_launch **out)
{
	static validate_launch l = {
		.name = "mpi",
		.allreduce_max = mpi_max,
		.allreduce_sum = mpi_sum,
		.bcast = mpi_bcast,
		.allgather = mpi_allgather,
		.barrier = mpi_barrier,
		.finish = mpi_finish,
		.abort = mpi_abort,
	};
	if (gethostname(host, sizeof host - 1) != 0)
		snprintf(host, sizeof host, "localhost");
	if (MPI_Init(argc, argv) != MPI_SUCCESS) {
		fprintf(stderr, "[rank ? on %s] %s:%d: MPI_Init failed\n", host, __FILE__, __LINE__);
		return VALIDATE_ECOMM;
	}
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	MPI_CHECK(&l, MPI_Comm_size(MPI_COMM_WORLD, &l.procs));
	MPI_CHECK(&l, MPI_Comm_rank(MPI_COMM_WORLD, &l.proc));
	*out = &l;
	return VALIDATE_OK;
}

#else

int validate_launch_mpi(int *argc, char ***argv, validate_launch **out)
{
	(void)argc;
	(void)argv;
	*out = NULL;
	fprintf(stderr, "spsim-validate: this build has no MPI (OpenMPI's mpi-c was not found at configure time)\n");
	return VALIDATE_ENODEV;
}

#endif
