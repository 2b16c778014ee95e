/* simgrid: the generated platform, collectives as flows against their closed forms,
 * contention derived by hand, agreement with the analytic engine, the exactness of ring
 * aggregation and of the symmetry reduction, determinism, placement and traces.
 *
 * Every simulation runs in its own process (Check's fork mode): SimGrid initialises once
 * per process. Hand platform (tests/testutil.h): NVSwitch 100 GB/s per GPU, 1 us;
 * NICs 10 GB/s, 10 us; efficiencies 1; 100 TFLOP/s; 1000 GB/s HBM. */
#include "spsim_build.h"

#if !SPSIM_HAVE_SIMGRID
int main(void) { return 77; } /* built without SimGrid: skipped */
#else
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/link.h>
#include <xbt/dynar.h>

#include "engine/analytic.h"
#include "engine/nccl.h"
#include "engine/simgrid/sg_internal.h"
#include "engine/simgrid/simgrid.h"
#include "report/trace.h"
#include "testutil.h"

/* ------------------------------------------------------------------ helpers --- */

/* A one-block program built by hand: `ops` run once (repeat times), in order. */
typedef struct hand {
	workload_plan plan;
	workload_block blk[4];
	config_job job;
	config_model model;
	engine_input in;
} hand;

static void hand_init(hand *h, const config_platform *p, int world, int group_size, const workload_op *ops, int n,
		      int repeat)
{
	memset(h, 0, sizeof *h);
	h->model = tu_model();
	h->job = tu_job(CONFIG_STRATEGY_BASP, world, world, world / group_size, 1, 0);
	h->job.grad_accum = 1;
	workload_layout *l = &h->plan.layout;
	l->world = world;
	l->sp = world;
	l->group_size = group_size;
	l->n_groups = world / group_size;
	l->seqs_per_group = 1;
	l->tokens_per_rank = 1;
	h->blk[0] = (workload_block){.name = "hand", .repeat = repeat, .layer_first = -1,
				     .ops = (workload_op *)ops, .n_ops = n, .cap_ops = n};
	h->plan.program.micro = h->blk;
	h->plan.program.n_micro = 1;
	h->plan.program.step = h->blk + 1;
	h->plan.program.n_step = 0;
	h->plan.program.grad_accum = 1;
	h->in = (engine_input){.model = &h->model, .platform = p, .job = &h->job, .plan = &h->plan};
}

/* Adds a barrier step block running `ops` after the hand-made block. */
static void hand_step(hand *h, workload_op *ops, int n)
{
	h->blk[1] = (workload_block){.name = "step", .repeat = 1, .barrier = true, .layer_first = -1, .ops = ops,
				     .n_ops = n, .cap_ops = n};
	h->plan.program.n_step = 1;
}

static workload_op comm(workload_coll c, workload_alg a, workload_group_kind g, double bytes)
{
	return (workload_op){.name = "comm", .kind = WL_OP_COMM,
			     .cat = g == WL_GROUP_SP ? WL_CAT_SP_COMM : WL_CAT_ZERO_COMM, .stream = WL_STREAM_MAIN,
			     .coll = c, .alg = a, .group = g, .bytes = bytes, .chunks = 1, .dep = -1};
}

/* b[0]: the main stream computes 1e11 FLOPs; b[1]: the zero stream sends `bytes` to the
 * other rank (no dependency). */
static void compute_and_send(workload_op b[2], double bytes)
{
	b[0] = (workload_op){.name = "c1", .kind = WL_OP_COMPUTE, .cat = WL_CAT_COMPUTE, .stream = WL_STREAM_MAIN,
			     .kernel = WL_KERNEL_GEMM, .flops = 1e11, .dep = -1};
	b[1] = comm(WL_COLL_SENDRECV, WL_ALG_DIRECT, WL_GROUP_WORLD, bytes);
	b[1].stream = WL_STREAM_ZERO;
}

static double sim(const engine_input *in, const engine_simgrid_options *o, engine_result *res)
{
	config_error err = {{0}};
	engine_result r;
	bool ok = engine_simgrid_run_with(in, o, &r, NULL, &err);
	ck_assert_msg(ok, "simgrid run failed: %s", err.msg);
	if (res)
		*res = r;
	return r.step_time;
}

/* Runs f in a child process (SimGrid once per process) and returns what it wrote. */
typedef void (*child_fn)(void *ctx, double *out, int n);
static void in_child(child_fn f, void *ctx, double *out, int n)
{
	int fd[2];
	ck_assert_int_eq(pipe(fd), 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(fd[0]);
		double *v = calloc((size_t)n, sizeof *v);
		f(ctx, v, n);
		ssize_t w = write(fd[1], v, (size_t)n * sizeof *v);
		_exit(w == (ssize_t)(n * sizeof *v) ? 0 : 1);
	}
	close(fd[1]);
	size_t got = 0;
	while (got < (size_t)n * sizeof *out) {
		ssize_t k = read(fd[0], (char *)out + got, (size_t)n * sizeof *out - got);
		if (k <= 0)
			break;
		got += (size_t)k;
	}
	close(fd[0]);
	int status;
	waitpid(pid, &status, 0);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0 && got == (size_t)n * sizeof *out,
		      "child simulation failed");
}

/* Runs a hand program with default options; out: step, SP comm, ZeRO comm. */
static void det_child(void *ctx, double *out, int n)
{
	hand *h = ctx;
	engine_result r;
	sim(&h->in, NULL, &r);
	double v[3] = {r.step_time, r.breakdown.sp_comm, r.breakdown.zero_comm};
	for (int k = 0; k < n && k < 3; k++)
		out[k] = v[k];
}

/* ----------------------------------------------------------------- platform --- */

static char *xml_of(const config_platform *p)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	config_error err;
	ck_assert(engine_simgrid_platform_xml(p, f, &err));
	fclose(f);
	return buf;
}

START_TEST(platform_xml_has_every_gpu_link_and_nic)
{
	/* 2 nodes x 4 GPUs, NVSwitch: 8 hosts, 8 GPU links of 100 GB/s and 0.5 us (half the
	 * 1 us intra latency on each side), 2 NICs of 10 GB/s and 5 us, one switch. */
	config_platform p = tu_platform(2, 4, 1);
	char *x = xml_of(&p);
	ck_assert_ptr_nonnull(strstr(x, "<platform version=\"4.1\">"));
	for (int u = 0; u < 2; u++)
		for (int j = 0; j < 4; j++) {
			char h[128];
			snprintf(h, sizeof h, "<host id=\"n%dg%d\" speed=\"100000000000000f\"/>", u, j);
			ck_assert_msg(strstr(x, h), "missing %s", h);
			snprintf(h, sizeof h, "<link id=\"n%dg%d_link\" bandwidth=\"100000000000Bps\" latency=\"4.9999", u,
				 j);
			ck_assert_msg(strstr(x, h), "missing %s", h);
		}
	ck_assert_ptr_nonnull(strstr(x, "<link id=\"n1nic0\" bandwidth=\"10000000000Bps\""));
	ck_assert_ptr_null(strstr(x, "n1nic1"));
	/* well-formed XML: no "--" inside a comment (XML 1.0 section 2.5; the header named
	 * SimGrid's --cfg options, which xmllint and Python's expat refuse) */
	for (const char *c = strstr(x, "<!--"); c; c = strstr(c, "<!--")) {
		const char *end = strstr(c + 4, "-->");
		ck_assert_ptr_nonnull(end);
		const char *dd = strstr(c + 4, "--");
		ck_assert_msg(dd == end, "'--' inside a comment: %.80s", dd);
		c = end + 3;
	}
	free(x);
	/* efficiency scales the links: 0.5 x 100 GB/s */
	p.eff.intra_link = 0.5;
	x = xml_of(&p);
	ck_assert_ptr_nonnull(strstr(x, "<link id=\"n0g0_link\" bandwidth=\"50000000000Bps\""));
	free(x);
	/* a mesh has one link per pair: 4 GPUs -> 6 pair links per node */
	p.intra.fabric = CONFIG_FABRIC_NVLINK_MESH;
	p.intra.pair_bandwidth = 40e9;
	x = xml_of(&p);
	ck_assert_ptr_nonnull(strstr(x, "<link id=\"n1g2_g3\" bandwidth=\"20000000000Bps\" latency=\"9.9999"));
	ck_assert_ptr_null(strstr(x, "n0g0_link"));
	free(x);
}
END_TEST

/* Loads the platform in SimGrid and returns the link names of the route a -> b. */
static void route_of(const char *a, const char *b, char *out, size_t len)
{
	xbt_dynar_t d = xbt_dynar_new(sizeof(sg_link_t), NULL);
	sg_host_get_route(sg_host_by_name(a), sg_host_by_name(b), d);
	out[0] = '\0';
	unsigned c;
	sg_link_t l;
	xbt_dynar_foreach (d, c, l) {
		size_t k = strlen(out);
		snprintf(out + k, len - k, "%s%s", k ? " " : "", sg_link_get_name(l));
	}
	xbt_dynar_free(&d);
}

static void load(const config_platform *p)
{
	char path[] = "/tmp/spsim-test-XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	FILE *f = fdopen(fd, "w");
	config_error err;
	ck_assert(engine_simgrid_platform_xml(p, f, &err));
	fclose(f);
	int argc = 3;
	char *argv[] = {"test", "--cfg=network/model:CM02", "--log=root.thresh:critical", NULL};
	simgrid_init(&argc, argv);
	simgrid_load_platform(path);
	unlink(path);
}

START_TEST(fat_tree_routes_climb_only_across_leaves)
{
	/* 4 nodes x 2 GPUs, 2 NICs, leaves of 2 nodes: a message inside a leaf crosses the
	 * two NICs (and node 0's port on the leaf switch); across leaves it also climbs leaf 0's
	 * uplink, crosses leaf 0's port on the spine and descends leaf 1's uplink. GPU 1 uses
	 * NIC 1 (i mod nics). Inside a node: the two GPU links. */
	config_platform p = tu_platform(4, 2, 2);
	p.inter.topology = CONFIG_TOPO_FAT_TREE;
	p.inter.nodes_per_leaf = 2;
	p.inter.oversubscription = 4;
	load(&p);
	char r[512];
	route_of("n0g0", "n0g1", r, sizeof r);
	ck_assert_str_eq(r, "n0g0_link_UP n0g1_link_DOWN");
	route_of("n0g1", "n1g0", r, sizeof r);
	ck_assert_str_eq(r, "n0nic1_UP leaf0sw0 n1nic0_DOWN");
	route_of("n1g1", "n3g1", r, sizeof r);
	ck_assert_str_eq(r, "n1nic1_UP leaf0up_UP spsimsw0 leaf1up_DOWN n3nic1_DOWN");
	/* uplink: 2 nodes x 2 NICs x 10 GB/s / 4 = 10 GB/s */
	ck_assert_double_eq(sg_link_get_bandwidth(sg_link_by_name("leaf0up_UP")), 10e9);
	/* route latencies are the platform's: 1 us inside a node, 10 us across */
	ck_assert_double_eq_tol(sg_host_get_route_latency(sg_host_by_name("n0g0"), sg_host_by_name("n0g1")), 1e-6,
				1e-18);
	ck_assert_double_eq_tol(sg_host_get_route_latency(sg_host_by_name("n1g1"), sg_host_by_name("n3g1")), 10e-6,
				1e-18);
}
END_TEST

START_TEST(large_platforms_group_zones)
{
	/* 100 nodes on one switch: zones of at most 32 children, so routes exist between
	 * nodes in different groups and climb only switch ports: n0 is child 0 of spsim_0,
	 * spsim_0 child 0 of spsim, n99 child 3 of spsim_3 (nodes 96-99); n33 and n34 are
	 * children 1 and 2 of spsim_1, so they meet on the lower one's port. */
	config_platform p = tu_platform(100, 2, 1);
	load(&p);
	char r[512];
	route_of("n0g0", "n99g1", r, sizeof r);
	ck_assert_str_eq(r, "n0nic0_UP spsim_0sw0 spsimsw0 spsim_3sw3 n99nic0_DOWN");
	route_of("n33g0", "n34g1", r, sizeof r);
	ck_assert_str_eq(r, "n33nic0_UP spsim_1sw1 n34nic0_DOWN");
}
END_TEST

/* Every host, every link (bandwidth, latency, shared or not) and the routes between hosts
 * (links in order, latency) of the loaded platform, one line each, in name order. Routes:
 * every ordered pair when there are few hosts, else those from and to the first host. */
static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void dump_platform(FILE *f)
{
	size_t nh = sg_host_count(), nl = sg_link_count();
	sg_host_t *hosts = sg_host_list();
	sg_link_t *links = sg_link_list();
	char **names = calloc(nh + nl, sizeof *names);
	for (size_t i = 0; i < nh; i++)
		names[i] = strdup(sg_host_get_name(hosts[i]));
	qsort(names, nh, sizeof *names, by_name);
	for (size_t i = 0; i < nl; i++) {
		char line[256];
		snprintf(line, sizeof line, "%s bw %.17g lat %.17g shared %d", sg_link_get_name(links[i]),
			 sg_link_get_bandwidth(links[i]), sg_link_get_latency(links[i]), sg_link_is_shared(links[i]));
		names[nh + i] = strdup(line);
	}
	qsort(names + nh, nl, sizeof *names, by_name);
	for (size_t i = 0; i < nh + nl; i++)
		fprintf(f, "%s\n", names[i]);
	for (size_t i = 0; i < nh; i++)
		for (size_t j = 0; j < nh; j++) {
			if (i == j || (nh > 40 && i != 0 && j != 0))
				continue;
			char r[1024];
			route_of(names[i], names[j], r, sizeof r);
			fprintf(f, "%s -> %s: %s (%.17g s)\n", names[i], names[j], r,
				sg_host_get_route_latency(sg_host_by_name(names[i]), sg_host_by_name(names[j])));
		}
	for (size_t i = 0; i < nh + nl; i++)
		free(names[i]);
	free(names);
	free(hosts);
	free(links);
}

/* In a child process (SimGrid once per process): the platform of `s`, loaded from the XML
 * writer's file (xml) or built by sgx_platform_build, dumped into a string. */
static char *platform_dump_of(const sgx_spec *s, bool xml)
{
	char out[] = "/tmp/spsim-dump-XXXXXX";
	int ofd = mkstemp(out);
	ck_assert_int_ge(ofd, 0);
	close(ofd);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int argc = 3;
		char *argv[] = {"test", "--cfg=network/model:CM02", "--log=root.thresh:critical", NULL};
		simgrid_init(&argc, argv);
		config_error err;
		if (xml) {
			char path[] = "/tmp/spsim-test-XXXXXX";
			int fd = mkstemp(path);
			FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
			if (!f || !sgx_platform_write(s, f, NULL, &err))
				_exit(1);
			fclose(f);
			simgrid_load_platform(path);
			unlink(path);
		} else if (!sgx_platform_build(s, &err)) {
			_exit(2);
		}
		FILE *f = fopen(out, "w");
		if (!f)
			_exit(3);
		dump_platform(f);
		_exit(fclose(f) == 0 ? 0 : 4);
	}
	int status;
	waitpid(pid, &status, 0);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child %s failed", xml ? "load" : "build");
	char *buf = tu_read_file(out);
	ck_assert_ptr_nonnull(buf);
	unlink(out);
	return buf;
}

