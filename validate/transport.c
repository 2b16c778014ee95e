/* Shared pieces of the transports: names, error strings, host layout, the single-process
 * launch, and nccl-tests' bus-bandwidth factors. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "validate.h"

const char *validate_strerror(int rc)
{
	switch (rc) {
	case VALIDATE_OK: return "success";
	case VALIDATE_EINVAL: return "invalid argument or unsupported shape";
	case VALIDATE_ENOMEM: return "out of memory";
	case VALIDATE_EDEVICE: return "CUDA or cuBLAS failure";
	case VALIDATE_ECOMM: return "NCCL or MPI failure";
	case VALIDATE_ETIMEOUT: return "a collective timed out and was aborted";
	case VALIDATE_EIO: return "cannot write results";
	case VALIDATE_ECHECK: return "result differs from its reference";
	case VALIDATE_ENODEV: return "no GPU, or a transport this build lacks";
	default: return "unknown error";
	}
}

const char *validate_coll_name(validate_coll c)
{
	static const char *const names[VALIDATE_COLL_COUNT] = {"alltoall", "allgather", "reducescatter", "allreduce"};
	return (unsigned)c < VALIDATE_COLL_COUNT ? names[c] : "?";
}

const char *validate_link_name(int link) { return link == VALIDATE_LINK_INTER ? "inter" : "intra"; }

double validate_busbw_factor(validate_coll c, int n)
{
	if (n < 1)
		return 0;
	/* nccl-tests doc/PERFORMANCE.md, "Bus bandwidth". */
	double f = (double)(n - 1) / n;
	return c == VALIDATE_ALLREDUCE ? 2 * f : f;
}

void validate_transport_destroy(validate_transport *t)
{
	if (t)
		t->ops->destroy(t);
}

int validate_transport_ranks_per_node(const validate_transport *t)
{
	if (t->nodes < 1 || t->world % t->nodes != 0)
		return 0;
	int per = t->world / t->nodes;
	for (int r = 0; r < t->world; r++)
		if (t->node_of[r] != r / per)
			return 0;
	return per;
}

bool validate_transport_groups_intra(const validate_transport *t, int K)
{
	for (int r = 0; r < t->world; r++)
		if (t->node_of[r] != t->node_of[r - r % K])
			return false;
	return true;
}

/* ------------------------------------------------------ single-process launch --- */
static int single_reduce(validate_launch *l, double *v, int n)
{
	(void)l;
	(void)v;
	(void)n;
	return VALIDATE_OK;
}

static int single_bcast(validate_launch *l, void *buf, size_t bytes, int root)
{
	(void)l;
	(void)buf;
	(void)bytes;
	(void)root;
	return VALIDATE_OK;
}

static int single_allgather(validate_launch *l, const void *mine, void *all, size_t bytes)
{
	(void)l;
	memmove(all, mine, bytes);
	return VALIDATE_OK;
}

static int single_barrier(validate_launch *l)
{
	(void)l;
	return VALIDATE_OK;
}

static void single_finish(validate_launch *l) { (void)l; }

static void single_abort(validate_launch *l, int status)
{
	(void)l;
	fflush(NULL);
	_exit(status);
}

validate_launch *validate_launch_single(void)
{
	static validate_launch single = {
		.name = "single",
		.procs = 1,
		.proc = 0,
		.allreduce_max = single_reduce,
		.allreduce_sum = single_reduce,
		.bcast = single_bcast,
		.allgather = single_allgather,
		.barrier = single_barrier,
		.finish = single_finish,
		.abort = single_abort,
	};
	return &single;
}

bool validate_launch_mpi_env(void)
{
	static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", NULL};
	for (int i = 0; vars[i]; i++)
		if (getenv(vars[i]))
			return true;
	return false;
}
