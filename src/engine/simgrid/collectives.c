/* Collectives as flows (docs/simgrid.md "Collectives"). Each algorithm is a sequence of
 * phases; in a phase a rank posts its sends and receives at once and waits for all of
 * them. A message of S bytes between ranks a and b starts when both have posted it and
 * takes latency(a, b) + S / (its max-min share of the route's bandwidth).
 *
 * Latency is added here, not by SimGrid: CM02 divides a link's bandwidth among flows in
 * inverse proportion to their route latency (TCP's RTT unfairness), which would let an
 * NVLink flow starve an InfiniBand one on a shared PCIe link. The engine zeroes every
 * link's latency after loading the platform, and each side of a message waits the route's
 * latency before posting it, so the flow starts at max(ready_a, ready_b) + latency and
 * then shares bandwidth equally (pure alpha-beta with max-min sharing).
 *
 * Algorithms (the analytic engine's closed forms, engine/collectives.c, are the
 * contention-free limit of these):
 *   all-to-all direct   one phase, bytes/P to every other member (NCCL's all-to-all)
 *   all-to-all pairwise P-1 phases; in phase k member i sends to i+k, receives from i-k
 *   ring                steps x (bytes/P), over n_ch channels of 1/n_ch of the bytes each;
 *                       all-gather and reduce-scatter P-1 steps, all-reduce 2(P-1)
 *   hierarchical        intra-node ring (or all-to-all), inter-node ring between the
 *                       members of equal node-local index, intra-node ring
 *   send/recv           member i sends the bytes to i+1
 *   broadcast           pipelined chain from member 0
 * Ring aggregation (default): one flow per ring edge carries every step's bytes, then the
 * ring's members meet at a zero-time barrier and wait (steps - 1) x the ring's largest
 * latency; docs/simgrid.md proves this equals the step-by-step ring when every step sees
 * the same sharing, and tests hold the two modes to it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <simgrid/actor.h>
#include <simgrid/barrier.h>
#include <simgrid/comm.h>
#include <simgrid/engine.h>
#include <simgrid/mailbox.h>
#include <simgrid/semaphore.h>

#include "engine/nccl.h"
#include "engine/simgrid/flows.h"
#include "engine/simgrid/sg_internal.h"
#include "util/intmath.h"

static int node_of(const sgx_run *r, int rank) { return r->gpu_of[rank] / r->gpn; }

double sgx_latency(const sgx_run *r, int a, int b)
{
	return node_of(r, a) == node_of(r, b) ? r->p->intra.latency : r->p->inter.latency;
}

/* ------------------------------------------------------------------ groups --- */

static void group_free(sgx_group *g)
{
	if (!g)
		return;
	free(g->members);
	free(g->order);
	free(g->pos);
	free(g->sub_intra);
	free(g->sub_inter);
	if (g->intra)
		for (int u = 0; u < g->nodes; u++)
			group_free(&g->intra[u]);
	if (g->inter)
		for (int j = 0; j < g->per_node; j++)
			group_free(&g->inter[j]);
	free(g->intra);
	free(g->inter);
	memset(g, 0, sizeof *g);
}

/* Walecki's construction: floor((n-1)/2) edge-disjoint Hamiltonian cycles of the complete
 * graph K_n (n <= 64): vertex n-1 at the centre, vertices 0..n-2 on a circle; cycle i
 * visits the centre, then the circle in the zigzag i, i+1, i-1, i+2, i-2, ... (mod n-1).
 * The cycles are checked edge by edge (they pass for every n from 3 to 64); on a failure
 * the circulant cycles t -> t + s with gcd(s, n) = 1 are used instead. Returns the number
 * of cycles written to out (n entries each). */