START_TEST(host_names_parse_back)
{
	/* the executor finds each rank's host by parsing the host list's names: the inverse
	 * of sgx_host_name, and nothing else (ghosts, routers, suffixes) */
	char name[32];
	int u = -1, j = -1;
	sgx_host_name(name, sizeof name, 2047, 7);
	ck_assert(sgx_host_parse(name, &u, &j));
	ck_assert_int_eq(u, 2047);
	ck_assert_int_eq(j, 7);
	ck_assert(!sgx_host_parse("wrapg0", &u, &j));
	ck_assert(!sgx_host_parse("n3gw", &u, &j));
	ck_assert(!sgx_host_parse("n3g1_link", &u, &j));
	ck_assert(!sgx_host_parse("n-1g0", &u, &j));
}
END_TEST

START_TEST(built_platform_equals_the_xml_one)
{
	/* The engine builds its platform through SimGrid's C++ interface (platform_s4u.cpp);
	 * `spsim platform --xml` and this test's other platforms load the XML writer's file.
	 * Both walk the same generator: the hosts, links (bandwidth, latency, sharing) and
	 * routes (links in order, latency) must be the same, on an NVSwitch node pair, an
	 * NVLink mesh, PCIe, a two-leaf fat-tree, 100 nodes in zones of zones, and a
	 * symmetry-reduced period with its ghost zone (routes of symmetrical="NO"). */
	config_platform base = tu_platform(2, 4, 1);
	config_platform ps[6];
	sgx_spec specs[6];
	for (int i = 0; i < 6; i++) {
		ps[i] = base;
		specs[i] = (sgx_spec){.p = &ps[i], .nodes = 2, .system_nodes = 2};
	}
	ps[1].intra.fabric = CONFIG_FABRIC_NVLINK_MESH;
	ps[1].intra.pair_bandwidth = 40e9;
	ps[2].intra.fabric = CONFIG_FABRIC_PCIE;
	ps[3] = tu_platform(4, 2, 2);
	ps[3].inter.topology = CONFIG_TOPO_FAT_TREE;
	ps[3].inter.nodes_per_leaf = 2;
	ps[3].inter.oversubscription = 4;
	specs[3].nodes = specs[3].system_nodes = 4;
	ps[4] = tu_platform(100, 2, 1);
	specs[4].nodes = specs[4].system_nodes = 100;
	ps[5] = ps[3];
	specs[5] = (sgx_spec){.p = &ps[5], .nodes = 2, .system_nodes = 8, .wrap = true};
	for (int i = 0; i < 6; i++) {
		char *a = platform_dump_of(&specs[i], true), *b = platform_dump_of(&specs[i], false);
		ck_assert_msg(strlen(a) > 100, "platform %d: empty dump", i);
		ck_assert_msg(strcmp(a, b) == 0, "platform %d: the built platform differs from the XML one", i);
		free(a);
		free(b);
	}
}
END_TEST

/* True when the routes a -> b and c -> d have no link in common. */
static bool routes_disjoint(const char *a, const char *b, const char *c, const char *d)
{
	char r1[512], r2[512];
	route_of(a, b, r1, sizeof r1);
	route_of(c, d, r2, sizeof r2);
	for (char *t = strtok(r1, " "); t; t = strtok(NULL, " ")) {
		size_t n = strlen(t);
		for (const char *u = r2; (u = strstr(u, t)) != NULL; u += n)
			if ((u == r2 || u[-1] == ' ') && (u[n] == ' ' || u[n] == '\0'))
				return false;
	}
	return true;
}

START_TEST(no_link_is_shared_by_the_whole_cluster)
{
	/* A single switch is a FATPIPE link that never limits a flow, but one shared link
	 * would put every inter-node flow in one sharing constraint, which SimGrid's
	 * selective update re-solves whole at every event. Each child of a zone has its own
	 * port instead: flows between different nodes share no link, inside a group of 32
	 * nodes and across groups (100 nodes: spsim_0 holds n0-n31, spsim_1 n32-n63, ...). */
	config_platform p = tu_platform(100, 2, 1);
	load(&p);
	ck_assert(routes_disjoint("n0g0", "n1g0", "n2g0", "n3g0"));
	ck_assert(routes_disjoint("n33g0", "n34g0", "n35g0", "n36g0"));
	ck_assert(routes_disjoint("n0g0", "n99g0", "n40g0", "n70g0"));
	ck_assert(routes_disjoint("n31g0", "n32g0", "n63g0", "n64g0"));
	/* flows out of one node do share its port (and its NIC), as they should */
	ck_assert(!routes_disjoint("n0g0", "n1g0", "n0g1", "n2g1"));
	/* the ports are non-blocking: every one is FATPIPE at the switch rate */
	ck_assert_int_eq(sg_link_is_shared(sg_link_by_name("spsim_1sw1")), 0); /* FATPIPE */
	ck_assert_double_ge(sg_link_get_bandwidth(sg_link_by_name("spsimsw0")), 1e18);
}
END_TEST

START_TEST(pcie_crosses_the_gpu_link_to_the_nic)
{
	config_platform p = tu_platform(2, 2, 1);
	p.intra.fabric = CONFIG_FABRIC_PCIE;
	load(&p);
	char r[512];
	route_of("n0g1", "n1g0", r, sizeof r);
	ck_assert_str_eq(r, "n0g1_link_UP n0nic0_UP spsimsw0 n1nic0_DOWN n1g0_link_DOWN");
}
END_TEST

typedef struct load_ctx {
	const char *name;
	int nodes;
} load_ctx;

static void load_child(void *ctx, double *out, int n)
{
	load_ctx *c = ctx;
	config_platform p;
	config_error err;
	ck_assert_msg(config_load_platform(c->name, &p, &err), "%s", err.msg);
	p.nodes = c->nodes;
	load(&p);
	out[0] = (double)sg_host_count();
	out[1] = p.gpus_per_node;
}

START_TEST(shipped_platforms_load_in_simgrid)
{
	/* every shipped platform, at 1, 3 and 40 nodes: SimGrid parses the XML and finds a
	 * host per GPU */
	char **names;
	int n = config_list_data("platforms", &names);
	ck_assert_int_gt(n, 0);
	const int nodes[3] = {1, 3, 40};
	for (int i = 0; i < n; i++) {
		for (int k = 0; k < 3; k++) {
			load_ctx c = {.name = names[i], .nodes = nodes[k]};
			double v[2];
			in_child(load_child, &c, v, 2);
			ck_assert_msg((int)v[0] == nodes[k] * (int)v[1], "%s x %d: %g hosts", names[i], nodes[k], v[0]);
		}
		free(names[i]);
	}
	free(names);
}
END_TEST

/* ------------------------------------------------------------- one message --- */

START_TEST(single_message_inside_a_node)
{
	/* Two ranks on one node exchange 1 MB each way (send/recv, both directions at once on
	 * SPLITDUPLEX links). NCCL's p2p path (engine/nccl.c): channels = 100 GB/s / 20 GB/s
	 * per NVLink = 5, p2p channels pow2Up(5) = 8; per peer at most pow2Up(min(8, 2 x 5
	 * links)) = 8, halved while x 2 ranks exceeds 8: 4 channels of 20 GB/s = 80 GB/s,
	 * below the 100 GB/s link: 1 us + 1e6 / 80e9 = 13.5 us. */
	config_platform p = tu_platform(1, 2, 1);
	workload_op op = comm(WL_COLL_SENDRECV, WL_ALG_DIRECT, WL_GROUP_SP, 1e6);
	hand h;
	hand_init(&h, &p, 2, 2, &op, 1, 1);
	ck_assert_close(sim(&h.in, NULL, NULL), 13.5e-6, 1e-9);
}
END_TEST

START_TEST(single_message_across_nodes)
{
	/* One GPU per node: 10 us + 1e6 / 10e9 = 110 us, and the proxy's one network post
	 * (NCCL's getNetOverhead, 1 us; engine/nccl.c p2p_message_latency): 111 us. */
	config_platform p = tu_platform(2, 1, 1);
	workload_op op = comm(WL_COLL_SENDRECV, WL_ALG_DIRECT, WL_GROUP_SP, 1e6);
	hand h;
	hand_init(&h, &p, 2, 2, &op, 1, 1);
	ck_assert_close(sim(&h.in, NULL, NULL), 111e-6, 1e-9);
}
END_TEST

/* ------------------------------------------------------ collectives, closed --- */

/* One collective alone on W ranks of p: the analytic closed form is `want` to 1e-12 and the
 * SimGrid run lands on it to `tol` relative. */
static void expect_alone(const config_platform *p, workload_coll c, workload_alg a, int W, engine_group_shape s,
			 double bytes, double want, double tol)
{
	workload_op op = comm(c, a, WL_GROUP_SP, bytes);
	hand h;
	hand_init(&h, p, W, W, &op, 1, 1);
	ck_assert_close(engine_collective_time(p, c, a, s, bytes), want, 1e-12);
	ck_assert_close(sim(&h.in, NULL, NULL), want, tol);
}

START_TEST(alltoall_direct_inside_a_node)
{
	/* P = 4 on one NVSwitch node, 4 MB buffer: 1 MB to each of 3 peers at once; the
	 * GPU's 100 GB/s up link carries 3 MB: 1 us + 3e6 / 100e9 = 31 us, as the analytic
	 * closed form says. */
	config_platform p = tu_platform(1, 4, 1);
	engine_group_shape s = {.size = 4, .per_node = 4, .active_per_node = 4};
	expect_alone(&p, WL_COLL_ALLTOALL, WL_ALG_DIRECT, 4, s, 4e6, 31e-6, 1e-9);
}
END_TEST

/* Between processes (nccl.processes per_gpu) NCCL's p2p staging leaves the local copy of
 * the channels' last chunks after the link time (engine/nccl.c p2p_staging_drain): 1e6 per
 * peer on 2 channels (p2p channels 8, nChannelsMin 8 halved to 2 for 4 ranks), 6 channels
 * of one 500 kB chunk, read and written at 1000 GB/s: 6 us, 37 us in both engines. */
START_TEST(alltoall_direct_between_processes_pays_the_staging_drain)
{
	config_platform p = tu_platform(1, 4, 1);
	p.nccl.processes = CONFIG_NCCL_PROCS_PER_GPU;
	engine_group_shape s = {.size = 4, .per_node = 4, .active_per_node = 4};
	expect_alone(&p, WL_COLL_ALLTOALL, WL_ALG_DIRECT, 4, s, 4e6, 37e-6, 1e-9);
}
END_TEST

START_TEST(alltoall_pairwise_inside_a_node)
{
	/* 3 rounds of one 1 MB message each way: 3 x (1 us + 10 us) = 33 us */
	config_platform p = tu_platform(1, 4, 1);
	workload_op op = comm(WL_COLL_ALLTOALL, WL_ALG_PAIRWISE, WL_GROUP_SP, 4e6);
	hand h;
	hand_init(&h, &p, 4, 4, &op, 1, 1);
	ck_assert_close(sim(&h.in, NULL, NULL), 33e-6, 1e-9);
}
END_TEST

START_TEST(alltoall_pairwise_across_two_nodes)
{
	/* 2 nodes of 4 with a NIC per GPU (10 GB/s, 10 us), 8 MB: 1 MB per peer. Every one of
	 * the 7 rounds has a remote send or receive on the edge ranks (rank 0 receives across
	 * in rounds 1-4 and sends across in 4-7), so the step is 7 remote rounds of 110 us plus
	 * 4 network posts of 1 us: 774 us, the analytic engine's closed form. */
	config_platform p = tu_platform(2, 4, 4);
	engine_group_shape s = {.size = 8, .per_node = 4, .active_per_node = 4};
	expect_alone(&p, WL_COLL_ALLTOALL, WL_ALG_PAIRWISE, 8, s, 8e6, 774e-6, 1e-6);
}
END_TEST

START_TEST(alltoall_on_a_mesh_uses_every_pair_link)
{
	/* NVLink mesh of 4, 50 GB/s per pair: each 1 MB message has its own link, but NCCL's
	 * p2p channels cap it (engine/nccl.c): ring channels 2 x 50 / 20 = 5, p2p channels 8,
	 * per peer pow2Up(min(8, 2 x 2 links)) = 4 halved to 2 (2 x 4 ranks = 8); 3 peers x 2
	 * channels x 20 GB/s = 120 GB/s for the 150 GB/s of the three pair links: wire time
	 * x 1.25: 1 us + 1.25 x 1e6 / 50e9 = 26 us, as the analytic engine */
	config_platform p = tu_platform(1, 4, 1);
	p.intra.fabric = CONFIG_FABRIC_NVLINK_MESH;
	p.intra.pair_bandwidth = 50e9;
	workload_op op = comm(WL_COLL_ALLTOALL, WL_ALG_DIRECT, WL_GROUP_SP, 4e6);
	hand h;
	hand_init(&h, &p, 4, 4, &op, 1, 1);
	ck_assert_close(sim(&h.in, NULL, NULL), 26e-6, 1e-9);
}
END_TEST

START_TEST(one_rank_alltoall_is_a_launch_and_a_copy)
{
	/* Groups of one GPU (BASP with as many groups as GPUs): each still launches NCCL's
	 * kernel and copies its 8 MB buffer in HBM: 5 us + 2 x 8e6 / 1000 GB/s = 21 us, as
	 * the analytic engine (tests/test_analytic.c) */
	config_platform p = tu_platform(1, 2, 1);
	p.coll_overhead = 5e-6;
	workload_op op = comm(WL_COLL_ALLTOALL, WL_ALG_DIRECT, WL_GROUP_SP, 8e6);
	hand h;
	hand_init(&h, &p, 2, 1, &op, 1, 1);
	ck_assert_close(sim(&h.in, NULL, NULL), 21e-6, 1e-9);
}
END_TEST

static void ring_child(void *ctx, double *out, int n)
{
	hand *h = ctx;
	engine_simgrid_options o;
	engine_simgrid_options_default(&o);
	o.ring = (engine_simgrid_ring_mode)out[0];
	out[0] = sim(&h->in, &o, NULL);
}

static double ring_time(hand *h, engine_simgrid_ring_mode mode)
{
	double v[1] = {(double)mode};
	/* the mode travels in out[0] into the child */
	in_child(ring_child, h, v, 1);
	return v[0];
}

/* The analytic closed form and both SimGrid ring modes give want for one call of op (its
 * bytes) over world ranks of shape s. */
static void ring_agrees(const config_platform *p, workload_op op, int world, engine_group_shape s, double want)
{
	hand h;
	hand_init(&h, p, world, world, &op, 1, 1);
	ck_assert_close(engine_collective_time(p, op.coll, op.alg, s, op.bytes), want, 1e-12);
	ck_assert_close(ring_time(&h, ENGINE_SG_RING_AGGREGATED), want, 1e-9);
	ck_assert_close(ring_time(&h, ENGINE_SG_RING_LOCKSTEP), want, 1e-9);
}

