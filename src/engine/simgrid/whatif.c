/* Background traffic (docs/simgrid.md §9): another job's ring all-reduces on the shared
 * fabric, as daemon actors that the simulation drops once the job's own actors end.
 *
 * A background what-if of SIZE bytes every PERIOD over nodes A..B (n nodes) runs one ring
 * per NIC (NCCL's channels leave through distinct NICs, §4): ring i joins GPU i of each
 * node, whose NIC is NIC i, so its flows cross that NIC, the leaf uplinks and the spine,
 * never NVLink (on PCIe also the GPU's own link, as the job's flows do). A ring all-reduce
 * sends 2 (n - 1) / n of its bytes over every edge; with ring aggregation (§5.1) that is
 * one flow per edge per all-reduce carrying SIZE / rings x 2 (n - 1) / n. An all-reduce
 * starts PERIOD after the previous one started, or as soon as it ends when it took longer.
 * The neighbour's latency terms are left out: they occupy no link. */
#include <stdlib.h>

#include <simgrid/actor.h>
#include <simgrid/comm.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/mailbox.h>

#include "engine/simgrid/sg_internal.h"

typedef struct bg_edge {
	double bytes, period;
	sg_mailbox_t out, in;
} bg_edge;

static void bg_actor(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	bg_edge *e = sg_actor_self_get_data();
	sg_actor_daemonize(sg_actor_self());
	static char token;
	for (;;) {
		double start = simgrid_get_clock();
		void *sink;
		sg_comm_t c[2] = {sg_mailbox_put_async(e->out, &token, e->bytes), sg_mailbox_get_async(e->in, &sink)};
		sg_comm_wait_all(c, 2);
		double left = start + e->period - simgrid_get_clock();
		if (left > 0)
			sg_actor_sleep_for(left);
	}
}

int sgx_background_last_node(const config_whatif *w)
{
	int last = -1;
	for (int i = 0; w && i < w->n; i++)
		if (w->item[i].kind == CONFIG_WHATIF_BACKGROUND && w->item[i].last > last)
			last = w->item[i].last;
	return last;
}

bool sgx_background_start(sgx_run *r, config_error *err)
{
	const config_whatif *w = r->in->opt.whatif;
	int rings_max = r->p->inter.nics_per_node < r->gpn ? r->p->inter.nics_per_node : r->gpn;
	size_t n_edges = 0;
	for (int i = 0; w && i < w->n; i++)
		if (w->item[i].kind == CONFIG_WHATIF_BACKGROUND)
			n_edges += (size_t)(w->item[i].last - w->item[i].node + 1) * (size_t)rings_max;
	if (n_edges == 0)
		return true;
	r->bg = calloc(n_edges, sizeof(bg_edge));
	if (!r->bg)
		return config_fail(err, "out of memory");
	bg_edge *edges = r->bg;
	size_t k = 0;
	char name[96];
	for (int i = 0; i < w->n; i++) {
		const config_whatif_item *it = &w->item[i];
		if (it->kind != CONFIG_WHATIF_BACKGROUND)
			continue;
		int n = it->last - it->node + 1;
		for (int c = 0; c < rings_max; c++)
			for (int j = 0; j < n; j++) {
				bg_edge *e = &edges[k++];
				e->bytes = it->bytes / rings_max * 2.0 * (n - 1) / n;
				e->period = it->period;
				snprintf(name, sizeof name, "bg%d.%d.%d", i, c, (j + 1) % n);
				e->out = sg_mailbox_by_name(name);
				snprintf(name, sizeof name, "bg%d.%d.%d", i, c, j);
				e->in = sg_mailbox_by_name(name);
				sgx_host_name(name, sizeof name, it->node + j, c);
				sg_host_t h = sg_host_by_name(name);
				if (!h)
					return config_fail(err, "internal: host %s missing for the background traffic", name);
				snprintf(name, sizeof name, "bg%d.%d.%d", i, c, j);
				sg_actor_t a = sg_actor_init(name, h);
				sg_actor_set_data(a, e);
				sg_actor_start(a, bg_actor, 0, NULL);
			}
	}
	return true;
}