static int hamiltonian_cycles(int n, int *out)
{
	int want = (n - 1) / 2, M = n - 1;
	unsigned long long used[64] = {0};
	bool ok = true;
	for (int i = 0; i < want && ok; i++) {
		int *c = out + i * n;
		c[0] = n - 1;
		for (int t = 0; t < M; t++) {
			int z = (t % 2) ? (t + 1) / 2 : -t / 2;
			c[t + 1] = ((i + z) % M + M) % M;
		}
		for (int t = 0; t < n && ok; t++) {
			int a = c[t], b = c[(t + 1) % n];
			if (a == b || (used[a] >> b & 1ULL))
				ok = false;
			used[a] |= 1ULL << b;
			used[b] |= 1ULL << a;
		}
	}
	if (ok)
		return want;
	int k = 0;
	for (int s = 1; s <= want; s++)
		if ((int)util_gcd(s, n) == 1) {
			for (int t = 0; t < n; t++)
				out[k * n + t] = (int)(((long)t * s) % n);
			k++;
		}
	return k;
}

/* node_slot: scratch of one int per node of the system, all -1 on entry and exit. */
static bool group_init(sgx_run *r, sgx_group *g, const int *members, int size, bool want_sub, int *node_slot)
{
	memset(g, 0, sizeof *g);
	g->size = size;
	g->members = malloc((size_t)size * sizeof *g->members);
	int *node_idx = malloc((size_t)size * sizeof *node_idx);  /* member -> node index in group */
	int *in_node = malloc((size_t)size * sizeof *in_node);    /* member -> index within its node */
	int *count = calloc((size_t)size, sizeof *count);         /* per group node: members */
	int *first = malloc((size_t)size * sizeof *first);        /* per group node: system node */
	if (!g->members || !node_idx || !in_node || !count || !first)
		goto oom;
	memcpy(g->members, members, (size_t)size * sizeof *members);
	int nodes = 0;
	for (int i = 0; i < size; i++) {
		int u = node_of(r, members[i]);
		if (node_slot[u] < 0) {
			node_slot[u] = nodes;
			first[nodes++] = u;
		}
		node_idx[i] = node_slot[u];
		in_node[i] = count[node_idx[i]]++;
		if (members[i] < r->Wsim)
			g->sim_members++;
	}
	for (int k = 0; k < nodes; k++)
		node_slot[first[k]] = -1;
	g->nodes = nodes;
	g->per_node = count[0];
	for (int k = 1; k < nodes; k++)
		if (count[k] != g->per_node)
			g->per_node = 0;

	/* channels */
	const config_platform *p = r->p;
	int C = 1, cycles = 0;
	int cyc[32 * 64];
	if (nodes >= 2 && g->per_node > 0) {
		C = p->inter.nics_per_node < g->per_node ? p->inter.nics_per_node : g->per_node;
		if (C < 1)
			C = 1;
	} else if (nodes == 1 && p->intra.fabric == CONFIG_FABRIC_NVLINK_MESH && size >= 3 && size <= 64) {
		/* edge-disjoint Hamiltonian cycles of the complete graph on the members, each
		 * used in both directions (NCCL's rings over disjoint NVLinks) */
		cycles = hamiltonian_cycles(size, cyc);
		C = 2 * cycles;
	}
	g->n_ch = C;
	g->order = malloc((size_t)C * size * sizeof *g->order);
	g->pos = malloc((size_t)C * size * sizeof *g->pos);
	if (!g->order || !g->pos)
		goto oom;
	if (cycles > 0) {
		for (int k = 0; k < cycles; k++)
			for (int t = 0; t < size; t++) {
				int v = cyc[k * size + t];
				g->order[(2 * k) * size + t] = v;
				g->order[(2 * k + 1) * size + (size - 1 - t)] = v;
			}
	} else if (nodes >= 2 && g->per_node > 0) {
		/* channel c: every node's members rotated by c, nodes in order; the ring leaves
		 * each node from its member c-1, so the channels use distinct NICs */
		int rr = g->per_node;
		int *by_node = malloc((size_t)size * sizeof *by_node);
		if (!by_node)
			goto oom;
		for (int i = 0; i < size; i++)
			by_node[node_idx[i] * rr + in_node[i]] = i;
		for (int c = 0; c < C; c++)
			for (int k = 0; k < nodes; k++)
				for (int t = 0; t < rr; t++)
					g->order[c * size + k * rr + t] = by_node[k * rr + (t + c) % rr];
		free(by_node);
	} else {
		for (int t = 0; t < size; t++)
			g->order[t] = t;
	}
	for (int c = 0; c < C; c++)
		for (int t = 0; t < size; t++)
			g->pos[c * size + g->order[c * size + t]] = t;
	g->lat_max = 0;
	for (int c = 0; c < C && size > 1; c++)
		for (int t = 0; t < size; t++) {
			int a = members[g->order[c * size + t]], b = members[g->order[c * size + (t + 1) % size]];
			double l = sgx_latency(r, a, b);
			if (l > g->lat_max)
				g->lat_max = l;
		}

	/* hierarchical subgroups */
	if (want_sub && nodes >= 2 && g->per_node >= 2) {
		int rr = g->per_node;
		g->intra = calloc((size_t)nodes, sizeof *g->intra);
		g->inter = calloc((size_t)rr, sizeof *g->inter);
		g->sub_intra = malloc((size_t)size * sizeof *g->sub_intra);
		g->sub_inter = malloc((size_t)size * sizeof *g->sub_inter);
		int *tmp = malloc((size_t)(nodes > rr ? nodes : rr) * sizeof *tmp);
		int *by_node = malloc((size_t)size * sizeof *by_node);
		if (!g->intra || !g->inter || !g->sub_intra || !g->sub_inter || !tmp || !by_node) {
			free(tmp);
			free(by_node);
			goto oom;
		}
		for (int i = 0; i < size; i++) {
			by_node[node_idx[i] * rr + in_node[i]] = members[i];
			g->sub_intra[i] = node_idx[i];
			g->sub_inter[i] = in_node[i];
		}
		bool ok = true;
		for (int k = 0; k < nodes && ok; k++)
			ok = group_init(r, &g->intra[k], by_node + k * rr, rr, false, node_slot);
		for (int j = 0; j < rr && ok; j++) {
			for (int k = 0; k < nodes; k++)
				tmp[k] = by_node[k * rr + j];
			ok = group_init(r, &g->inter[j], tmp, nodes, false, node_slot);
		}
		free(tmp);
		free(by_node);
		if (!ok)
			goto oom;
	}
	free(node_idx);
	free(in_node);
	free(count);
	free(first);
	return true;
oom:
	free(node_idx);
	free(in_node);
	free(count);
	free(first);
	group_free(g);
	return false;
}