START_TEST(ring_collectives_inside_a_node)
{
	/* Ring of 4 on NVSwitch, 4 MB: chunk 1 MB, 10 us per step on the wire. NCCL picks
	 * ring/Simple here (tests/test_analytic.c ring_collectives has the comparison): its
	 * latency baseLat 8.4 us + 1 us per step. all-gather and reduce-scatter 3 steps:
	 * 8.4 + 3 + 30 = 41.4 us; all-reduce 6 steps: 8.4 + 6 + 60 = 74.4 us.
	 * Both ring modes (one flow per step, or one aggregated flow per edge) give it. */
	config_platform p = tu_platform(1, 4, 1);
	const workload_coll colls[3] = {WL_COLL_ALLGATHER, WL_COLL_REDUCESCATTER, WL_COLL_ALLREDUCE};
	const double want[3] = {41.4e-6, 41.4e-6, 74.4e-6};
	for (int c = 0; c < 3; c++) {
		workload_op op = comm(colls[c], WL_ALG_RING, WL_GROUP_WORLD, 4e6);
		hand h;
		hand_init(&h, &p, 4, 4, &op, 1, 1);
		engine_group_shape s = {.size = 4, .per_node = 4, .active_per_node = 4};
		ck_assert_close(engine_collective_time(&p, colls[c], WL_ALG_RING, s, 4e6), want[c], 1e-12);
		ck_assert_close(ring_time(&h, ENGINE_SG_RING_AGGREGATED), want[c], 1e-9);
		ck_assert_close(ring_time(&h, ENGINE_SG_RING_LOCKSTEP), want[c], 1e-9);
	}
}
END_TEST

START_TEST(ring_on_a_mesh_uses_disjoint_cycles)
{
	/* NVLink mesh of 8 GPUs, 40 GB/s per pair: K8 holds 3 edge-disjoint Hamiltonian
	 * cycles, each used both ways: 6 ring channels of 1/6 of the chunk, each on its own
	 * pair link direction. All-gather of 48 MB: chunk 6 MB, 1 MB per channel per step:
	 * 7 x 1e6 / 40e9 = 175 us on the wire, plus NCCL's ring/Simple latency 8.4 us + 7 x
	 * 1 us: 190.4 us, the analytic closed form. */
	config_platform p = tu_platform(1, 8, 1);
	p.intra.fabric = CONFIG_FABRIC_NVLINK_MESH;
	p.intra.pair_bandwidth = 40e9;
	engine_group_shape s = {.size = 8, .per_node = 8, .active_per_node = 8};
	ring_agrees(&p, comm(WL_COLL_ALLGATHER, WL_ALG_RING, WL_GROUP_WORLD, 48e6), 8, s, 190.4e-6);
}
END_TEST

START_TEST(ring_across_nodes_paced_by_the_nic)
{
	/* Ring of 8 over 2 nodes x 4, one NIC: the chunk (1 MB of 8 MB) crosses the NIC once
	 * per step: 1e6 / 10e9 = 100 us on the wire, 14 steps = 1.4 ms. NCCL's ring/Simple
	 * latency across 2 nodes (tuning.cc): 8.4 us + (14 - 2 x 2 inter steps) x max(1 us,
	 * 3 x 1 us network overhead) + 4 x 10 us = 78.4 us, x 1.4 for the multi-node ring
	 * plateau: 109.76 us; 1.50976 ms (the analytic closed form). With one NIC there is
	 * one ring channel, as in NCCL. */
	config_platform p = tu_platform(2, 4, 1);
	p.nccl.force_algo = NCCL_ALGO_RING + 1; /* NCCL would take its tree on two nodes (test_analytic.c) */
	workload_op op = comm(WL_COLL_ALLREDUCE, WL_ALG_RING, WL_GROUP_WORLD, 8e6);
	hand h;
	hand_init(&h, &p, 8, 8, &op, 1, 1);
	engine_group_shape s = {.size = 8, .per_node = 4, .active_per_node = 4};
	ck_assert_close(engine_collective_time(&p, WL_COLL_ALLREDUCE, WL_ALG_RING, s, 8e6), 1509.76e-6, 1e-12);
	ck_assert_close(ring_time(&h, ENGINE_SG_RING_AGGREGATED), 1509.76e-6, 1e-9);
	ck_assert_close(ring_time(&h, ENGINE_SG_RING_LOCKSTEP), 1509.76e-6, 1e-9);
}
END_TEST

START_TEST(ring_channels_spread_over_the_nics)
{
	/* 2 nodes x 4 GPUs, 4 NICs: NCCL runs one ring channel per NIC, each leaving the node
	 * from a different GPU. All-gather of 8 MB: chunk 1 MB per step, 1/4 per channel.
	 * Per step a NIC carries 0.25 MB (25 us at 10 GB/s); a GPU link carries the 0.75 MB
	 * of the three channels it forwards inside the node (7.5 us). Wire: 7 x 25 = 175 us;
	 * NCCL's ring/Simple latency 8.4 + 6 x 3 (network overhead) + 1 x 10 us = 36.4 us;
	 * 211.4 us. (The analytic ring takes min(NVLink, 4 NICs) = 40 GB/s for the whole
	 * chunk: the same 25 us per step here, since the NICs bind.) */
	config_platform p = tu_platform(2, 4, 4);
	workload_op op = comm(WL_COLL_ALLGATHER, WL_ALG_RING, WL_GROUP_WORLD, 8e6);
	hand h;
	hand_init(&h, &p, 8, 8, &op, 1, 1);
	ck_assert_close(ring_time(&h, ENGINE_SG_RING_AGGREGATED), 211.4e-6, 1e-9);
	ck_assert_close(ring_time(&h, ENGINE_SG_RING_LOCKSTEP), 211.4e-6, 1e-9);
	engine_group_shape s = {.size = 8, .per_node = 4, .active_per_node = 4};
	ck_assert_close(engine_collective_time(&p, WL_COLL_ALLGATHER, WL_ALG_RING, s, 8e6), 211.4e-6, 1e-12);
}
END_TEST

START_TEST(ring_network_channels_bound_the_network_leg)
{
	/* 2 nodes x 4 GPUs, one NIC of 100 GB/s per node, all-gather of 8 MB forced to
	 * ring/Simple. Per step the 1 MB chunk leaves through the NIC (10 us) and every GPU
	 * forwards it over its 100 GB/s link (10 us): the links' 100 GB/s. NCCL's network
	 * channels (engine/nccl.c ring_net_channels): one ring at the search's top speed, 48 GB/s,
	 * duplicated (compute capability 80), doubled: 4 channels of one CTA each, at most
	 * 20 GB/s (one SM80 NVLink): 80 GB/s. The bound scales the network leg only: the NIC
	 * flow carries 1.25 x its bytes (12.5 us), the NVLink forwarding stays at 10 us, so a
	 * step takes 12.5 us: 7 x 12.5 = 87.5 us, plus NCCL's ring/Simple latency 8.4 + 6 x 3
	 * (network overhead) + 1 x 10 = 36.4 us: 123.9 us, in both engines. */
	config_platform p = tu_platform(2, 4, 1);
	p.inter.nic_bandwidth = 100e9;
	p.nccl.force_proto = NCCL_PROTO_SIMPLE + 1;
	engine_group_shape s = {.size = 8, .per_node = 4, .active_per_node = 4};
	ring_agrees(&p, comm(WL_COLL_ALLGATHER, WL_ALG_RING, WL_GROUP_WORLD, 8e6), 8, s, 123.9e-6);
}
END_TEST

START_TEST(hierarchical_allreduce_across_nodes)
{
	/* 2 nodes x 4, one NIC, all-reduce of 8 MB, hierarchical:
	 *   reduce-scatter in the node: ring of 4, 3 steps of 2 MB: 3 x (1 us + 20 us) = 63 us
	 *   all-reduce across nodes on 2 MB, one ring of 2 per local rank, the four rings
	 *   sharing the node's NIC: 2 steps of 1 MB at 10/4 GB/s: 2 x (10 + 400) us = 820 us
	 *   all-gather in the node: 63 us                                total 946 us */
	config_platform p = tu_platform(2, 4, 1);
	workload_op op = comm(WL_COLL_ALLREDUCE, WL_ALG_HIERARCHICAL, WL_GROUP_WORLD, 8e6);
	hand h;
	hand_init(&h, &p, 8, 8, &op, 1, 1);
	ck_assert_close(sim(&h.in, NULL, NULL), 946e-6, 1e-9);
}
END_TEST

START_TEST(buckets_run_back_to_back)
{
	/* chunks = 4: four all-gathers of 1 MB in sequence on a ring of 4 in a node, each
	 * NCCL's ring/Simple (LL128 would take 14 + 3 x 0.56 us + 1e6 / (92 GB/s x 4/3) =
	 * 23.8 us): 8.4 + 3 x 1 us + 3 x 0.25e6 / 100e9 = 18.9 us; 75.6 us in all */
	config_platform p = tu_platform(1, 4, 1);
	workload_op op = comm(WL_COLL_ALLGATHER, WL_ALG_RING, WL_GROUP_WORLD, 4e6);
	op.chunks = 4;
	hand h;
	hand_init(&h, &p, 4, 4, &op, 1, 1);
	ck_assert_close(sim(&h.in, NULL, NULL), 75.6e-6, 1e-9);
}
END_TEST

START_TEST(broadcast_is_a_pipelined_chain)
{
	/* 4 ranks in a node, 1 MB from rank 0 down the chain: every hop carries the whole
	 * message at once (pipelined), 10 us, plus NCCL's ring/Simple broadcast latency
	 * baseLat 8.4 us + nRanks (4) x 1 us: 22.4 us, the analytic closed form (LL: 6.6 +
	 * 4 x 0.18 us + 1e6 / (100/3 GB/s) = 37.3 us). */
	config_platform p = tu_platform(1, 4, 1);
	workload_op op = comm(WL_COLL_BROADCAST, WL_ALG_RING, WL_GROUP_WORLD, 1e6);
	hand h;
	hand_init(&h, &p, 4, 4, &op, 1, 1);
	engine_group_shape s = {.size = 4, .per_node = 4, .active_per_node = 4};
	ck_assert_close(engine_collective_time(&p, WL_COLL_BROADCAST, WL_ALG_RING, s, 1e6), 22.4e-6, 1e-12);
	ck_assert_close(sim(&h.in, NULL, NULL), 22.4e-6, 1e-9);
}
END_TEST

/* ---------------------------------------------------------------- schedule --- */

START_TEST(streams_overlap_and_dependencies_wait)
{
	/* One GPU: main stream computes 1 ms (1e11 FLOPs at 100 TFLOP/s), then 2 ms;
	 * the zero stream's op (a 1 ms compute stand-in is not allowed there, so a send/recv
	 * of 2 ranks) depends on the first compute op. Ranks: 2 on one node.
	 *   main:  c1 [0, 1 ms], c2 [1, 3 ms]
	 *   zero:  sendrecv 10 MB after c1: [1 ms, 1 ms + 1 us + 0.1 ms]
	 *   step = 3 ms; compute 3 ms; zero comm 0.101 ms, hidden. */
	config_platform p = tu_platform(1, 2, 1);
	workload_op ops[3] = {
		{.name = "c1", .kind = WL_OP_COMPUTE, .cat = WL_CAT_COMPUTE, .stream = WL_STREAM_MAIN,
		 .kernel = WL_KERNEL_GEMM, .flops = 1e11, .dep = -1},
		{.name = "c2", .kind = WL_OP_COMPUTE, .cat = WL_CAT_COMPUTE, .stream = WL_STREAM_MAIN,
		 .kernel = WL_KERNEL_GEMM, .flops = 2e11, .dep = -1},
		comm(WL_COLL_SENDRECV, WL_ALG_DIRECT, WL_GROUP_WORLD, 10e6),
	};
	ops[2].stream = WL_STREAM_ZERO;
	ops[2].dep = 0;
	hand h;
	hand_init(&h, &p, 2, 2, ops, 3, 1);
	engine_result r;
	ck_assert_close(sim(&h.in, NULL, &r), 3e-3, 1e-9);
	ck_assert_close(r.breakdown.compute, 3e-3, 1e-9);
	ck_assert_close(r.breakdown.zero_comm, 101e-6, 1e-9);
	ck_assert_close(r.breakdown.zero_comm_exposed, 0, 1e-9);
}
END_TEST

START_TEST(barrier_block_waits_for_every_stream)
{
	/* Block 1: main computes 1 ms while the zero stream sends 10 MB at 10 GB/s between
	 * two nodes (10 us + 1 us network post + 1 ms); block 2 (barrier) computes 1 ms after
	 * both: step = 1.011 ms + 1 ms; exposed ZeRO time = step - compute = 11 us. */
	config_platform p = tu_platform(2, 1, 1);
	workload_op b1[2];
	compute_and_send(b1, 10e6);
	workload_op b2[1] = {{.name = "c2", .kind = WL_OP_COMPUTE, .cat = WL_CAT_COMPUTE,
			      .stream = WL_STREAM_MAIN, .kernel = WL_KERNEL_MEMORY, .hbm_bytes = 1e9, .dep = -1}};
	hand h;
	hand_init(&h, &p, 2, 2, b1, 2, 1);
	hand_step(&h, b2, 1);
	engine_result r;
	ck_assert_close(sim(&h.in, NULL, &r), 2.011e-3, 1e-9);
	ck_assert_close(r.breakdown.zero_comm_exposed, 11e-6, 1e-6);
}
END_TEST

/* -------------------------------------------------------------- contention --- */

START_TEST(zero_ring_and_ulysses_alltoall_share_the_nic)
{
	/* 2 nodes x 4 GPUs, one 10 GB/s NIC per node. At once:
	 *   main: Ulysses all-to-all over all 8 ranks, 8 MB: 1 MB to each peer; each node
	 *         sends 4 GPUs x 4 remote peers = 16 flows of 1 MB through its NIC;
	 *   zero: ring all-gather over the 8 ranks of 8/7 MB: one channel; the aggregated
	 *         flow on the edge that leaves the node carries 7 steps x (8/7 MB / 8) = 1 MB.
	 * The ring is held to NCCL's ring/Simple (forced: NCCL itself would take LL128 here,
	 * which only changes the numbers): its flows start after NCCL's latency, 8.4 + 6 x 3
	 * + 1 x 10 us = 36.4 us, without a link latency. From 10 us the NIC carries the 16
	 * all-to-all flows (0.625 GB/s each, 16.5 kB each by 36.4 us), then 17 flows at
	 * 10/17 GB/s: the all-to-all ends at 36.4 + 0.9835e6 x 17 / 10e9 = 1708.35 us (inside
	 * the node the flows are 30x faster) and the ring's last 16.5 kB alone at 10 GB/s:
	 * 1710.0 us.
	 * The analytic engine shares the NIC per op (model.md §5 "Shared capacity"). Alone:
	 * all-to-all 10 us + 4e6 / (10e9 / 4) = 1.61 ms with the NIC busy 16 MB / 10 GB/s =
	 * 1.6 ms in 16 flows; ring 36.4 + 7 x 1e6/7 / 10e9 = 136.4 us with the NIC busy
	 * 1 MB / 10 GB/s = 100 us in 1 flow. Per-flow level l: x_a = l x 16 x 1.61/1.6,
	 * x_r = l x 1 x 136.4/100; the NIC fills at x_a 1.6/1.61 + x_r 100/136.4 = 17 l = 1,
	 * so both end at 17/16 x 1.6 ms = 17 x 0.1 ms = 1.70 ms (SimGrid: 1.708 ms). */
	config_platform p = tu_platform(2, 4, 1);
	p.nccl.force_algo = NCCL_ALGO_RING + 1;
	p.nccl.force_proto = NCCL_PROTO_SIMPLE + 1;
	workload_op ops[2] = {comm(WL_COLL_ALLTOALL, WL_ALG_DIRECT, WL_GROUP_SP, 8e6),
			      comm(WL_COLL_ALLGATHER, WL_ALG_RING, WL_GROUP_WORLD, 8e6 / 7)};
	ops[1].stream = WL_STREAM_ZERO;
	hand h;
	hand_init(&h, &p, 8, 8, ops, 2, 1);
	engine_result r;
	/* NCCL's per-message terms (engine/nccl.c p2p_message_latency: 4 remote peers, one
	 * 1 us network post each) hold the all-to-all's flows back to 14 us: alone until
	 * 36.4 us they carry 22.4 us x 0.625 GB/s = 14 kB each, then 0.986e6 x 17 / 10e9 =
	 * 1676.2 us: 1712.6 us; the ring's last bytes end at 1714.0 us */
	ck_assert_close(sim(&h.in, NULL, &r), 1714.0e-6, 1e-6);
	ck_assert_close(r.breakdown.sp_comm, 1712.6e-6, 1e-6);
	engine_result a;
	config_error err;
	ck_assert(engine_find("analytic")->run(&h.in, &a, &err));
	ck_assert_close(a.step_time, 1.70e-3, 1e-9);
	ck_assert_close(a.breakdown.sp_comm, 1.70e-3, 1e-9);
}
END_TEST

