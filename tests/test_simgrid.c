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
#include "engine/simgrid/simgrid.h"
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

static workload_op comm(workload_coll c, workload_alg a, workload_group_kind g, double bytes)
{
	return (workload_op){.name = "comm", .kind = WL_OP_COMM,
			     .cat = g == WL_GROUP_SP ? WL_CAT_SP_COMM : WL_CAT_ZERO_COMM, .stream = WL_STREAM_MAIN,
			     .coll = c, .alg = a, .group = g, .bytes = bytes, .chunks = 1, .dep = -1};
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
	 * two NICs (and the leaf switch); across leaves it also climbs leaf 0's uplink and
	 * descends leaf 1's. GPU 1 uses NIC 1 (i mod nics). Inside a node: the two GPU links. */
	config_platform p = tu_platform(4, 2, 2);
	p.inter.topology = CONFIG_TOPO_FAT_TREE;
	p.inter.nodes_per_leaf = 2;
	p.inter.oversubscription = 4;
	load(&p);
	char r[512];
	route_of("n0g0", "n0g1", r, sizeof r);
	ck_assert_str_eq(r, "n0g0_link_UP n0g1_link_DOWN");
	route_of("n0g1", "n1g0", r, sizeof r);
	ck_assert_str_eq(r, "n0nic1_UP leaf0sw n1nic0_DOWN");
	route_of("n1g1", "n3g1", r, sizeof r);
	ck_assert_str_eq(r, "n1nic1_UP leaf0up_UP spsimsw leaf1up_DOWN n3nic1_DOWN");
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
	 * nodes in different groups and climb only switches. */
	config_platform p = tu_platform(100, 2, 1);
	load(&p);
	char r[512];
	route_of("n0g0", "n99g1", r, sizeof r);
	ck_assert_str_eq(r, "n0nic0_UP spsim_0sw spsimsw spsim_3sw n99nic0_DOWN");
	route_of("n33g0", "n34g1", r, sizeof r);
	ck_assert_str_eq(r, "n33nic0_UP spsim_1sw n34nic0_DOWN");
}
END_TEST

START_TEST(pcie_crosses_the_gpu_link_to_the_nic)
{
	config_platform p = tu_platform(2, 2, 1);
	p.intra.fabric = CONFIG_FABRIC_PCIE;
	load(&p);
	char r[512];
	route_of("n0g1", "n1g0", r, sizeof r);
	ck_assert_str_eq(r, "n0g1_link_UP n0nic0_UP spsimsw n1nic0_DOWN n1g0_link_DOWN");
}
END_TEST

/* ------------------------------------------------------------- one message --- */

START_TEST(single_message_inside_a_node)
{
	/* Two ranks on one node exchange 1 MB each way (send/recv, both directions at once on
	 * SPLITDUPLEX links): latency + size / bandwidth = 1 us + 1e6 / 100e9 = 11 us. */
	config_platform p = tu_platform(1, 2, 1);
	workload_op op = comm(WL_COLL_SENDRECV, WL_ALG_DIRECT, WL_GROUP_SP, 1e6);
	hand h;
	hand_init(&h, &p, 2, 2, &op, 1, 1);
	ck_assert_close(sim(&h.in, NULL, NULL), 11e-6, 1e-9);
}
END_TEST

START_TEST(single_message_across_nodes)
{
	/* One GPU per node: 10 us + 1e6 / 10e9 = 110 us. */
	config_platform p = tu_platform(2, 1, 1);
	workload_op op = comm(WL_COLL_SENDRECV, WL_ALG_DIRECT, WL_GROUP_SP, 1e6);
	hand h;
	hand_init(&h, &p, 2, 2, &op, 1, 1);
	ck_assert_close(sim(&h.in, NULL, NULL), 110e-6, 1e-9);
}
END_TEST

/* ------------------------------------------------------------- determinism --- */

static void det_child(void *ctx, double *out, int n)
{
	hand *h = ctx;
	engine_result r;
	sim(&h->in, NULL, &r);
	out[0] = r.step_time;
	out[1] = r.breakdown.sp_comm;
	out[2] = r.breakdown.zero_comm;
}

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
	tcase_add_test(tc, pcie_crosses_the_gpu_link_to_the_nic);
	suite_add_tcase(s, tc);
	tc = tcase_create("message");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, single_message_inside_a_node);
	tcase_add_test(tc, single_message_across_nodes);
	tcase_add_test(tc, same_input_bit_identical_output);
	suite_add_tcase(s, tc);
	return s;
}

int main(void) { return tu_run_suite(simgrid_suite()); }
#endif