bool sgx_groups_build(sgx_run *r, config_error *err)
{
	int nodes_total = r->nodes; /* every node a rank sits on (failed nodes may leave gaps) */
	int *slot = malloc((size_t)nodes_total * sizeof *slot);
	int *m = malloc((size_t)r->W * sizeof *m);
	if (!slot || !m) {
		free(slot);
		free(m);
		return config_fail(err, "out of memory building collective groups");
	}
	for (int u = 0; u < nodes_total; u++)
		slot[u] = -1;
	for (int i = 0; i < r->W; i++)
		m[i] = i;
	bool ok = group_init(r, &r->world, m, r->W, true, slot);
	int K = r->lay->group_size > 0 ? r->lay->group_size : 1;
	r->n_sp = (r->Wsim + K - 1) / K; /* groups holding simulated ranks */
	r->sp = ok ? calloc((size_t)r->n_sp, sizeof *r->sp) : NULL;
	ok = ok && r->sp;
	for (int gi = 0; gi < r->n_sp && ok; gi++) /* the last group may be short */
		ok = group_init(r, &r->sp[gi], m + gi * K, r->W - gi * K < K ? r->W - gi * K : K, true, slot);
	/* USP's rings: R ranks U apart inside each block of U x R (ring attention's send/recv
	 * goes to the next of them); a plain ring is its SP group. */
	int R = r->lay->ring, U = r->lay->ring_stride;
	if (ok && R > 1 && U > 1 && r->W % (R * U) == 0) {
		r->n_ring = r->W / R;
		r->ring = calloc((size_t)r->n_ring, sizeof *r->ring);
		ok = r->ring != NULL;
		for (int q = 0; q < r->n_ring && ok; q++) {
			int base = q / U * R * U + q % U;
			for (int j = 0; j < R; j++)
				m[j] = base + j * U;
			ok = group_init(r, &r->ring[q], m, R, false, slot);
		}
	}
	free(slot);
	free(m);
	if (!ok)
		return config_fail(err, "out of memory building collective groups");
	return true;
}