/* 64 BASP groups of K = 24 on 8-GPU nodes (3 nodes each; 1,536 GPUs, 192 nodes), one
 * NIC per GPU at 10 GB/s, fat-tree leaves of 2 nodes, spine oversubscribed 4x: each leaf
 * uplink = 2 x 8 x 10 GB/s / 4 = 40 GB/s. Groups straddle leaves: group A = nodes
 * 0,1,2 and B = 3,4,5 share leaf 1 = {2, 3}. All-to-all of 24 MB: 1 MB per peer, 16
 * remote peers per GPU.
 *   leaf 1 uplink: node 2 sends to nodes 0, 1 (8 GPUs x 16 peers) and node 3 to 4, 5:
 *   256 flows of 1 MB on 40 GB/s, each at 40e9 / 256; every other link has room to spare
 *   for them, so they all end at 10 us + 256e6 / 40e9 = 6.41 ms, plus NCCL's
 *   per-message terms (engine/nccl.c p2p_message_latency): 16 network posts of 1 us
 *   and 23 peers in 3 rounds of the 8 p2p channels (2 more 10 us latencies): 6.446 ms.
 * Averaging the spine over a group's nodes (half of a node's remote peers beyond its leaf,
 * times the oversubscription: 2 x the NIC time) would give 10 us + 2 x 16e6 / 10e9 =
 * 3.21 ms, missing that leaf 1 carries two groups. The analytic engine now sums
 * x·(P − x) rank pairs over every group crossing each leaf (256 on leaf 1) and takes the
 * worst leaf: the same 6.41 ms. */
static void spine_hand(hand *h, config_platform *p, workload_op *op)
{
	*p = tu_platform(192, 8, 8);
	p->inter.topology = CONFIG_TOPO_FAT_TREE;
	p->inter.nodes_per_leaf = 2;
	p->inter.oversubscription = 4;
	*op = comm(WL_COLL_ALLTOALL, WL_ALG_DIRECT, WL_GROUP_SP, 24e6);
	hand_init(h, p, 1536, 24, op, 1, 1);
}

START_TEST(basp_groups_share_an_oversubscribed_spine)
{
	config_platform p;
	workload_op op;
	hand h;
	spine_hand(&h, &p, &op);
	engine_simgrid_stats st;
	engine_result r;
	config_error err;
	ck_assert_msg(engine_simgrid_run_with(&h.in, NULL, &r, &st, &err), "%s", err.msg);
	ck_assert_close(r.step_time, 6.446e-3, 1e-6);
	ck_assert_int_eq(st.period_nodes, 6); /* 2 groups over 3 leaves repeat */
	engine_result a;
	ck_assert(engine_find("analytic")->run(&h.in, &a, &err));
	ck_assert_close(a.step_time, 6.446e-3, 1e-9);
}
END_TEST

/* ------------------------------------------------- agreement with analytic --- */

typedef struct grid_point {
	config_platform p;
	config_model m;
	config_job job;
} grid_point;

/* Result fields compared entry by entry. */
enum { F_STEP, F_COMPUTE, F_SP, F_SP_EXP, F_ZERO, F_ZERO_EXP, F_GEMM, F_ATTN, F_MEM, F_OPT, F_FWD, F_BWD, F_HOST, F_HOST_EXP, F_N };

static void fields(const engine_result *r, double *v)
{
	v[F_STEP] = r->step_time;
	v[F_COMPUTE] = r->breakdown.compute;
	v[F_SP] = r->breakdown.sp_comm;
	v[F_SP_EXP] = r->breakdown.sp_comm_exposed;
	v[F_ZERO] = r->breakdown.zero_comm;
	v[F_ZERO_EXP] = r->breakdown.zero_comm_exposed;
	v[F_GEMM] = r->breakdown.gemm;
	v[F_ATTN] = r->breakdown.attention;
	v[F_MEM] = r->breakdown.memory_bound;
	v[F_OPT] = r->breakdown.optimizer;
	v[F_FWD] = r->fwd_time;
	v[F_BWD] = r->bwd_time;
	v[F_HOST] = r->breakdown.host_comm;
	v[F_HOST_EXP] = r->breakdown.host_comm_exposed;
}

static const char *const field_names[F_N] = {"step",  "compute", "sp_comm", "sp_comm_exposed", "zero_comm",
					     "zero_comm_exposed", "gemm", "attention", "memory_bound", "optimizer",
					     "fwd", "bwd", "host_comm", "host_comm_exposed"};

typedef struct run_ctx {
	const grid_point *g;
	engine_simgrid_options opt;
	engine_options eopt;
} run_ctx;

static void plan_child(void *ctx, double *out, int n)
{
	run_ctx *c = ctx;
	const grid_point *g = c->g;
	config_error err;
	workload_plan plan;
	ck_assert_msg(workload_plan_make(&g->m, &g->p, &g->job, &plan, &err), "%s", err.msg);
	engine_input in = {.model = &g->m, .platform = &g->p, .job = &g->job, .plan = &plan, .opt = c->eopt};
	engine_result r;
	engine_simgrid_stats st;
	ck_assert_msg(engine_simgrid_run_with(&in, &c->opt, &r, &st, &err), "%s", err.msg);
	fields(&r, out);
	if (n > F_N)
		out[F_N] = st.period_nodes;
	workload_plan_finish(&plan);
}

static void analytic_fields(const grid_point *g, double *v)
{
	config_error err;
	workload_plan plan;
	ck_assert_msg(workload_plan_make(&g->m, &g->p, &g->job, &plan, &err), "%s", err.msg);
	engine_input in = {.model = &g->m, .platform = &g->p, .job = &g->job, .plan = &plan};
	engine_result r;
	ck_assert(engine_find("analytic")->run(&in, &r, &err));
	fields(&r, v);
	workload_plan_finish(&plan);
}

/* g checked, then run by both engines: want (analytic) and got (SimGrid, in a child). */
static void both_engines(grid_point *g, double *want, double *got)
{
	config_error err;
	ck_assert_msg(workload_check(&g->m, &g->p, &g->job, &err), "%s", err.msg);
	analytic_fields(g, want);
	run_ctx c = {.g = g};
	engine_simgrid_options_default(&c.opt);
	in_child(plan_child, &c, got, F_N);
}

static void assert_fields_close(const double *got, const double *want, double rel, const char *what)
{
	for (int k = 0; k < F_N; k++) {
		double tol = rel * fabs(want[k]) + 1e-12;
		ck_assert_msg(fabs(got[k] - want[k]) <= tol, "%s: %s = %.9g, want %.9g", what, field_names[k], got[k],
			      want[k]);
	}
}

START_TEST(engines_agree_on_contention_free_cases)
{
	/* Whole training steps of the tiny model where nothing contends: every SP group
	 * inside a node (BASP K = 4 or 2 on 4-GPU nodes, Ulysses with SP = 4), ZeRO traffic
	 * on the main stream (no overlap) over a single-channel ring (one NIC), on NVSwitch,
	 * an NVLink mesh and PCIe, with and without recompute, one or two micro-steps.
	 * Every breakdown entry agrees within 1%. */
	const config_fabric fabrics[3] = {CONFIG_FABRIC_NVSWITCH, CONFIG_FABRIC_NVLINK_MESH, CONFIG_FABRIC_PCIE};
	struct {
		config_strategy s;
		int sp, B;
	} jobs[3] = {{CONFIG_STRATEGY_BASP, 8, 2}, {CONFIG_STRATEGY_BASP, 8, 4}, {CONFIG_STRATEGY_ULYSSES, 4, 2}};
	int points = 0;
	for (int f = 0; f < 3; f++)
		for (int j = 0; j < 3; j++)
			for (int z = 0; z <= 3; z++) {
				grid_point g;
				g.p = tu_platform(2, 4, 1);
				g.p.intra.fabric = fabrics[f];
				g.p.intra.pair_bandwidth = 40e9;
				g.m = tu_model();
				g.job = tu_job(jobs[j].s, 8, jobs[j].sp, jobs[j].B, 4096, z);
				g.job.zero_overlap = 0;
				g.job.recompute = (f + z) % 2 ? CONFIG_RECOMPUTE_FULL : CONFIG_RECOMPUTE_NONE;
				g.job.grad_accum = 1 + (j + z) % 2;
				double want[F_N], got[F_N];
				both_engines(&g, want, got);
				char what[128];
				snprintf(what, sizeof what, "fabric %d job %d zero %d", f, j, z);
				assert_fields_close(got, want, 0.01, what);
				points++;
			}
	ck_assert_int_eq(points, 36);
}
END_TEST

START_TEST(engines_agree_with_optimizer_offload)
{
	/* Optimizer offload on ZeRO 1, 2 and 3, ZeRO overlap off and on, inside one node and
	 * across two: the gradient copies ride the ZeRO stream (stages 2 and 3) or follow the
	 * boundary's all-reduce (stage 1), the CPU step and the copy back hold the main
	 * stream; both engines time them by the host link and the host's DRAM alone. A slow
	 * link (2 GB/s) makes the copies show. Without ZeRO-3 overlap nothing contends and
	 * every breakdown entry agrees within 1%. With it the ZeRO-3 gathers and
	 * reduce-scatters share the links, which the two engines schedule differently (on
	 * this tiny model 1.3% apart on one node and 6.4% on two, offload or not): there what
	 * offload adds to the step, and the sums of op times (compute, the CPU step, the host
	 * copies), agree within 1%. Each without and with gradient accumulation (G = 4: stage
	 * 3's bf16 partition out to the host and back every micro-step, its fp32 copy once at
	 * the boundary without overlap, 1/G per micro-step with it; stage 2's every
	 * micro-step; program.c OFFLOAD_*). With G > 1 and overlap, one micro-step's last
	 * reductions meet the next one's SP all-to-alls (ZeRO-2 on one node: sp_comm 2% apart),
	 * so there too the sums and what offload adds are compared, the latter within 1% of
	 * the step (2% for ZeRO-3 across two nodes, below). */
	int points = 0;
	for (int z = 1; z <= 3; z++)
		for (int ov = 0; ov < 2; ov++)
			for (int n = 0; n < 4; n++) {
				int nodes = 1 + n % 2, ga = n < 2 ? 1 : 4;
				grid_point g;
				g.p = tu_platform(nodes, 4, 1);
				g.p.host.bandwidth = 2e9;
				g.p.host.latency = 5e-6;
				g.p.host.memory = 1e12;
				g.p.host.memory_bandwidth = 50e9;
				g.m = tu_model();
				g.job = tu_job(CONFIG_STRATEGY_ULYSSES, 4 * nodes, 4, 2, 4096, z);
				g.job.zero_overlap = ov;
				g.job.grad_accum = ga;
				g.job.offload_optimizer = CONFIG_OFFLOAD_OPT_CPU;
				double want[F_N], got[F_N];
				both_engines(&g, want, got);
				char what[128];
				snprintf(what, sizeof what, "zero %d overlap %d nodes %d grad_accum %d", z, ov, nodes, ga);
				ck_assert(want[F_HOST] > 0 && want[F_OPT] > 0);
				ck_assert(want[F_HOST_EXP] > 0 && want[F_HOST_EXP] <= want[F_HOST] * (1 + 1e-12));
				points++;
				if (!(ov && (z == 3 || ga > 1))) {
					assert_fields_close(got, want, 0.01, what);
					continue;
				}
				static const int sums[] = {F_COMPUTE, F_OPT, F_HOST, F_GEMM, F_ATTN, F_MEM};
				for (size_t k = 0; k < sizeof sums / sizeof *sums; k++)
					ck_assert_msg(fabs(got[sums[k]] - want[sums[k]]) <= 0.01 * fabs(want[sums[k]]) + 1e-12,
						      "%s: %s = %.9g, want %.9g", what, field_names[sums[k]], got[sums[k]],
						      want[sums[k]]);
				grid_point h = g;
				h.job.offload_optimizer = CONFIG_OFFLOAD_OPT_NONE;
				double want0[F_N], got0[F_N];
				both_engines(&h, want0, got0);
				double da = want[F_STEP] - want0[F_STEP], ds = got[F_STEP] - got0[F_STEP];
				/* with G > 1 the contended schedules of the two runs differ beyond the
				 * copies: ZeRO-3's five bytes per parameter per micro-step on the ZeRO
				 * stream (the host-side accumulation, program.c OFFLOAD_ACCUM_BYTES)
				 * push its reduce-scatters into other windows of the inter-node
				 * contention, which the engines time apart even without offload (ZeRO-3,
				 * overlap, two nodes, G = 4: zero_comm 3.42 ms analytic, 4.23 ms SimGrid;
				 * steps 2.69 and 2.99 ms); there what offload adds agrees within 2% of
				 * the step (1.8% on that point: 83 us analytic, 131 us SimGrid, of
				 * 364 us of copies), elsewhere within 1% of the step */
				double tol = ga > 1 ? (z == 3 && nodes > 1 ? 0.02 : 0.01) * want0[F_STEP] : 0.01 * da;
				ck_assert_msg(da > 0 && fabs(ds - da) <= tol, "%s: offload adds %.9g s, want %.9g s (step %.9g s)",
					      what, ds, da, want0[F_STEP]);
			}
	ck_assert_int_eq(points, 24);
}
END_TEST

