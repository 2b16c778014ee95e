/* Internal interfaces of the SimGrid engine (not for other modules). */
#ifndef SPSIM_ENGINE_SIMGRID_SG_INTERNAL_H
#define SPSIM_ENGINE_SIMGRID_SG_INTERNAL_H

#include <stdio.h>

#include "engine/simgrid/simgrid.h"

/* What to generate. A reduced platform (symmetry) has `nodes` < `system_nodes`: the
 * generated nodes are the first period of the system, laid out exactly as there (same leaf
 * boundaries), and `wrap` adds a zone of ghost hosts that stand for the GPUs of the next
 * period's first node: a flow to ghost j crosses the network exactly as a flow into the
 * next period would, and lands on node 0's links (its image under the symmetry). */
typedef struct sgx_spec {
	const config_platform *p;
	int nodes;        /* nodes generated, hosts n0g0 .. */
	int system_nodes; /* nodes of the system they belong to (leaf structure) */
	bool wrap;
} sgx_spec;

bool sgx_platform_write(const sgx_spec *s, FILE *out, config_error *err);

/* Host names, shared by the generator and the executor. */
void sgx_host_name(char *buf, size_t len, int node, int local);
void sgx_ghost_name(char *buf, size_t len, int local);

/* True when the fat-tree has more than one leaf in a system of `system_nodes` nodes. */
bool sgx_has_leaves(const config_platform *p, int system_nodes);

#endif