void sgx_groups_free(sgx_run *r)
{
	group_free(&r->world);
	for (int i = 0; i < r->n_sp && r->sp; i++)
		group_free(&r->sp[i]);
	free(r->sp);
	r->sp = NULL;
	for (int i = 0; i < r->n_ring && r->ring; i++)
		group_free(&r->ring[i]);
	free(r->ring);
	r->ring = NULL;
	r->n_ring = 0;
}

/* --------------------------------------------------------------- mailboxes --- */

static size_t mix(unsigned long long k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	return (size_t)k;
}

/* Slot of key in the table (its own, or the empty one where it belongs). */
static size_t mb_slot(const sgx_run *r, unsigned long long key)
{
	size_t h = mix(key) & (r->mb_cap - 1);
	while (r->mb_key[h] && r->mb_key[h] != key)
		h = (h + 1) & (r->mb_cap - 1);
	return h;
}

/* The mailbox of messages from src to dst on stream s; dst >= Wsim names ghost dst - Wsim.
 * One mailbox per ordered pair and stream: messages of one stream are matched in program
 * order, and two streams never steal each other's messages.
 * sg_mailbox_by_name is a simcall (other actors run meanwhile), so the table is probed
 * again after it. */
static sg_mailbox_t mailbox(sgx_run *r, int src, int dst, int s)
{
	unsigned long long key =
		((unsigned long long)src * (unsigned long long)(r->Wsim + r->gpn) + (unsigned long long)dst) *
			WL_STREAM_COUNT +
		(unsigned long long)s + 1;
	if (r->mb_cap) {
		size_t h = mb_slot(r, key);
		if (r->mb_key[h])
			return r->mb_val[h];
	}
	char name[64];
	snprintf(name, sizeof name, "m%d>%d:%d", src, dst, s);
	sg_mailbox_t mb = sg_mailbox_by_name(name); /* may yield */
	if (2 * (r->mb_n + 1) > r->mb_cap) {
		size_t cap = r->mb_cap ? 2 * r->mb_cap : 1024;
		unsigned long long *nk = calloc(cap, sizeof *nk);
		sg_mailbox_t *nv = calloc(cap, sizeof *nv);
		if (!nk || !nv) {
			free(nk);
			free(nv);
			r->oom = true;
			return mb; /* correct, only not cached */
		}
		for (size_t i = 0; i < r->mb_cap; i++)
			if (r->mb_key[i]) {
				size_t h = mix(r->mb_key[i]) & (cap - 1);
				while (nk[h])
					h = (h + 1) & (cap - 1);
				nk[h] = r->mb_key[i];
				nv[h] = r->mb_val[i];
			}
		free(r->mb_key);
		free(r->mb_val);
		r->mb_key = nk;
		r->mb_val = nv;
		r->mb_cap = cap;
	}
	size_t h = mb_slot(r, key);
	if (!r->mb_key[h]) {
		r->mb_key[h] = key;
		r->mb_val[h] = mb;
		r->mb_n++;
	}
	return r->mb_val[h];
}

/* ------------------------------------------------------------------ phases --- */

typedef struct flow {
	int peer; /* logical rank */
	double bytes;
	bool send;
	double lat;
	int weight; /* identical flows this one stands for (phase) */
} flow;

static sgx_proxy *proxy_of(sgx_run *r, int local, int s)
{
	sgx_proxy *px = &r->proxy[local * WL_STREAM_COUNT + s];
	sgx_proxy_init(px);
	return px;
}

/* Creating a semaphore is a simcall: another actor may have created them meanwhile. */
void sgx_proxy_init(sgx_proxy *px)
{
	if (px->ready)
		return;
	sg_sem_t a = sg_sem_init(0), b = sg_sem_init(0);
	if (px->ready) {
		sg_sem_destroy(a);
		sg_sem_destroy(b);
		return;
	}
	px->ready = a;
	px->done = b;
}