START_TEST(engines_agree_with_memory_techniques)
{
	/* Activation offload, selective recompute and tiles on contention-free cases (SP
	 * groups inside a node, ZeRO on the main stream): the host copies take the zero
	 * stream's slot, timed by the host link alone in both engines. With a fast link
	 * (1 TB/s) the copies hide behind the layers; with a slow one (0.5 GB/s: a 256 KiB
	 * checkpoint takes 0.5 ms, longer than a tiny layer) the main stream waits on them.
	 * Every breakdown entry agrees within 1%, the exposure included. */
	const double bw[2] = {1e12, 0.5e9};
	int points = 0;
	double exposed[2] = {0, 0};
	for (int b = 0; b < 2; b++)
		for (int k = 0; k < 3; k++) {
			grid_point g;
			g.p = tu_platform(2, 4, 1);
			g.p.host.bandwidth = bw[b];
			g.p.host.latency = 5e-6;
			g.p.host.memory = 1e12;
			g.m = tu_model();
			g.job = tu_job(k == 1 ? CONFIG_STRATEGY_ULYSSES : CONFIG_STRATEGY_BASP, 8, k == 1 ? 4 : 8, 2, 4096,
				       k);
			g.job.zero_overlap = 0;
			g.job.recompute = CONFIG_RECOMPUTE_FULL;
			g.job.offload_activations = true;
			if (k == 2)
				g.job.tile_mlp = g.job.tile_logits = 4;
			double want[F_N], got[F_N];
			both_engines(&g, want, got);
			char what[128];
			snprintf(what, sizeof what, "host bandwidth %g, case %d", bw[b], k);
			assert_fields_close(got, want, 0.01, what);
			ck_assert(want[F_HOST] > 0);
			ck_assert(want[F_HOST_EXP] >= 0 && want[F_HOST_EXP] <= want[F_HOST] * (1 + 1e-12));
			exposed[b] += want[F_HOST_EXP] / want[F_STEP];
			points++;
		}
	/* selective recompute, no offload */
	grid_point g;
	g.p = tu_platform(2, 4, 1);
	g.m = tu_model();
	g.job = tu_job(CONFIG_STRATEGY_ULYSSES, 8, 4, 2, 4096, 1);
	g.job.zero_overlap = 0;
	g.job.recompute = CONFIG_RECOMPUTE_SELECTIVE;
	double want[F_N], got[F_N];
	both_engines(&g, want, got);
	assert_fields_close(got, want, 0.01, "selective");
	ck_assert_int_eq(points, 6);
	ck_assert(exposed[0] < 1e-3);  /* hidden behind compute */
	ck_assert(exposed[1] > 0.05);  /* the slow link shows */
}
END_TEST

START_TEST(engines_agree_on_zero3_per_submodule_fetch)
{
	/* DeepSpeed-style ZeRO-3 fetch (zero3_prefetch deepspeed) with overlap on: per-hook
	 * gathers on the prefetch stream, each issued when the main stream reaches its GEMM
	 * and waited for at the next, reduce-scatters on the zero stream sharing the NIC with
	 * them in backward. A 4-layer model of h = 1024, ffn 4096 (units of 3.1M, 1.0M, 8.4M and
	 * 4.2M elements) with a window of 5e6 elements, Ulysses SP 4 at 4K, with and without
	 * recompute, on one NIC of 10 GB/s per 4-GPU node (the gathers are exposed): the step
	 * and the ZeRO exposure agree within 5%, and so do the layer style's on the same jobs.
	 * (The tiny model's sub-millisecond steps are latency-bound and not compared here.) */
	int points = 0;
	for (int style = 0; style < 2; style++)
		for (int rc = 0; rc < 2; rc++) {
			grid_point g;
			g.p = tu_platform(2, 4, 1);
			g.m = tu_model();
			g.m.layers = 4, g.m.hidden = 1024, g.m.heads = 8, g.m.kv_heads = 8, g.m.head_dim = 128;
			g.m.ffn = 4096, g.m.vocab = 1000;
			g.job = tu_job(CONFIG_STRATEGY_ULYSSES, 8, 4, 2, 4096, 3);
			g.job.prefetch_bucket_elems = 5e6;
			g.job.recompute = rc ? CONFIG_RECOMPUTE_FULL : CONFIG_RECOMPUTE_NONE;
			g.job.zero3_prefetch = style ? CONFIG_ZERO3_PREFETCH_LAYER : CONFIG_ZERO3_PREFETCH_DEEPSPEED;
			double want[F_N], got[F_N];
			both_engines(&g, want, got);
			ck_assert_msg(fabs(got[F_STEP] - want[F_STEP]) <= 0.05 * want[F_STEP],
				      "style %d recompute %d: simgrid %.9g, analytic %.9g", style, rc, got[F_STEP], want[F_STEP]);
			ck_assert_msg(fabs(got[F_ZERO_EXP] - want[F_ZERO_EXP]) <= 0.05 * want[F_ZERO_EXP],
				      "style %d recompute %d: ZeRO exposed simgrid %.9g, analytic %.9g", style, rc,
				      got[F_ZERO_EXP], want[F_ZERO_EXP]);
			ck_assert(want[F_ZERO] > 0);
			points++;
		}
	ck_assert_int_eq(points, 4);
}
END_TEST

/* --------------------------------------------------------------- exactness --- */

START_TEST(ring_aggregation_is_exact_when_sharing_is_steady)
{
	/* A whole step with ZeRO-2 reductions overlapped on the zero stream, while the main
	 * stream runs all-to-alls inside the nodes: the ring flows share no link with the
	 * all-to-alls (rings leave through the NIC, all-to-alls stay on NVLink... except the
	 * ring's own NVLink hops, which see the all-to-alls come and go). The step-by-step
	 * ring and the aggregated ring must give the same step time when the rings run alone
	 * (overlap off), and within 1% with the all-to-alls around them. "The same" is 1e-5:
	 * flows carry whole bytes and NCCL's protocol share (LL128: 1/0.92 of the bytes)
	 * makes the sizes fractional, rounded once per aggregated flow but once per step in
	 * lock-step, half a byte each on the tiny model's buckets of a few kB. */
	grid_point g;
	g.p = tu_platform(2, 4, 1);
	g.m = tu_model();
	g.job = tu_job(CONFIG_STRATEGY_BASP, 8, 8, 2, 4096, 2);
	g.job.zero_overlap = 0;
	config_error err;
	ck_assert(workload_check(&g.m, &g.p, &g.job, &err));
	run_ctx c = {.g = &g};
	engine_simgrid_options_default(&c.opt);
	double agg[F_N], step[F_N];
	in_child(plan_child, &c, agg, F_N);
	c.opt.ring = ENGINE_SG_RING_LOCKSTEP;
	in_child(plan_child, &c, step, F_N);
	assert_fields_close(agg, step, 1e-5, "overlap off");
	g.job.zero_overlap = 1;
	c.opt.ring = ENGINE_SG_RING_AGGREGATED;
	in_child(plan_child, &c, agg, F_N);
	c.opt.ring = ENGINE_SG_RING_LOCKSTEP;
	in_child(plan_child, &c, step, F_N);
	ck_assert_close(agg[F_STEP], step[F_STEP], 0.01);
}
END_TEST

static void symmetry_check(grid_point *g, int want_period)
{
	config_error err;
	ck_assert_msg(workload_check(&g->m, &g->p, &g->job, &err), "%s", err.msg);
	run_ctx c = {.g = g};
	engine_simgrid_options_default(&c.opt);
	double sym[F_N + 1], whole[F_N + 1];
	in_child(plan_child, &c, sym, F_N + 1);
	c.opt.symmetry = false;
	in_child(plan_child, &c, whole, F_N + 1);
	assert_fields_close(sym, whole, 1e-9, "symmetry");
	ck_assert_int_eq((int)sym[F_N], want_period); /* the reduction was used */
	ck_assert_int_eq((int)whole[F_N], 0);
}

START_TEST(symmetry_is_exact_single_switch)
{
	/* 4 nodes x 2 GPUs, 2 NICs (two ring channels), BASP groups of 2, ZeRO-2 with its
	 * reductions overlapped: one node is simulated, its ring edges into the next node
	 * land on ghosts of node 0. Same times as the whole system. */
	grid_point g;
	g.p = tu_platform(4, 2, 2);
	g.m = tu_model();
	g.job = tu_job(CONFIG_STRATEGY_BASP, 8, 4, 2, 4096, 2);
	g.job.zero_overlap = 1;
	symmetry_check(&g, 1);
}
END_TEST

START_TEST(symmetry_is_exact_fat_tree)
{
	/* 8 nodes x 2 GPUs in leaves of 2, oversubscribed 2x, Ulysses over 4 GPUs (groups of
	 * 2 nodes), ZeRO-3 (prefetch and reduce streams): the period is one leaf. */
	grid_point g;
	g.p = tu_platform(8, 2, 1);
	g.p.inter.topology = CONFIG_TOPO_FAT_TREE;
	g.p.inter.nodes_per_leaf = 2;
	g.p.inter.oversubscription = 2;
	g.m = tu_model();
	g.job = tu_job(CONFIG_STRATEGY_ULYSSES, 16, 4, 1, 4096, 3);
	symmetry_check(&g, 2);
}
END_TEST

START_TEST(symmetry_is_exact_hierarchical)
{
	/* hierarchical SP all-to-alls over 2 nodes, 6 nodes of 2 GPUs, PCIe */
	grid_point g;
	g.p = tu_platform(6, 2, 1);
	g.p.intra.fabric = CONFIG_FABRIC_PCIE;
	g.m = tu_model();
	g.job = tu_job(CONFIG_STRATEGY_ULYSSES, 12, 4, 1, 4096, 1);
	g.job.a2a = CONFIG_A2A_HIERARCHICAL;
	symmetry_check(&g, 2);
}
END_TEST

START_TEST(symmetry_is_exact_for_the_spine_case)
{
	/* the 64-group spine case above, whole (1,536 actors) vs one period of 6 nodes */
	config_platform p;
	workload_op op;
	hand h;
	spine_hand(&h, &p, &op);
	double v[2];
	in_child(det_child, &h, v, 2);
	engine_simgrid_options o;
	engine_simgrid_options_default(&o);
	o.symmetry = false;
	engine_result r;
	ck_assert_close(sim(&h.in, &o, &r), v[0], 1e-9);
}
END_TEST

/* ---------------------------------------------------------------- placement --- */

START_TEST(placement_parses_and_maps)
{
	engine_options o = {0};
	config_error err;
	ck_assert(engine_placement_parse("strided", &o, &err));
	ck_assert_int_eq(o.placement, ENGINE_PLACE_STRIDED);
	ck_assert(engine_placement_parse("random:42", &o, &err));
	ck_assert_int_eq(o.placement, ENGINE_PLACE_RANDOM);
	ck_assert_uint_eq(o.placement_seed, 42);
	ck_assert(!engine_placement_parse("random", &o, &err));
	ck_assert_ptr_nonnull(strstr(err.msg, "random:42"));
	ck_assert(!engine_placement_parse("random:-1", &o, &err));
	ck_assert(!engine_placement_parse("diagonal", &o, &err));
	ck_assert_ptr_nonnull(strstr(err.msg, "contiguous, strided or random:SEED"));
	ck_assert(engine_placement_parse("contiguous", &o, &err));
	ck_assert_int_eq(o.placement, ENGINE_PLACE_CONTIGUOUS);

	/* strided on 2 nodes x 4: consecutive ranks alternate nodes */
	config_platform p = tu_platform(2, 4, 1);
	int g[8];
	o.placement = ENGINE_PLACE_STRIDED;
	ck_assert(engine_placement_map(&p, 8, &o, g, &err));
	const int want[8] = {0, 4, 1, 5, 2, 6, 3, 7};
	ck_assert_mem_eq(g, want, sizeof want);
	/* random: a permutation, the same for the same seed, another for another seed */
	int a[8], b[8], c[8];
	o.placement = ENGINE_PLACE_RANDOM;
	o.placement_seed = 7;
	ck_assert(engine_placement_map(&p, 8, &o, a, &err));
	ck_assert(engine_placement_map(&p, 8, &o, b, &err));
	ck_assert_mem_eq(a, b, sizeof a);
	o.placement_seed = 8;
	ck_assert(engine_placement_map(&p, 8, &o, c, &err));
	ck_assert(memcmp(a, c, sizeof a) != 0);
	int seen = 0;
	for (int i = 0; i < 8; i++)
		seen |= 1 << a[i];
	ck_assert_int_eq(seen, 0xff);
}
END_TEST

START_TEST(strided_groups_straddle_nodes)
{
	/* BASP groups of 4 on 2 nodes x 4, one NIC, all-to-all of 4 MB (1 MB per peer).
	 * Strided: group 0 = ranks 0-3 on GPUs 0,4,1,5: two members per node, so each rank
	 * has 1 local and 2 remote peers; node 0 hosts ranks 0,2,4,6: 8 remote messages of
	 * 1 MB through its 10 GB/s NIC: 10 us + 8e6 / 10e9 = 810 us.
	 * (Contiguous placement keeps each group in a node: 31 us.) */
	config_platform p = tu_platform(2, 4, 1);
	workload_op op = comm(WL_COLL_ALLTOALL, WL_ALG_DIRECT, WL_GROUP_SP, 4e6);
	hand h;
	hand_init(&h, &p, 8, 4, &op, 1, 1);
	h.in.opt.placement = ENGINE_PLACE_STRIDED;
	ck_assert_close(sim(&h.in, NULL, NULL), 810e-6, 1e-9);
}
END_TEST

/* -------------------------------------------------------------------- trace --- */

START_TEST(trace_has_a_process_per_node_and_a_slice_per_op)
{
	/* BASP on 2 nodes x 4, one layer's worth of program: every GPU's compute and SP comm
	 * threads carry slices with the op name, layer and FLOPs or bytes. */
	config_platform p = tu_platform(2, 4, 1);
	config_model m = tu_model();
	m.layers = 1;
	config_job job = tu_job(CONFIG_STRATEGY_BASP, 8, 8, 2, 4096, 2);
	config_error err;
	ck_assert(workload_check(&m, &p, &job, &err));
	workload_plan plan;
	ck_assert(workload_plan_make(&m, &p, &job, &plan, &err));
	char path[] = "/tmp/spsim-trace-XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	engine_input in = {.model = &m, .platform = &p, .job = &job, .plan = &plan, .opt = {.trace_path = path}};
	engine_result r;
	ck_assert_msg(engine_simgrid.run(&in, &r, &err), "%s", err.msg);
	json_error_t je;
	json_t *root = json_load_file(path, 0, &je);
	unlink(path);
	ck_assert_msg(root, "trace is not JSON: %s", je.text);
	json_t *ev = json_object_get(root, "traceEvents");
	ck_assert(json_is_array(ev));
	int slices = 0, a2a = 0, procs = 0, per_pid[2] = {0, 0};
	double last_end = 0;
	size_t i;
	json_t *e;
	json_array_foreach (ev, i, e) {
		const char *ph = json_string_value(json_object_get(e, "ph"));
		const char *name = json_string_value(json_object_get(e, "name"));
		if (strcmp(ph, "M") == 0 && strcmp(name, "process_name") == 0)
			procs++;
		if (strcmp(ph, "X") != 0)
			continue;
		slices++;
		int pid = (int)json_integer_value(json_object_get(e, "pid"));
		ck_assert(pid == 0 || pid == 1);
		per_pid[pid]++;
		json_t *args = json_object_get(e, "args");
		if (strcmp(name, "a2a_q") == 0) {
			a2a++;
			ck_assert_int_eq(json_integer_value(json_object_get(args, "layer")), 0);
			ck_assert(json_real_value(json_object_get(args, "bytes")) > 0);
			ck_assert_int_eq((int)json_integer_value(json_object_get(e, "tid")) % REPORT_TRACE_TIDS_PER_GPU, 1);
		}
		if (strcmp(name, "qkv_proj") == 0)
			ck_assert(json_real_value(json_object_get(args, "flops")) > 0);
		double end = json_real_value(json_object_get(e, "ts")) + json_real_value(json_object_get(e, "dur"));
		if (end > last_end)
			last_end = end;
	}
	ck_assert_int_eq(procs, 2);
	ck_assert_int_eq(a2a, 8); /* one per GPU */
	ck_assert_int_eq(per_pid[0], per_pid[1]);
	ck_assert(slices > 8 * 20);
	ck_assert_close(last_end, r.step_time * 1e6, 1e-6);
	json_decref(root);
	workload_plan_finish(&plan);
}
END_TEST

