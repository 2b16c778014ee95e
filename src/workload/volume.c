/* Communication volume per GPU: buffer sizes and wire bytes (workload.h). Wire bytes follow
 * the algorithms as NCCL runs them: a ring all-gather or reduce-scatter moves (P-1)/P of the
 * buffer per rank, an all-reduce 2(P-1)/P (nccl-tests doc/PERFORMANCE.md, the bus bandwidth
 * factors), an all-to-all sends bytes/P to each of its P-1 peers (NCCL's ncclAllToAll is
 * P-1 ncclSend of bytes/P). */
#include "workload/workload.h"

static void ring_wire(double steps, int P, int r, double bytes, double *gpu, double *node)
{
	/* steps = P-1 (all-gather, reduce-scatter) or 2(P-1) (all-reduce) chunks of bytes/P
	 * per rank; of the P edges of the ring, P/r cross a node boundary when it spans
	 * several nodes */
	*gpu += steps * bytes / P;
	if (r < P)
		*node += steps * bytes / P / r;
}

void workload_wire_bytes(workload_coll c, workload_alg a, int P, int r, double bytes, double *off_gpu,
			 double *off_node)
{
	double g = 0, n = 0;
	if (r < 1 || r > P)
		r = P;
	const int nodes = P / r;
	if (P > 1 && bytes > 0) {
		bool hier = a == WL_ALG_HIERARCHICAL && nodes > 1 && r > 1;
		switch (c) {
		case WL_COLL_ALLTOALL:
			if (hier) {
				/* exchange inside the node, between nodes (one block per node pair,
				 * P/r ranks), inside again (collectives.c hierarchical) */
				g = 2.0 * bytes * (r - 1) / r + bytes * (nodes - 1) / nodes;
				n = bytes * (nodes - 1) / nodes;
			} else {
				g = bytes * (P - 1) / P;
				n = bytes * (P - r) / P;
			}
			break;
		case WL_COLL_ALLGATHER:
		case WL_COLL_REDUCESCATTER:
			if (hier) {
				ring_wire(r - 1, r, r, bytes, &g, &n);
				ring_wire(nodes - 1, nodes, 1, bytes / r, &g, &n);
			} else {
				ring_wire(P - 1, P, r, bytes, &g, &n);
			}
			break;
		case WL_COLL_ALLREDUCE:
			if (hier) {
				ring_wire(2.0 * (r - 1), r, r, bytes, &g, &n);
				ring_wire(2.0 * (nodes - 1), nodes, 1, bytes / r, &g, &n);
			} else {
				ring_wire(2.0 * (P - 1), P, r, bytes, &g, &n);
			}
			break;
		case WL_COLL_BROADCAST:
			/* a chain: every rank but the last forwards the whole buffer */
			g = bytes * (P - 1) / P;
			n = bytes * (nodes - 1) / P;
			break;
		case WL_COLL_SENDRECV:
			/* every rank sends its message to the next; the ring leaves each of its
			 * nodes once, so P/r of the P messages cross a node boundary */
			g = bytes;
			n = r < P ? bytes / r : 0;
			break;
		default:
			g = bytes * (P - 1) / P;
			n = r < P ? g : 0;
			break;
		}
	}
	*off_gpu = g;
	*off_node = n;
}

int workload_ring_per_node(const workload_layout *l, int gpus_per_node)
{
	int G = gpus_per_node, R = l->ring, st = l->ring_stride > 1 ? l->ring_stride : 1;
	if (G <= 0 || (long)R * st <= G)
		return R;
	return st >= G ? 1 : G / st;
}

void workload_volume_on(const workload_plan *plan, int gpus_per_node, workload_volume *v)
{
	const workload_program *prog = &plan->program;
	const workload_layout *l = &plan->layout;
	*v = (workload_volume){0};
	for (int i = 0; i < prog->n_micro + prog->n_step; i++) {
		const workload_block *blk = i < prog->n_micro ? &prog->micro[i] : &prog->step[i - prog->n_micro];
		double times = (double)blk->repeat * (i < prog->n_micro ? prog->grad_accum : 1);
		for (int j = 0; j < blk->n_ops; j++) {
			const workload_op *op = &blk->ops[j];
			if (op->kind != WL_OP_COMM)
				continue;
			int P = op->group == WL_GROUP_WORLD ? l->world : op->group_size > 0 ? op->group_size : l->group_size;
			/* contiguous placement: a group of P <= G ranks sits in one node (the worst
			 * rank of a straddling group has only straddle_per_node there) */
			int r = P;
			if (gpus_per_node > 0 && P > gpus_per_node)
				r = gpus_per_node;
			if (op->group == WL_GROUP_SP && l->straddle_per_node > 0 && l->straddle_per_node < r)
				r = l->straddle_per_node;
			bool ring = op->group == WL_GROUP_SP && op->coll == WL_COLL_SENDRECV && l->ring > 1;
			if (ring) { /* ring attention's message goes round the ring, not the group */
				P = l->ring;
				r = workload_ring_per_node(l, gpus_per_node);
			}
			double g, n;
			workload_wire_bytes(op->coll, op->alg, P, r, op->bytes, &g, &n);
			if (gpus_per_node <= 0)
				n = 0;
			if (op->cat == WL_CAT_SP_COMM) {
				v->sp_bytes += op->bytes * times;
				v->sp_off_gpu += ring ? g * times : P > 0 ? op->bytes * (P - 1) / P * times : 0;
				v->sp_wire_off_gpu += g * times;
				v->sp_wire_off_node += n * times;
				v->sp_collectives += (long long)times;
			} else {
				v->zero_bytes += op->bytes * times;
				v->zero_wire_off_gpu += g * times;
				v->zero_wire_off_node += n * times;
				v->zero_collectives += (long long)times * op->chunks;
			}
		}
	}
}

void workload_volume_of(const workload_plan *plan, workload_volume *v) { workload_volume_on(plan, 0, v); }