/* Ghost-side receiver of the flows entering the period (daemon: ends with the run). */
void sgx_proxy_actor(int argc, char **argv)
{
	sgx_proxy *px = sg_actor_self_get_data();
	for (;;) {
		sg_sem_acquire(px->ready);
		if (px->weight > 1)
			sg_comm_wait(sgx_flow_post(px->mbox, false, 0, px->weight, px->failed));
		else
			sg_mailbox_get(px->mbox);
		sg_sem_release(px->done);
	}
}

static long size_of(double bytes) { return bytes > 0 ? (long)llround(bytes) : 0; }

/* Simulated time passing for this rank; nothing while only counting flows. */
static void idle(sgx_rank *R, double t)
{
	if (!R->run->counting)
		sg_actor_sleep_for(t);
}

/* A phase's flows (and their comms) live on the actor's stack up to this many; a larger
 * phase (an all-to-all over more than 16 GPUs, a ring of more than 16 channels) allocates.
 * Every actor's stack is touched down to its deepest call, so these buffers are paid for
 * in memory and cache by every stream of every GPU of a whole-cluster run (32 rather than
 * 64 entries: about one page less per actor, docs/simgrid.md §7 "Batched posts"). */
#define SGX_SMALL_PHASE 32
/* Phases up to this many flows are searched for identical ones (§5.5): a ring phase has
 * at most 2 x 64 (channels <= GPUs per node). */
#define SGX_MERGE_MAX 128

/* Posts every flow of a phase, each after its latency, and waits for all of them. */
static void phase(sgx_rank *R, int s, flow *f, int n)
{
	sgx_run *r = R->run;
	if (n == 0)
		return;
	/* identical flows (same direction, peer and size: ring channels over the same GPU
	 * pair) become one flow weighted as all of them, exact under max-min sharing
	 * (docs/simgrid.md §5.5); the others stand for themselves. A larger phase than
	 * SGX_MERGE_MAX is an all-to-all over a big group, one flow per peer, with nothing to
	 * merge (and too many pairs to compare). */
	int merged = 0;
	bool merge = r->opt.merge_flows && n <= SGX_MERGE_MAX;
	for (int k = 0; k < n; k++) {
		f[k].weight = 1;
		for (int j = 0; j < k && merge; j++)
			if (f[j].weight > 0 && f[j].peer == f[k].peer && f[j].send == f[k].send &&
			    f[j].bytes == f[k].bytes) {
				f[j].weight++;
				f[k].weight = 0;
				f[k].peer = -1;
				merged++;
				break;
			}
	}
	if (r->counting) { /* the flows this phase would start (sends), no simulation */
		for (int k = 0; k < n; k++)
			r->flows += f[k].send && f[k].weight > 0;
		return;
	}
	sg_comm_t comm_buf[SGX_SMALL_PHASE];
	sgx_proxy *wrap_buf[SGX_SMALL_PHASE];
	sgx_post post_buf[SGX_SMALL_PHASE];
	bool small = n <= SGX_SMALL_PHASE;
	sg_comm_t *comms = small ? comm_buf : malloc((size_t)n * sizeof *comms);
	sgx_proxy **wraps = small ? wrap_buf : malloc((size_t)n * sizeof *wraps);
	sgx_post *posts = small ? post_buf : malloc((size_t)n * sizeof *posts);
	if (!comms || !wraps || !posts) {
		if (!small) {
			free(comms);
			free(wraps);
			free(posts);
		}
		r->oom = true;
		return;
	}
	int nc = 0, nw = 0, np = 0;
	for (int k = 0; k < n; k++) {
		if (f[k].peer < 0)
			continue;
		f[k].lat = R->link_latency[s] ? sgx_latency(r, R->rank, f[k].peer) : 0.0;
		/* protocol and channel share of the wire: more bytes on the same links */
		f[k].bytes *= R->wire[s][node_of(r, R->rank) == node_of(r, f[k].peer) ? 0 : 1];
	}
	double elapsed = 0;
	int posted = merged;
	while (posted < n) {
		double lvl = INFINITY;
		for (int k = 0; k < n; k++)
			if (f[k].lat >= elapsed && f[k].lat < lvl && f[k].peer >= 0)
				lvl = f[k].lat;
		if (lvl > elapsed) {
			sg_actor_sleep_for(lvl - elapsed);
			elapsed = lvl;
		}
		for (int k = 0; k < n; k++) {
			if (f[k].peer < 0 || f[k].lat != lvl)
				continue;
			int q = f[k].peer;
			long sz = size_of(f[k].bytes);
			/* a flow across the period boundary must land on node 0 (the ghosts' image) */
			if (q >= r->Wsim && (f[k].send ? (q % r->Wsim) >= r->gpn : R->rank >= r->gpn)) {
				r->broken = true;
				q = q % r->Wsim;
			}
			int w = f[k].weight;
			if (f[k].send) {
				int dst = q < r->Wsim ? q : r->Wsim + (q % r->Wsim); /* ghost of q's image */
				posts[np++] = (sgx_post){mailbox(r, R->rank, dst, s), w * sz, w, true};
			} else if (q < r->Wsim) {
				posts[np++] = (sgx_post){mailbox(r, q, R->rank, s), 0, w, false};
			} else {
				/* from the previous period: its sender is q's image here, its flow
				 * lands on this rank's ghost */
				sgx_proxy *px = proxy_of(r, R->rank, s);
				px->mbox = mailbox(r, q % r->Wsim, r->Wsim + R->rank, s);
				px->weight = w;
				px->failed = &r->unweighted;
				sg_sem_release(px->ready);
				wraps[nw++] = px;
			}
			r->flows += f[k].send;
			f[k].peer = -1;
			posted++;
		}
		/* the level's sides start together, in one simcall (mailbox() may yield, so they
		 * are looked up first); each starts as it would alone, in the same order */
		if (np > 0)
			sgx_flows_post(posts, np, comms + nc, &r->unweighted);
		nc += np;
		np = 0;
	}
	sg_comm_wait_all(comms, (size_t)nc);
	for (int k = 0; k < nw; k++)
		sg_sem_acquire(wraps[k]->done);
	if (!small) {
		free(comms);
		free(wraps);
		free(posts);
	}
}