START_TEST(engine_runs_any_number_of_simulations_per_process)
{
	/* engine_simgrid.run forks a child per simulation: twice in one process, same
	 * answer (13.5 us, as single_message_inside_a_node); in-process runs are once only. */
	config_platform p = tu_platform(1, 2, 1);
	workload_op op = comm(WL_COLL_SENDRECV, WL_ALG_DIRECT, WL_GROUP_SP, 1e6);
	hand h;
	hand_init(&h, &p, 2, 2, &op, 1, 1);
	engine_result a, b;
	config_error err;
	ck_assert_msg(engine_simgrid.run(&h.in, &a, &err), "%s", err.msg);
	ck_assert_msg(engine_simgrid.run(&h.in, &b, &err), "%s", err.msg);
	ck_assert_close(a.step_time, 13.5e-6, 1e-9);
	ck_assert_mem_eq(&a.step_time, &b.step_time, sizeof a.step_time);
	ck_assert_str_eq(a.engine, "simgrid");
	sim(&h.in, NULL, NULL);
	ck_assert(!engine_simgrid_run_with(&h.in, NULL, &a, NULL, &err));
	ck_assert_ptr_nonnull(strstr(err.msg, "own process"));
}
END_TEST


START_TEST(identical_micro_steps_extrapolate_exactly)
{
	/* Gradient accumulation over G micro-steps: engine_simgrid.run simulates a few
	 * micro-steps until the schedule repeats and extrapolates; the full simulation of all
	 * G (SPSIM_SIMGRID_FULL) gives the same step, breakdown and per-micro-step times. The
	 * cases overlap ZeRO traffic with the next micro-step (stage 2 reduces every
	 * micro-step; stage 3 also gathers parameters) on a contended NIC. */
	config_model m;
	config_platform p;
	config_error err;
	ck_assert(config_load_model("llama-3.2-1b", &m, &err) && config_load_platform("a100-2x4-ib400", &p, &err));
	static const int zero[] = {2, 3, 1, 2};
	static const int ga[] = {20, 21, 24, 10}; /* from SGX_EXTRAPOLATE_FROM = 9 on */
	for (int c = 0; c < 4; c++) {
		config_job job = tu_job(CONFIG_STRATEGY_BASP, 8, 8, 2, 4096, zero[c]);
		job.grad_accum = ga[c];
		ck_assert_msg(workload_check(&m, &p, &job, &err), "%s", err.msg);
		workload_plan plan;
		ck_assert(workload_plan_make(&m, &p, &job, &plan, &err));
		engine_input in = {.model = &m, .platform = &p, .job = &job, .plan = &plan};
		engine_result fast, full;
		engine_simgrid_stats sf, su;
		/* the windows are tried even where the guard would skip them (they move about
		 * as many flows as the full run at this size) */
		engine_simgrid_options o;
		engine_simgrid_options_default(&o);
		o.repeat_always = true;
		unsetenv("SPSIM_SIMGRID_FULL");
		ck_assert_msg(engine_simgrid_run_opt(&in, &o, &fast, &sf, &err), "%s", err.msg);
		setenv("SPSIM_SIMGRID_FULL", "1", 1);
		ck_assert_msg(engine_simgrid_run_opt(&in, &o, &full, &su, &err), "%s", err.msg);
		unsetenv("SPSIM_SIMGRID_FULL");
		/* the extrapolated path ran: other simulations than the full run's */
		ck_assert_msg(sf.executions != su.executions, "%ld executions (full: %ld)", sf.executions,
			      su.executions);
		ck_assert_close(fast.step_time, full.step_time, 1e-9);
		ck_assert_close(fast.breakdown.compute, full.breakdown.compute, 1e-9);
		ck_assert_close(fast.breakdown.sp_comm, full.breakdown.sp_comm, 1e-9);
		ck_assert_close(fast.breakdown.zero_comm, full.breakdown.zero_comm, 1e-9);
		ck_assert_close(fast.breakdown.zero_comm_exposed, full.breakdown.zero_comm_exposed, 1e-9);
		ck_assert_close(fast.breakdown.optimizer, full.breakdown.optimizer, 1e-9);
		ck_assert_close(fast.fwd_time, full.fwd_time, 1e-9);
		ck_assert_close(fast.bwd_time, full.bwd_time, 1e-9);
		ck_assert_close(fast.tokens_per_s, full.tokens_per_s, 1e-9);
		ck_assert_close(fast.mfu, full.mfu, 1e-9);
		/* and it is a G-micro-step answer: more than G - 1 micro-steps of compute */
		ck_assert(fast.step_time > (ga[c] - 1) * (fast.fwd_time + fast.bwd_time));
		workload_plan_finish(&plan);
	}
}
END_TEST

static void expect_same_result(const engine_result *a, const engine_result *b)
{
	const engine_breakdown *x = &a->breakdown, *y = &b->breakdown;
	ck_assert_close(a->step_time, b->step_time, 1e-9);
	ck_assert_close(x->compute, y->compute, 1e-9);
	ck_assert_close(x->gemm, y->gemm, 1e-9);
	ck_assert_close(x->attention, y->attention, 1e-9);
	ck_assert_close(x->memory_bound, y->memory_bound, 1e-9);
	ck_assert_close(x->optimizer, y->optimizer, 1e-9);
	ck_assert_close(x->sp_comm, y->sp_comm, 1e-9);
	ck_assert_close(x->sp_comm_exposed, y->sp_comm_exposed, 1e-9);
	ck_assert_close(x->zero_comm, y->zero_comm, 1e-9);
	ck_assert_close(x->zero_comm_exposed, y->zero_comm_exposed, 1e-9);
	ck_assert_close(a->fwd_time, b->fwd_time, 1e-9);
	ck_assert_close(a->bwd_time, b->bwd_time, 1e-9);
	ck_assert_close(a->tokens_per_s, b->tokens_per_s, 1e-9);
	ck_assert_close(a->mfu, b->mfu, 1e-9);
}

/* Runs in with o, then with *knob (a field of o) switched off, and expects the same result;
 * r and st (may be NULL) receive both runs' results and statistics. */
static void same_without(const engine_input *in, engine_simgrid_options *o, bool *knob, engine_result r[2],
			 engine_simgrid_stats st[2])
{
	config_error err;
	engine_simgrid_stats local[2];
	if (!st)
		st = local;
	ck_assert_msg(engine_simgrid_run_opt(in, o, &r[0], &st[0], &err), "%s", err.msg);
	*knob = false;
	ck_assert_msg(engine_simgrid_run_opt(in, o, &r[1], &st[1], &err), "%s", err.msg);
	expect_same_result(&r[0], &r[1]);
}

/* Llama-3.2-1B; 8 A100s on two nodes sharing one NIC each (small), and four DGX H100
 * nodes with a NIC per GPU (dgx). */
static void load_small_and_dgx(config_model *m, config_platform *small, config_platform *dgx)
{
	config_error err;
	ck_assert(config_load_model("llama-3.2-1b", m, &err) && config_load_platform("a100-2x4-ib400", small, &err) &&
		  config_load_platform("dgx-h100", dgx, &err));
	dgx->nodes = 4;
}

/* The checked job's plan and the engine input over it; with w, ranks out of step: rank 5
 * computes 1.5x slower and node 1's NIC runs at half speed. */
static engine_input planned_input(const config_model *m, const config_platform *p, config_job *job,
				  workload_plan *plan, config_whatif *w)
{
	config_error err;
	ck_assert_msg(workload_check(m, p, job, &err), "%s", err.msg);
	ck_assert(workload_plan_make(m, p, job, plan, &err));
	engine_input in = {.model = m, .platform = p, .job = job, .plan = plan};
	if (w) {
		ck_assert(config_whatif_add(w, CONFIG_WHATIF_SLOW_GPU, "5:1.5", &err));
		ck_assert(config_whatif_add(w, CONFIG_WHATIF_DEGRADE, "nic:1:2", &err));
		in.opt.whatif = w;
	}
	return in;
}

/* The jobs of the window tests (identical_layers_extrapolate_exactly,
 * shared_prefix_equals_separate_runs): Llama-3.2-1B on the small platform (8 GPUs) or 32
 * H100s (dgx), with a straggler and a degraded NIC where `whatif`. */
static const struct {
	config_strategy st;
	int sp, zero, ga;
	bool whatif, dgx, offload;
} window_cases[] = {
	{CONFIG_STRATEGY_BASP, 8, 2, 1, false, false},
	{CONFIG_STRATEGY_ULYSSES, 4, 2, 1, false, false},
	{CONFIG_STRATEGY_BASP, 8, 1, 1, true, false},
	{CONFIG_STRATEGY_BASP, 8, 2, 20, false, false},
	{CONFIG_STRATEGY_ULYSSES, 4, 3, 1, false, false}, /* does not repeat: the full run */
	{CONFIG_STRATEGY_ULYSSES, 8, 2, 1, false, true}, /* 32 H100s, one NIC per GPU */
	{CONFIG_STRATEGY_BASP, 8, 1, 1, false, true},
	{CONFIG_STRATEGY_ULYSSES, 4, 2, 20, true, false}, /* 20 micro-steps, ranks out of step */
	{CONFIG_STRATEGY_BASP, 8, 2, 20, false, false, true}, /* optimizer offload */
};

/* Runs window case c (whole, or with the symmetry reduction) with the engine's default options
 * and every window tried (repeat_always), then again with `knob` off (o.repeat: the full
 * program; o.share_prefix: each window's counts simulated apart); same_without expects
 * both results the same to 1e-9. */
static void window_case_run(size_t c, bool symmetry, bool share, const config_model *m, const config_platform *small,
			    const config_platform *dgx, engine_result r[2], engine_simgrid_stats st[2])
{
	config_job job = tu_job(window_cases[c].st, window_cases[c].dgx ? 32 : 8, window_cases[c].sp, 2, 4096,
				window_cases[c].zero);
	job.grad_accum = window_cases[c].ga;
	if (window_cases[c].offload)
		job.offload_optimizer = CONFIG_OFFLOAD_OPT_CPU;
	workload_plan plan;
	config_whatif w = {0};
	engine_input in = planned_input(m, window_cases[c].dgx ? dgx : small, &job, &plan,
					window_cases[c].whatif ? &w : NULL);
	engine_simgrid_options o;
	engine_simgrid_options_default(&o);
	o.repeat_always = true;
	o.symmetry = symmetry;
	same_without(&in, &o, share ? &o.share_prefix : &o.repeat, r, st);
	workload_plan_finish(&plan);
}

START_TEST(identical_layers_extrapolate_exactly)
{
	/* The layer blocks repeat once per layer (16 for Llama-3.2-1B): engine_simgrid_run_opt
	 * simulates 1, 2, 3 (or more) layers until the schedule repeats and extrapolates; the
	 * simulation of every layer (repeat off) gives the same step and breakdown to 1e-9, and
	 * the reduction is in use (fewer executions than the full run). Cases: the
	 * whole system (no symmetry) on 2 nodes sharing one 400G NIC per 4 GPUs; ZeRO-2 with
	 * BASP and with Ulysses, ZeRO-1 with a straggler and a
	 * degraded NIC (ranks out of step), and 20 micro-steps (layers reduced inside the
	 * micro-step extrapolation); 32 H100s (dgx-h100, a NIC per GPU) with ZeRO-2 and Ulysses,
	 * ZeRO-1 and BASP; and one that does not repeat (ZeRO-3 with Ulysses on the shared
	 * NIC), which falls back to the full run within the search's budget. The windows are
	 * tried even where they move more flows than the full run (repeat_always: at 16
	 * layers the guard of flow_count_guards_the_extrapolation would skip most of them). */
	config_model m;
	config_platform small, dgx;
	load_small_and_dgx(&m, &small, &dgx);
	for (size_t c = 0; c < sizeof window_cases / sizeof *window_cases; c++) {
		engine_result res[2];
		engine_simgrid_stats st[2];
		window_case_run(c, false, false, &m, &small, &dgx, res, st);
		const engine_simgrid_stats sf = st[0], su = st[1];
		if (c == 4) {
			/* ZeRO-3's gathers and Ulysses' all-to-alls share the NIC, and their phase drifts
			 * from layer to layer: the search gives up within its budget of
			 * max(L/2, 12) = 12 layer iterations (window 1-2-3 and its check at 6
			 * layers), then runs all 16. Executions: at most 5 x those outside the
			 * layers + 28 x a layer's (less the forward prefixes the window's runs
			 * share, §5.4), against 1 x + 16 x for the full run: under 2x */
			ck_assert_msg(sf.executions > su.executions && sf.executions < 2 * su.executions,
				      "%ld executions (full: %ld)", sf.executions, su.executions);
			continue;
		}
		/* the reduction is in use: fewer executions (flows need not fall at 16 layers:
		 * the window and its check simulate 1 + 2 + 3 + 6 layers, and what lies outside
		 * the layers four times) */
		ck_assert_msg(sf.executions < su.executions, "case %zu: %ld flows, %ld executions (full: %ld, %ld)", c,
			      sf.flows, sf.executions, su.flows, su.executions);
	}
}
END_TEST

START_TEST(shared_prefix_equals_separate_runs)
{
	/* The windows' layer counts (1, 2, 3 and the check at 6) run as one simulation of 6
	 * layers that forks a copy of itself at the first instant a stream with ops in a layer
	 * block would start iteration n (n = 1, 2, 3): up to there the two programs do the same
	 * thing, so each copy goes on as the n-layer run would (executor.c fork_copy). Every
	 * result equals the separate runs' exactly (the same floating-point operations in the
	 * same order, not merely to 1e-9), on the cases of identical_layers_extrapolate_exactly
	 * (BASP and Ulysses, ZeRO-1 to 3, a straggler with a degraded NIC, where ranks leave
	 * the layers at different instants, 20 micro-steps, a schedule that does not repeat),
	 * whole and, on the 32 H100s, with the symmetry reduction (ghost nodes) too. The copies
	 * simulate only what follows their fork: fewer flows and executions than the separate
	 * runs. */
	config_model m;
	config_platform small, dgx;
	load_small_and_dgx(&m, &small, &dgx);
	for (size_t c = 0; c < sizeof window_cases / sizeof *window_cases; c++)
		for (int sym = 0; sym <= (window_cases[c].dgx ? 1 : 0); sym++) {
			engine_result r[2];
			engine_simgrid_stats st[2];
			window_case_run(c, sym, true, &m, &small, &dgx, r, st);
			const engine_breakdown *x = &r[0].breakdown, *y = &r[1].breakdown;
			const double a[] = {r[0].step_time, x->compute,   x->gemm,	     x->attention,
					    x->memory_bound, x->optimizer, x->sp_comm,	     x->sp_comm_exposed,
					    x->zero_comm,    x->zero_comm_exposed, r[0].fwd_time, r[0].bwd_time};
			const double b[] = {r[1].step_time, y->compute,   y->gemm,	     y->attention,
					    y->memory_bound, y->optimizer, y->sp_comm,	     y->sp_comm_exposed,
					    y->zero_comm,    y->zero_comm_exposed, r[1].fwd_time, r[1].bwd_time};
			for (size_t i = 0; i < sizeof a / sizeof *a; i++)
				ck_assert_msg(a[i] == b[i], "case %zu (symmetry %d), field %zu: shared %.17g, separate %.17g",
					      c, sym, i, a[i], b[i]);
			ck_assert_msg(st[0].flows < st[1].flows && st[0].executions < st[1].executions,
				      "case %zu (symmetry %d): shared %ld flows, %ld executions; separate %ld, %ld", c,
				      sym, st[0].flows, st[0].executions, st[1].flows, st[1].executions);
			/* every copy brought its result (none was simulated again alone) */
			ck_assert_msg(st[0].copies >= 3 && st[0].copies_missing == 0 && st[1].copies == 0,
				      "case %zu: %d copies, %d missing", c, st[0].copies, st[0].copies_missing);
		}
}
END_TEST

