#include "workload/workload.h"

const char *workload_coll_name(workload_coll c)
{
	switch (c) {
	case WL_COLL_ALLTOALL: return "alltoall";
	case WL_COLL_ALLGATHER: return "allgather";
	case WL_COLL_REDUCESCATTER: return "reducescatter";
	case WL_COLL_ALLREDUCE: return "allreduce";
	case WL_COLL_SENDRECV: return "sendrecv";
	case WL_COLL_BROADCAST: return "broadcast";
	case WL_COLL_COUNT: break;
	}
	return "?";
}

const char *workload_alg_name(workload_alg a)
{
	switch (a) {
	case WL_ALG_DIRECT: return "direct";
	case WL_ALG_PAIRWISE: return "pairwise";
	case WL_ALG_RING: return "ring";
	case WL_ALG_HIERARCHICAL: return "hierarchical";
	case WL_ALG_COUNT: break;
	}
	return "?";
}

const char *workload_strategy_name(config_strategy s)
{
	return config_strategy_names[s];
}