static void group_barrier(sgx_run *r, sgx_group *g, int s)
{
	if (g->sim_members <= 1 || r->counting)
		return;
	if (!g->bar[s]) {
		sg_bar_t b = sg_barrier_init((unsigned)g->sim_members); /* may yield */
		if (g->bar[s])
			sg_barrier_destroy(b);
		else
			g->bar[s] = b;
	}
	sg_barrier_wait(g->bar[s]);
}

void sgx_world_barrier(sgx_rank *R, int s) { group_barrier(R->run, &R->run->world, s); }

/* ---------------------------------------------------------------- algorithms --- */

/* Ring of `steps` steps of bytes/P each over g's channels, for member i; bg is the group
 * that meets at the end (g itself, or the parent of a hierarchical phase). */
static void ring(sgx_rank *R, int s, sgx_group *g, int i, int steps, double bytes, sgx_group *bg)
{
	int P = g->size, C = g->n_ch;
	if (P <= 1 || bytes <= 0 || steps <= 0)
		return;
	double chunk = bytes / P / C;
	flow buf[SGX_SMALL_PHASE];
	flow *f = 2 * C <= SGX_SMALL_PHASE ? buf : malloc((size_t)2 * C * sizeof *f);
	if (!f) {
		R->run->oom = true;
		return;
	}
	bool agg = R->run->opt.ring == ENGINE_SG_RING_AGGREGATED;
	int rounds = agg ? 1 : steps;
	double per = agg ? steps * chunk : chunk;
	for (int k = 0; k < rounds; k++) {
		for (int c = 0; c < C; c++) {
			int t = g->pos[c * P + i];
			f[2 * c] = (flow){.peer = g->members[g->order[c * P + (t + 1) % P]], .bytes = per, .send = true};
			f[2 * c + 1] = (flow){.peer = g->members[g->order[c * P + (t + P - 1) % P]], .bytes = per};
		}
		phase(R, s, f, 2 * C);
	}
	if (f != buf)
		free(f);
	group_barrier(R->run, bg, s);
	if (agg && steps > 1 && R->link_latency[s])
		idle(R, (steps - 1) * g->lat_max);
}