START_TEST(shared_prefix_skips_an_idle_stream)
{
	/* A stream with no op in the micro-steps (here the prefetch stream, used by the step's
	 * barrier block only) walks every micro-step at once, in no simulated time, and waits
	 * at the step's barrier for the numbers of all 20 micro-steps before any micro-step
	 * copy is forked; a copy of g micro-steps must count the trunk's further micro-steps
	 * as skipped (executor.c stream_actor, sgx_run.micro_span), or that wait never ends.
	 * Hand-made program on two GPUs of two nodes: a layer block of 16 iterations (main
	 * computes 1 ms, the zero stream sends 10 MB after it), 20 micro-steps, and a barrier
	 * step block whose only op, on the prefetch stream, sends 1 MB. The micro-step windows
	 * (2, 3, 4 and 8) each at layer counts 1, 2, 3 and 6 run as one tree of forks; every
	 * result equals the separate runs' exactly and the full run's to 1e-9. */
	config_platform p = tu_platform(2, 1, 1);
	workload_op layer[2];
	compute_and_send(layer, 10e6);
	layer[1].dep = 0;
	workload_op step[1] = {comm(WL_COLL_SENDRECV, WL_ALG_DIRECT, WL_GROUP_WORLD, 1e6)};
	step[0].stream = WL_STREAM_PREFETCH;
	hand h;
	hand_init(&h, &p, 2, 2, layer, 2, 16);
	h.blk[0].layer_first = 0;
	h.blk[0].layer_step = 1;
	hand_step(&h, step, 1);
	h.plan.program.grad_accum = 20;
	h.job.grad_accum = 20;
	engine_simgrid_options o;
	engine_simgrid_options_default(&o);
	o.repeat_always = true;
	engine_result r[2], full;
	engine_simgrid_stats st[2];
	same_without(&h.in, &o, &o.share_prefix, r, st);
	ck_assert_msg(r[0].step_time == r[1].step_time && r[0].breakdown.zero_comm == r[1].breakdown.zero_comm,
		      "shared %.17g, separate %.17g", r[0].step_time, r[1].step_time);
	ck_assert_msg(st[0].flows < st[1].flows, "shared %ld flows, separate %ld", st[0].flows, st[1].flows);
	/* one tree: 4 micro-step counts x 4 layer counts, 15 of them forked copies, all back */
	ck_assert_msg(st[0].copies == 15 && st[0].copies_missing == 0, "%d copies, %d missing", st[0].copies,
		      st[0].copies_missing);
	o.repeat = false;
	config_error err;
	ck_assert_msg(engine_simgrid_run_opt(&h.in, &o, &full, NULL, &err), "%s", err.msg);
	expect_same_result(&r[0], &full);
}
END_TEST

/* The hand-made step of quiet_bucket_calls_extrapolate_exactly with `chunks` calls of
 * `per_call` bytes, with repeat (the calls extrapolated where §5.6 allows) or without. */
static void bucket_run(hand *h, workload_op *op, int chunks, double per_call, bool repeat, engine_result *r,
		       engine_simgrid_stats *st)
{
	op->chunks = chunks;
	op->bytes = chunks * per_call;
	engine_simgrid_options o;
	engine_simgrid_options_default(&o);
	o.repeat = repeat;
	config_error err;
	ck_assert_msg(engine_simgrid_run_opt(&h->in, &o, r, st, &err), "%s", err.msg);
}

START_TEST(quiet_bucket_calls_extrapolate_exactly)
{
	/* docs/simgrid.md §5.6. Two nodes of 4 GPUs, two NICs each (a ring of two channels, its
	 * intra-node edges merged): a micro-step block where the main stream computes 1e11
	 * FLOPs while the zero stream sends 10 MB to the next rank, then a barrier step block
	 * whose only op is a world ring all-gather of C bucket calls of 8 MB each (DeepSpeed's
	 * parameter all-gather after the optimizer). Once the first call has ended, every rank
	 * leaves each call at the same instant with nothing else running, so each call takes
	 * the same time: the full simulation of 10 calls is that of 3 plus 7 times one call (by
	 * the full runs of 3 and 4 calls), and with repeat on only 3 calls are simulated (the
	 * flows of the full run of 3), the result equal to the full run's. */
	config_platform p = tu_platform(2, 4, 2);
	workload_op b1[2];
	compute_and_send(b1, 10e6);
	workload_op step[2] = {comm(WL_COLL_ALLGATHER, WL_ALG_RING, WL_GROUP_WORLD, 0)};
	hand h;
	hand_init(&h, &p, 8, 8, b1, 2, 1);
	hand_step(&h, step, 1);
	engine_result r, f10, f3, f4;
	engine_simgrid_stats s, t10, t3, t4;
	bucket_run(&h, &step[0], 10, 8e6, true, &r, &s);
	bucket_run(&h, &step[0], 10, 8e6, false, &f10, &t10);
	bucket_run(&h, &step[0], 3, 8e6, false, &f3, &t3);
	bucket_run(&h, &step[0], 4, 8e6, false, &f4, &t4);
	expect_same_result(&r, &f10);
	ck_assert_close(f10.step_time - f3.step_time, 7 * (f4.step_time - f3.step_time), 1e-9);
	ck_assert_msg(s.flows == t3.flows && t3.flows < t4.flows && t4.flows < t10.flows,
		      "repeat %ld flows; full runs of 3, 4, 10 calls: %ld, %ld, %ld", s.flows, t3.flows, t4.flows,
		      t10.flows);
	ck_assert_int_eq(s.full_flows, s.flows); /* counted as simulated */
	ck_assert_int_eq(t10.full_flows, t10.flows);
	/* three calls or fewer: nothing to extrapolate */
	bucket_run(&h, &step[0], 3, 8e6, true, &r, &s);
	ck_assert_int_eq(s.flows, t3.flows);
	/* a straggler and a degraded NIC: the ranks reach the block at different instants, the
	 * first call ends for all at once; still exact, still 3 calls */
	config_whatif w = {0};
	config_error err;
	ck_assert(config_whatif_add(&w, CONFIG_WHATIF_SLOW_GPU, "5:1.5", &err));
	ck_assert(config_whatif_add(&w, CONFIG_WHATIF_DEGRADE, "nic:1:2", &err));
	h.in.opt.whatif = &w;
	bucket_run(&h, &step[0], 10, 8e6, true, &r, &s);
	bucket_run(&h, &step[0], 10, 8e6, false, &f10, &t10);
	expect_same_result(&r, &f10);
	ck_assert_msg(f10.step_time > f4.step_time, "the what-ifs cost time");
	ck_assert_int_eq(s.flows, t3.flows);
	h.in.opt.whatif = NULL;
	/* not quiet, so every call is simulated: the block without its barrier (the zero
	 * stream may still be sending), or with an op on another stream beside the calls */
	h.blk[1].barrier = false;
	bucket_run(&h, &step[0], 10, 8e6, true, &r, &s);
	ck_assert_int_eq(s.flows, t10.flows);
	h.blk[1].barrier = true;
	/* ... or a later block without a barrier, whose zero-stream send runs beside the calls */
	step[1] = comm(WL_COLL_SENDRECV, WL_ALG_DIRECT, WL_GROUP_WORLD, 1e6);
	step[1].stream = WL_STREAM_ZERO;
	h.blk[2] = (workload_block){.name = "after", .repeat = 1, .layer_first = -1, .ops = &step[1], .n_ops = 1,
				    .cap_ops = 1};
	h.plan.program.n_step = 2;
	bucket_run(&h, &step[0], 10, 8e6, true, &r, &s);
	bucket_run(&h, &step[0], 10, 8e6, false, &f10, &t10);
	ck_assert_int_eq(s.flows, t10.flows);
	expect_same_result(&r, &f10);
	hand_step(&h, step, 2); /* ... or the send in the calls' own block */
	bucket_run(&h, &step[0], 10, 8e6, true, &r, &s);
	bucket_run(&h, &step[0], 10, 8e6, false, &f10, &t10);
	ck_assert_int_eq(s.flows, t10.flows);
	expect_same_result(&r, &f10);
}
END_TEST

START_TEST(collective_series_times_each_size_from_one_start)
{
	/* `spsim collective --engine simgrid` times a series of sizes in one simulation, one
	 * barrier block per size. Ranks leave a size at different instants (a send/recv ring over
	 * two DGX A100 nodes: the pairs inside a node end before the ones over the network), so
	 * without a common start a size's time depended on the sizes run before it (128 KiB:
	 * 26.74 us alone, 27.47 after 1 KiB..64 KiB). Each size now starts on every rank at one
	 * instant, as nccl-tests times it after its Barrier(): every size of the series equals
	 * the size simulated alone (to 1e-9), for send/recv, all-to-all and all-gather. */
	config_platform p;
	config_error err;
	ck_assert(config_load_platform("dgx-a100", &p, &err));
	p.nodes = 2;
	static const workload_coll colls[] = {WL_COLL_SENDRECV, WL_COLL_ALLTOALL, WL_COLL_ALLGATHER};
	static const workload_alg algs[] = {WL_ALG_DIRECT, WL_ALG_DIRECT, WL_ALG_RING};
	double sizes[8];
	for (int i = 0; i < 8; i++)
		sizes[i] = 1024.0 * (1 << (2 * i)); /* 1 KiB .. 16 MiB */
	for (size_t c = 0; c < sizeof colls / sizeof *colls; c++) {
		double series[8];
		ck_assert_msg(engine_simgrid_collective_times(&p, colls[c], algs[c], 16, 16, NULL, sizes, 8, series, &err),
			      "%s", err.msg);
		for (int i = 0; i < 8; i++) {
			double alone;
			ck_assert_msg(engine_simgrid_collective_times(&p, colls[c], algs[c], 16, 16, NULL, &sizes[i], 1,
								      &alone, &err),
				      "%s", err.msg);
			ck_assert_msg(alone > 0 && fabs(series[i] - alone) <= 1e-9 * alone,
				      "%s %.0f B: %.6f us in the series, %.6f us alone", workload_coll_name(colls[c]),
				      sizes[i], series[i] * 1e6, alone * 1e6);
		}
	}
}
END_TEST

START_TEST(flow_count_guards_the_extrapolation)
{
	/* sgx_count_flows walks every rank's collectives through the same phases without
	 * simulating them: its count of the full program (stats.full_flows) is the flows a full
	 * run starts, on a reduced (symmetric) run, a whole one, ZeRO-1 to 3 and a failed node
	 * re-placing the job. engine_simgrid_run_opt weighs the layer windows by it. BASP with
	 * ZeRO-1 on Llama-3.1-8B (32 layers, 16 H100s, the symmetric run) moves few flows per
	 * layer beside those of the blocks outside the layers, so the first window (1, 2, 3 layers
	 * and the check at 6: 12 layer iterations and four times what lies outside the layers)
	 * moves more than the full run: the guard runs the full program (flows = full_flows)
	 * where repeat_always, which tries the window anyway, moves more. The same job on the
	 * whole system with node 0 failed simulates three of the 17 bucket calls of its gradient
	 * all-reduce and of its parameter all-gather (§5.6), so there the window pays. Where the layers carry most flows (Llama-3.2-1B with ZeRO-2 on 8 A100s,
	 * Llama-3.1-8B with Ulysses) the window pays and the guard keeps it. A search that
	 * fails (ZeRO-3 whose schedule does not repeat) is cut before it moves the full run's
	 * flows. Every result equals the full run's to 1e-9 (expect_same_result). */
	config_model m1, m8;
	config_platform small, dgx;
	config_error err;
	ck_assert(config_load_model("llama-3.2-1b", &m1, &err) && config_load_model("llama-3.1-8b", &m8, &err));
	ck_assert(config_load_platform("a100-2x4-ib400", &small, &err) && config_load_platform("dgx-h100", &dgx, &err));
	dgx.nodes = 4;
	static const struct {
		bool big; /* Llama-3.1-8B on dgx-h100 */
		config_strategy st;
		int gpus, sp, zero;
		bool symmetry, fail;
	} cases[] = {
		{false, CONFIG_STRATEGY_BASP, 8, 8, 2, false, false},
		{false, CONFIG_STRATEGY_ULYSSES, 8, 4, 3, false, false},
		{true, CONFIG_STRATEGY_ULYSSES, 16, 8, 2, false, false},
		{true, CONFIG_STRATEGY_ULYSSES, 32, 8, 3, true, false},
		{true, CONFIG_STRATEGY_BASP, 16, 8, 1, false, true},
		{true, CONFIG_STRATEGY_BASP, 16, 8, 1, true, false},
	};
	for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
		const config_platform *pp = cases[c].big ? &dgx : &small;
		const config_model *mm = cases[c].big ? &m8 : &m1;
		config_job job = tu_job(cases[c].st, cases[c].gpus, cases[c].sp, 2, cases[c].big ? 8192 : 4096,
					cases[c].zero);
		ck_assert_msg(workload_check(mm, pp, &job, &err), "%s", err.msg);
		workload_plan plan;
		ck_assert(workload_plan_make(mm, pp, &job, &plan, &err));
		engine_input in = {.model = mm, .platform = pp, .job = &job, .plan = &plan};
		config_whatif w = {0};
		if (cases[c].fail) {
			ck_assert(config_whatif_add(&w, CONFIG_WHATIF_FAIL_NODE, "0", &err));
			in.opt.whatif = &w;
		}
		engine_simgrid_options o;
		engine_simgrid_options_default(&o);
		o.symmetry = cases[c].symmetry;
		o.merge_flows = false; /* the flow counts above are those of separate ring channels */
		engine_result guarded, always, full;
		engine_simgrid_stats sg, sa, su;
		ck_assert_msg(engine_simgrid_run_opt(&in, &o, &guarded, &sg, &err), "%s", err.msg);
		o.repeat_always = true;
		ck_assert_msg(engine_simgrid_run_opt(&in, &o, &always, &sa, &err), "%s", err.msg);
		o.repeat = false;
		ck_assert_msg(engine_simgrid_run_opt(&in, &o, &full, &su, &err), "%s", err.msg);
		/* the count is the full run's flows, whichever path ran: every bucket call without
		 * repeat; with it, the calls §5.6 simulates (the first three of a quiet step block's
		 * bucket calls: ZeRO-1's gradient all-reduce and ZeRO-1/2's parameter all-gather,
		 * 17 calls each on Llama-3.1-8B; none on Llama-3.2-1B's 3 calls, nor under ZeRO-3, nor
		 * in the symmetric run) */
		ck_assert_msg(su.flows == su.full_flows, "case %zu: counted %ld, full run %ld", c, su.full_flows,
			      su.flows);
		ck_assert_msg(sg.full_flows == sa.full_flows, "case %zu: %ld, %ld", c, sg.full_flows, sa.full_flows);
		bool buckets = cases[c].big && cases[c].zero < 3 && !cases[c].symmetry;
		ck_assert_msg(buckets ? sg.full_flows < su.flows : sg.full_flows == su.flows,
			      "case %zu: counted %ld, full run %ld", c, sg.full_flows, su.flows);
		ck_assert_int_eq(su.simulated_ranks, cases[c].symmetry ? 8 : cases[c].gpus);
		expect_same_result(&guarded, &full);
		expect_same_result(&always, &full);
		/* a search the guard lets run moves fewer flows than the full run before it
		 * gives up, so never twice the full run's */
		ck_assert_msg(sg.flows < 2 * su.flows, "case %zu: guarded %ld, full %ld", c, sg.flows, su.flows);
		if (c == 5) /* the window cannot pay: the full run */
			ck_assert_msg(sg.flows == su.flows && sa.flows > su.flows, "guarded %ld, full %ld, always %ld",
				      sg.flows, su.flows, sa.flows);
		if (c == 0 || c == 2 || c == 4) /* the window pays: kept */
			ck_assert_msg(sg.flows == sa.flows && sg.flows < su.flows, "guarded %ld, full %ld, always %ld",
				      sg.flows, su.flows, sa.flows);
		workload_plan_finish(&plan);
	}
}
END_TEST

