/* flows.cpp: a flow that stands for `weight` identical flows (collectives.c). */
#ifndef SPSIM_ENGINE_SIMGRID_FLOWS_H
#define SPSIM_ENGINE_SIMGRID_FLOWS_H

#include <stdbool.h>

#include <simgrid/forward.h>

/* Posts one side of a flow on mailbox mb (a send of `bytes`, or a receive), as
 * sg_mailbox_put_async / sg_mailbox_get_async do, in one simcall; the side that starts the
 * communication divides its network action's sharing penalty by `weight`, so that under
 * max-min sharing it moves at `weight` times the rate of one flow of its path. Sets
 * *failed when the action cannot take the weight. */
sg_comm_t sgx_flow_post(sg_mailbox_t mb, bool send, long bytes, int weight, bool *failed);

/* One side of a flow to post: a send of `bytes` or a receive on mailbox mb, standing for
 * `weight` identical flows. */
typedef struct sgx_post {
	sg_mailbox_t mb;
	long bytes;
	int weight;
	bool send;
} sgx_post;

/* Posts n sides at once, as n calls of sgx_flow_post would one after the other, but in
 * one simcall (one round trip through SimGrid's maestro instead of n); out receives their
 * comms, for sg_comm_wait_all. */
void sgx_flows_post(const sgx_post *p, int n, sg_comm_t *out, bool *failed);

#endif