static void alltoall_direct(sgx_rank *R, int s, sgx_group *g, int i, double bytes)
{
	int P = g->size;
	flow buf[SGX_SMALL_PHASE];
	flow *f = 2 * P <= SGX_SMALL_PHASE ? buf : malloc((size_t)2 * P * sizeof *f);
	if (!f) {
		R->run->oom = true;
		return;
	}
	int n = 0;
	for (int j = 0; j < P; j++) {
		if (j == i)
			continue;
		f[n++] = (flow){.peer = g->members[j], .bytes = bytes / P, .send = true};
		f[n++] = (flow){.peer = g->members[j], .bytes = bytes / P};
	}
	phase(R, s, f, n);
	if (f != buf)
		free(f);
}

static void alltoall_pairwise(sgx_rank *R, int s, sgx_group *g, int i, double bytes)
{
	int P = g->size;
	for (int k = 1; k < P; k++) {
		flow f[2] = {{.peer = g->members[(i + k) % P], .bytes = bytes / P, .send = true},
			     {.peer = g->members[(i - k + P) % P], .bytes = bytes / P}};
		phase(R, s, f, 2);
	}
}

static int ring_steps(workload_coll c, int P) { return c == WL_COLL_ALLREDUCE ? 2 * (P - 1) : P - 1; }

static void hierarchical(sgx_rank *R, int s, sgx_group *g, int i, workload_coll c, double bytes)
{
	if (!g->intra) { /* one node, or one member per node: a plain ring */
		ring(R, s, g, i, ring_steps(c, g->size), bytes, g);
		return;
	}
	int u = g->sub_intra[i], j = g->sub_inter[i], rr = g->per_node, nodes = g->nodes;
	sgx_group *gi = &g->intra[u], *ge = &g->inter[j];
	double inter_bytes = bytes / rr;
	switch (c) {
	case WL_COLL_ALLREDUCE:
		ring(R, s, gi, j, rr - 1, bytes, g);                 /* reduce-scatter in the node */
		ring(R, s, ge, u, 2 * (nodes - 1), inter_bytes, g);  /* all-reduce across nodes */
		ring(R, s, gi, j, rr - 1, bytes, g);                 /* all-gather in the node */
		break;
	case WL_COLL_ALLGATHER:
		ring(R, s, ge, u, nodes - 1, inter_bytes, g);
		ring(R, s, gi, j, rr - 1, bytes, g);
		break;
	case WL_COLL_REDUCESCATTER:
		ring(R, s, gi, j, rr - 1, bytes, g);
		ring(R, s, ge, u, nodes - 1, inter_bytes, g);
		break;
	case WL_COLL_ALLTOALL:
		/* aggregate per destination node, exchange between nodes, deliver */
		alltoall_direct(R, s, gi, j, bytes);
		group_barrier(R->run, g, s);
		alltoall_direct(R, s, ge, u, bytes);
		group_barrier(R->run, g, s);
		alltoall_direct(R, s, gi, j, bytes);
		group_barrier(R->run, g, s);
		break;
	default:
		ring(R, s, g, i, ring_steps(c, g->size), bytes, g);
		break;
	}
}

static void broadcast(sgx_rank *R, int s, sgx_group *g, int i, double bytes)
{
	int P = g->size, t = g->pos[i];
	flow f[2];
	int n = 0;
	if (t + 1 < P)
		f[n++] = (flow){.peer = g->members[g->order[t + 1]], .bytes = bytes, .send = true};
	if (t > 0)
		f[n++] = (flow){.peer = g->members[g->order[t - 1]], .bytes = bytes};
	phase(R, s, f, n);
	group_barrier(R->run, g, s);
	if (P > 2 && R->link_latency[s])
		idle(R, (P - 2) * g->lat_max);
}