START_TEST(merged_flows_equal_the_separate_flows)
{
	/* A ring over several nodes has a channel per NIC, each visiting a node's members in
	 * the same cyclic order from a different one: all channels but one leave GPU i for
	 * GPU i+1 of the same node, with the same bytes, at the same instant. Posted as one
	 * flow of their summed bytes whose sharing penalty is divided by their number, they
	 * end at the instant the separate flows end (docs/simgrid.md §5.5). Held on whole
	 * steps, full program, every field to 1e-9: 32 H100s (8 NICs per node: seven of eight
	 * channels merge) with Ulysses ZeRO-2 and BASP ZeRO-3, the symmetric run of the first
	 * (flows into the ghosts), BASP ZeRO-2 with a straggler and a degraded NIC (ranks out of
	 * step), and with the lockstep ring (one phase per step). Fewer flows move wherever
	 * channels share a GPU pair; as many where a ring has one channel (one node, or one NIC
	 * per node: 8 A100s on two nodes sharing a NIC per 4 GPUs). */
	config_model m;
	config_platform small, dgx;
	load_small_and_dgx(&m, &small, &dgx);
	static const struct {
		bool dgx;
		config_strategy st;
		int gpus, sp, zero;
		bool symmetry, whatif, lockstep;
	} cases[] = {
		{true, CONFIG_STRATEGY_ULYSSES, 32, 8, 2, false, false, false},
		{true, CONFIG_STRATEGY_BASP, 32, 8, 3, false, false, false},
		{true, CONFIG_STRATEGY_ULYSSES, 32, 8, 2, true, false, false},
		{true, CONFIG_STRATEGY_BASP, 32, 8, 2, false, true, false},
		{true, CONFIG_STRATEGY_BASP, 32, 8, 2, false, false, true},
		{false, CONFIG_STRATEGY_BASP, 8, 8, 2, false, false, false}, /* one NIC per node: one channel */
		{true, CONFIG_STRATEGY_ULYSSES, 8, 8, 2, false, false, false}, /* one node: nothing to merge */
	};
	for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
		const config_platform *pp = cases[c].dgx ? &dgx : &small;
		config_job job = tu_job(cases[c].st, cases[c].gpus, cases[c].sp, 2, 4096, cases[c].zero);
		workload_plan plan;
		config_whatif w = {0};
		engine_input in = planned_input(&m, pp, &job, &plan, cases[c].whatif ? &w : NULL);
		engine_simgrid_options o;
		engine_simgrid_options_default(&o);
		o.symmetry = cases[c].symmetry;
		o.repeat = false;
		if (cases[c].lockstep)
			o.ring = ENGINE_SG_RING_LOCKSTEP;
		engine_result res[2]; /* merged, separate */
		engine_simgrid_stats st[2];
		same_without(&in, &o, &o.merge_flows, res, st);
		ck_assert_int_eq(st[0].executions, st[1].executions);
		if (c >= 5)
			ck_assert_int_eq(st[0].flows, st[1].flows);
		else
			ck_assert_msg(st[0].flows < st[1].flows, "case %zu: merged %ld, separate %ld", c, st[0].flows,
				      st[1].flows);
		ck_assert_int_eq(st[0].full_flows, st[0].flows); /* the count merges as the run does */
		workload_plan_finish(&plan);
	}
}
END_TEST

START_TEST(compute_as_a_timer_equals_the_execution)
{
	/* With one computing stream per GPU the engine waits each compute run's time instead
	 * of running a SimGrid execution of time x peak flops on the GPU host (speed peak): the
	 * host has nothing to share, so both end at the same instant. Held on whole steps where
	 * compute interleaves with contended traffic, full program (no extrapolation, no
	 * symmetry): Llama-3.2-1B, 8 A100s on one shared NIC per 4 GPUs, BASP ZeRO-2 with a
	 * straggler (rank 5 computes 1.5x slower) and Ulysses ZeRO-3 (prefetch and reduce
	 * streams beside the main one); every field to 1e-9, the same executions counted. */
	config_model m;
	config_platform p;
	config_error err;
	ck_assert(config_load_model("llama-3.2-1b", &m, &err) && config_load_platform("a100-2x4-ib400", &p, &err));
	static const struct {
		config_strategy st;
		int sp, zero;
		bool slow;
	} cases[] = {{CONFIG_STRATEGY_BASP, 8, 2, true}, {CONFIG_STRATEGY_ULYSSES, 4, 3, false}};
	for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
		config_job job = tu_job(cases[c].st, 8, cases[c].sp, 2, 4096, cases[c].zero);
		ck_assert_msg(workload_check(&m, &p, &job, &err), "%s", err.msg);
		workload_plan plan;
		ck_assert(workload_plan_make(&m, &p, &job, &plan, &err));
		engine_input in = {.model = &m, .platform = &p, .job = &job, .plan = &plan};
		config_whatif w = {0};
		if (cases[c].slow) {
			ck_assert(config_whatif_add(&w, CONFIG_WHATIF_SLOW_GPU, "5:1.5", &err));
			in.opt.whatif = &w;
		}
		engine_simgrid_options o;
		engine_simgrid_options_default(&o);
		o.symmetry = false;
		o.repeat = false;
		engine_result res[2]; /* timer, execution */
		engine_simgrid_stats st[2];
		same_without(&in, &o, &o.compute_timer, res, st);
		ck_assert_int_eq(st[0].executions, st[1].executions);
		ck_assert_int_eq(st[0].flows, st[1].flows);
		ck_assert(res[0].breakdown.compute > 0 && res[0].step_time > res[0].breakdown.compute);
		workload_plan_finish(&plan);
	}
}
END_TEST

/* The model on p (nodes as given) with job: the extrapolated run equals the simulation of
 * every layer on every field, and its exposed ZeRO time is positive. */
static void expect_extrapolation_exact(const char *model, const config_platform *p, config_job job)
{
	config_model m;
	config_error err;
	ck_assert(config_load_model(model, &m, &err));
	ck_assert_msg(workload_check(&m, p, &job, &err), "%s", err.msg);
	workload_plan plan;
	ck_assert(workload_plan_make(&m, p, &job, &plan, &err));
	engine_input in = {.model = &m, .platform = p, .job = &job, .plan = &plan};
	engine_simgrid_options o;
	engine_simgrid_options_default(&o);
	engine_result res[2]; /* extrapolated, every layer */
	same_without(&in, &o, &o.repeat, res, NULL);
	ck_assert(res[1].breakdown.zero_comm_exposed > 0 && res[0].breakdown.zero_comm_exposed > 0);
	workload_plan_finish(&plan);
}

START_TEST(a_linear_transient_is_not_extrapolated)
{
	/* Llama-3.2-3B (28 layers), ring attention over 8 H100s, ZeRO-3, 8K x 2: the exposed
	 * ZeRO time falls by the same 0.72 ms with each of the first 6 layers (a fixed exposed
	 * cost hidden one layer more at a time) and levels off later. Runs of 1, 2, 3 and 6
	 * layers lie on one line, so a window test alone extrapolates that slope to 28 layers:
	 * -13 ms of exposed ZeRO communication. No field of a steady state can fall from one
	 * period to the next (each totals non-negative amounts), so the window is refused and
	 * the result equals the simulation of every layer. */
	config_platform p;
	config_error err;
	ck_assert(config_load_platform("dgx-h100", &p, &err));
	expect_extrapolation_exact("llama-3.2-3b", &p, tu_job(CONFIG_STRATEGY_RING, 8, 8, 2, 8192, 3));
}
END_TEST

START_TEST(extrapolation_never_yields_a_negative_total)
{
	/* USP (Ulysses over the node, rings across the two) with ZeRO-3 on 2 dgx-h100 nodes, 64K,
	 * Llama-3.2-1B: windows of 1-4 layers look periodic, but extrapolated to 16 layers the
	 * ZeRO exposure comes out negative (-7 ms), so that window was no period. The engine
	 * goes on to the next window or the full run: a valid result, equal to the full run's. */
	config_platform p;
	config_error err;
	ck_assert(config_load_platform("dgx-h100", &p, &err));
	p.nodes = 2;
	expect_extrapolation_exact("llama-3.2-1b", &p, tu_job(CONFIG_STRATEGY_USP, 16, 16, 1, 65536, 3));
}
END_TEST

/* ------------------------------------------------------------- determinism --- */

START_TEST(same_input_bit_identical_output)
{
	/* a contended exchange (2 nodes, 1 NIC) run twice in two processes: same bits */
	config_platform p = tu_platform(2, 4, 1);
	workload_op ops[2] = {comm(WL_COLL_ALLTOALL, WL_ALG_DIRECT, WL_GROUP_SP, 8e6),
			      comm(WL_COLL_ALLREDUCE, WL_ALG_RING, WL_GROUP_WORLD, 3e6)};
	hand h;
	hand_init(&h, &p, 8, 8, ops, 2, 3);
	double a[3], b[3];
	in_child(det_child, &h, a, 3);
	in_child(det_child, &h, b, 3);
	ck_assert(a[0] > 0);
	ck_assert_mem_eq(a, b, sizeof a);
}
END_TEST

/* ------------------------------------------------------------------- tests --- */

static Suite *simgrid_suite(void)
{
	Suite *s = suite_create("simgrid");
	TCase *tc = tcase_create("platform");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, platform_xml_has_every_gpu_link_and_nic);
	tcase_add_test(tc, fat_tree_routes_climb_only_across_leaves);
	tcase_add_test(tc, large_platforms_group_zones);
	tcase_add_test(tc, built_platform_equals_the_xml_one);
	tcase_add_test(tc, host_names_parse_back);
	tcase_add_test(tc, no_link_is_shared_by_the_whole_cluster);
	tcase_add_test(tc, pcie_crosses_the_gpu_link_to_the_nic);
	tcase_add_test(tc, shipped_platforms_load_in_simgrid);
	suite_add_tcase(s, tc);
	tc = tcase_create("message");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, single_message_inside_a_node);
	tcase_add_test(tc, single_message_across_nodes);
	tcase_add_test(tc, alltoall_direct_inside_a_node);
	tcase_add_test(tc, alltoall_direct_between_processes_pays_the_staging_drain);
	tcase_add_test(tc, alltoall_pairwise_inside_a_node);
	tcase_add_test(tc, alltoall_pairwise_across_two_nodes);
	tcase_add_test(tc, alltoall_on_a_mesh_uses_every_pair_link);
	tcase_add_test(tc, one_rank_alltoall_is_a_launch_and_a_copy);
	tcase_add_test(tc, ring_collectives_inside_a_node);
	tcase_add_test(tc, ring_on_a_mesh_uses_disjoint_cycles);
	tcase_add_test(tc, ring_across_nodes_paced_by_the_nic);
	tcase_add_test(tc, ring_channels_spread_over_the_nics);
	tcase_add_test(tc, ring_network_channels_bound_the_network_leg);
	tcase_add_test(tc, hierarchical_allreduce_across_nodes);
	tcase_add_test(tc, buckets_run_back_to_back);
	tcase_add_test(tc, broadcast_is_a_pipelined_chain);
	tcase_add_test(tc, streams_overlap_and_dependencies_wait);
	tcase_add_test(tc, barrier_block_waits_for_every_stream);
	tcase_add_test(tc, zero_ring_and_ulysses_alltoall_share_the_nic);
	tcase_add_test(tc, basp_groups_share_an_oversubscribed_spine);
	suite_add_tcase(s, tc);
	tc = tcase_create("agreement");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, engines_agree_on_contention_free_cases);
	tcase_add_test(tc, engines_agree_with_memory_techniques);
	tcase_add_test(tc, engines_agree_with_optimizer_offload);
	tcase_add_test(tc, engines_agree_on_zero3_per_submodule_fetch);
	tcase_add_test(tc, ring_aggregation_is_exact_when_sharing_is_steady);
	tcase_add_test(tc, symmetry_is_exact_single_switch);
	tcase_add_test(tc, symmetry_is_exact_fat_tree);
	tcase_add_test(tc, symmetry_is_exact_hierarchical);
	tcase_add_test(tc, symmetry_is_exact_for_the_spine_case);
	suite_add_tcase(s, tc);
	tc = tcase_create("placement");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, placement_parses_and_maps);
	tcase_add_test(tc, strided_groups_straddle_nodes);
	tcase_add_test(tc, trace_has_a_process_per_node_and_a_slice_per_op);
	tcase_add_test(tc, engine_runs_any_number_of_simulations_per_process);
	tcase_add_test(tc, identical_micro_steps_extrapolate_exactly);
	tcase_add_test(tc, identical_layers_extrapolate_exactly);
	tcase_add_test(tc, shared_prefix_equals_separate_runs);
	tcase_add_test(tc, shared_prefix_skips_an_idle_stream);
	tcase_add_test(tc, flow_count_guards_the_extrapolation);
	tcase_add_test(tc, quiet_bucket_calls_extrapolate_exactly);
	tcase_add_test(tc, compute_as_a_timer_equals_the_execution);
	tcase_add_test(tc, merged_flows_equal_the_separate_flows);
	tcase_add_test(tc, a_linear_transient_is_not_extrapolated);
	tcase_add_test(tc, extrapolation_never_yields_a_negative_total);
	tcase_add_test(tc, same_input_bit_identical_output);
	tcase_add_test(tc, collective_series_times_each_size_from_one_start);
	suite_add_tcase(s, tc);
	return s;
}

int main(void) { return tu_run_suite(simgrid_suite()); }
#endif