void sgx_collective(sgx_rank *R, int s, const workload_op *op)
{
	sgx_run *r = R->run;
	sgx_group *g;
	int i;
	if (op->group == WL_GROUP_SP && op->coll == WL_COLL_SENDRECV && r->ring) {
		int U = r->lay->ring_stride, D = r->lay->ring * U;
		g = &r->ring[R->rank / D * U + R->rank % U];
		i = R->rank % D / U;
	} else if (op->group == WL_GROUP_SP) {
		int K = r->lay->group_size > 0 ? r->lay->group_size : 1;
		g = &r->sp[R->rank / K];
		i = R->rank % K;
	} else {
		g = &r->world;
		i = R->rank;
	}
	int P = g->size;
	if (op->bytes <= 0)
		return;
	int chunks = op->chunks > 1 ? op->chunks : 1;
	double b = op->bytes / chunks;
	/* bucket calls in a quiet system (executor.c chunk_ops_find, docs/simgrid.md §5.6):
	 * every rank ends each call at the same instant (the world barrier, then the same
	 * wait), so each measures the same lengths and makes the same choice; when the second
	 * and third calls took the same time, the others take it too */
	bool quiet = false;
	for (int k = 0; k < r->n_chunk_ops && !quiet; k++)
		quiet = r->chunk_ops[k] == op && P > 1;
	double last_end = 0, last_len = -1; /* the previous call's end and length */
	/* NCCL's terms, the same the analytic engine charges (engine_collective_time) */
	nccl_cost nc = r->counting ? (nccl_cost){0}
				   : nccl_cost_of(r->p, op->coll, op->alg, engine_op_shape(r->p, r->lay, op), b);
	for (int k = 0; k < chunks; k++) {
		/* launch, then NCCL's latency (flows then start without their link latency) or,
		 * for a group of one, the local copy */
		double wait = nc.launch + nc.latency + (P <= 1 ? nc.local : 0.0);
		if (wait > 0)
			idle(R, wait);
		if (P <= 1)
			continue;
		R->link_latency[s] = nc.link_latency;
		R->wire[s][0] = nc.scale[0];
		R->wire[s][1] = nc.scale[1];
		switch (op->coll) {
		case WL_COLL_ALLTOALL:
			if (op->alg == WL_ALG_PAIRWISE)
				alltoall_pairwise(R, s, g, i, b);
			else if (op->alg == WL_ALG_HIERARCHICAL)
				hierarchical(R, s, g, i, op->coll, b);
			else
				alltoall_direct(R, s, g, i, b);
			break;
		case WL_COLL_ALLGATHER:
		case WL_COLL_REDUCESCATTER:
		case WL_COLL_ALLREDUCE:
			if (op->alg == WL_ALG_HIERARCHICAL)
				hierarchical(R, s, g, i, op->coll, b);
			else
				ring(R, s, g, i, ring_steps(op->coll, P), b, g);
			break;
		case WL_COLL_SENDRECV: {
			flow f[2] = {{.peer = g->members[(i + 1) % P], .bytes = b, .send = true},
				     {.peer = g->members[(i + P - 1) % P], .bytes = b}};
			phase(R, s, f, 2);
			break;
		}
		case WL_COLL_BROADCAST:
			broadcast(R, s, g, i, b);
			break;
		case WL_COLL_COUNT:
			break;
		}
		R->link_latency[s] = true;
		R->wire[s][0] = R->wire[s][1] = 1.0;
		if (!quiet || k + 1 == chunks)
			continue;
		if (r->counting) {
			if (k == 2) /* the calls the simulation will run (if the lengths agree) */
				break;
			continue;
		}
		double now = simgrid_get_clock(), len = now - last_end;
		if (k == 2 && fabs(len - last_len) <= SGX_CHUNK_TOL * len) {
			idle(R, (chunks - 1 - k) * len);
			break;
		}
		last_end = now;
		last_len = len;
	}
}
