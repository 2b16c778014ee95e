/* whatif: the asymmetric what-ifs (slow GPU or node, degraded link, failed node): their
 * syntax and checks, placement around failed nodes, and their effect in the SimGrid
 * engine against hand derivations and symmetric invariants. Hand platform
 * (tests/testutil.h): NVSwitch 100 GB/s per GPU, 1 us; NICs 10 GB/s, 10 us; 100 TFLOP/s. */
#include "spsim_build.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "report/trace.h"
#include "testutil.h"

static config_whatif parse1(config_whatif_kind k, const char *text)
{
	config_whatif w = {0};
	config_error err;
	ck_assert_msg(config_whatif_add(&w, k, text, &err), "%s: %s", text, err.msg);
	ck_assert_int_eq(w.n, 1);
	return w;
}

static void parse_fails(config_whatif_kind k, const char *text, const char *want)
{
	config_whatif w = {0};
	config_error err = {{0}};
	ck_assert_msg(!config_whatif_add(&w, k, text, &err), "%s accepted", text);
	ck_assert_msg(strstr(err.msg, want), "'%s': message lacks '%s': %s", text, want, err.msg);
	ck_assert_int_eq(w.n, 0);
}

/* ------------------------------------------------------------------- syntax --- */

START_TEST(flags_parse_and_print_back)
{
	struct {
		config_whatif_kind k;
		const char *in, *out;
	} ok[] = {
		{CONFIG_WHATIF_SLOW_GPU, "3:1.5", "slow-gpu 3:1.5"},
		{CONFIG_WHATIF_SLOW_NODE, "0:2", "slow-node 0:2"},
		{CONFIG_WHATIF_DEGRADE, "nic:1:4", "degrade nic:1:4"},
		{CONFIG_WHATIF_DEGRADE, "nic:1.3:4", "degrade nic:1.3:4"},
		{CONFIG_WHATIF_DEGRADE, "nvlink:0.2:2", "degrade nvlink:0.2:2"},
		{CONFIG_WHATIF_DEGRADE, "nvlink:0.5-2:2", "degrade nvlink:0.2-5:2"}, /* pair kept low-high */
		{CONFIG_WHATIF_DEGRADE, "leaf:7:3", "degrade leaf:7:3"},
		{CONFIG_WHATIF_FAIL_NODE, "12", "fail-node 12"},
		{CONFIG_WHATIF_BACKGROUND, "1KiB:2ms:4-7", "background 1024B:0.002s:4-7"},
		{CONFIG_WHATIF_BACKGROUND, "1GiB:100ms:4-7", "background 1073741824B:0.1s:4-7"}, /* 2^30, exact */
		{CONFIG_WHATIF_SLOW_GPU, "3:1.2345678", "slow-gpu 3:1.2345678"},
	};
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		config_whatif w = parse1(ok[i].k, ok[i].in);
		char buf[96];
		config_whatif_format(&w.item[0], buf, sizeof buf);
		ck_assert_str_eq(buf, ok[i].out);
	}
	/* messages quote the user's spelling, not the normalised one */
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		config_whatif w = parse1(ok[i].k, ok[i].in);
		char buf[96], want[96];
		config_whatif_label(&w.item[0], buf, sizeof buf);
		snprintf(want, sizeof want, "%s %s", config_whatif_flags[ok[i].k], ok[i].in);
		ck_assert_str_eq(buf, want);
	}
	config_whatif w = parse1(CONFIG_WHATIF_DEGRADE, "nic:1.3:4");
	ck_assert_int_eq(w.item[0].link, CONFIG_LINK_NIC);
	ck_assert_int_eq(w.item[0].node, 1);
	ck_assert_int_eq(w.item[0].a, 3);
	ck_assert_double_eq(w.item[0].factor, 4);
}
END_TEST

START_TEST(bad_flags_name_the_flag_and_the_form)
{
	parse_fails(CONFIG_WHATIF_SLOW_GPU, "3", "--slow-gpu '3': expected RANK:FACTOR");
	parse_fails(CONFIG_WHATIF_SLOW_GPU, "3:0.5", "FACTOR a number from 1 to 1000");
	parse_fails(CONFIG_WHATIF_SLOW_GPU, "3:2000", "--slow-gpu");
	parse_fails(CONFIG_WHATIF_SLOW_GPU, "-1:2", "--slow-gpu");
	parse_fails(CONFIG_WHATIF_SLOW_NODE, "a:2", "--slow-node 'a:2': expected NODE:FACTOR");
	parse_fails(CONFIG_WHATIF_DEGRADE, "nic:1", "--degrade 'nic:1': expected LINK:FACTOR");
	parse_fails(CONFIG_WHATIF_DEGRADE, "spine:0:2", "nic:NODE, nic:NODE.I");
	parse_fails(CONFIG_WHATIF_DEGRADE, "nvlink:0:2", "--degrade");   /* GPU missing */
	parse_fails(CONFIG_WHATIF_DEGRADE, "nvlink:0.1-1:2", "--degrade"); /* a pair of one GPU */
	parse_fails(CONFIG_WHATIF_DEGRADE, "nic:0:nan", "--degrade");
	parse_fails(CONFIG_WHATIF_FAIL_NODE, "1:2", "--fail-node '1:2': expected NODE");
	parse_fails(CONFIG_WHATIF_FAIL_NODE, "", "--fail-node");
	/* background: the message names the part that is wrong */
	parse_fails(CONFIG_WHATIF_BACKGROUND, "1GiB:100ms:4", "--background '1GiB:100ms:4': nodes '4' must be A-B");
	parse_fails(CONFIG_WHATIF_BACKGROUND, "1GiB:100ms:4-4", "nodes '4-4' must be A-B"); /* a ring of one node */
	parse_fails(CONFIG_WHATIF_BACKGROUND, "1GiB:100ms:7-4", "with A < B");
	parse_fails(CONFIG_WHATIF_BACKGROUND, "1GiB:100:4-5", "'period'");   /* period without unit */
	parse_fails(CONFIG_WHATIF_BACKGROUND, "1GiB:0ms:4-5", "'period' must be a time from 1 us");
	parse_fails(CONFIG_WHATIF_BACKGROUND, "1Gbps:1ms:4-5", "'size'");
	parse_fails(CONFIG_WHATIF_BACKGROUND, "1GiB:1ms", "--background '1GiB:1ms': expected SIZE:PERIOD:NODES");
	parse_fails(CONFIG_WHATIF_BACKGROUND, "1GiB:1ms:4-5:6", "expected SIZE:PERIOD:NODES");
	config_whatif w = {0};
	config_error err;
	for (int i = 0; i < CONFIG_MAX_WHATIF; i++)
		ck_assert(config_whatif_add(&w, CONFIG_WHATIF_FAIL_NODE, "1", &err));
	ck_assert(!config_whatif_add(&w, CONFIG_WHATIF_FAIL_NODE, "1", &err));
	ck_assert_ptr_nonnull(strstr(err.msg, "at most"));
}
END_TEST

static void check_fails(const config_platform *p, int world, config_whatif_kind k, const char *text,
			const char *want)
{
	config_whatif w = parse1(k, text);
	config_error err = {{0}};
	ck_assert_msg(!config_whatif_check(&w, p, world, &err), "%s accepted", text);
	ck_assert_msg(strstr(err.msg, want), "'%s': message lacks '%s': %s", text, want, err.msg);
}

/* compare --what-if: an empty item ('+' at an end, '++') was skipped by the tokenizer, so
 * "slow-gpu=0:2+" ran as "slow-gpu=0:2" and "+" as a column with no what-if at all */
START_TEST(what_if_spec_refuses_an_empty_item)
{
	const char *const bad[] = {"slow-gpu=0:2+", "+slow-gpu=0:2", "slow-gpu=0:2++degrade=nic:0:2", "+"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		config_whatif w = {0};
		config_error err = {{0}};
		ck_assert_msg(!config_whatif_parse_spec(&w, bad[i], &err), "'%s' accepted", bad[i]);
		ck_assert_msg(strstr(err.msg, "has an empty item, expected KIND=VALUE items joined by single '+'"), "%s",
			      err.msg);
		ck_assert_int_eq(w.n, 0);
	}
	config_whatif w = {0};
	config_error err = {{0}};
	ck_assert_msg(config_whatif_parse_spec(&w, "slow-gpu=0:2+degrade=nic:0:2", &err), "%s", err.msg);
	ck_assert_int_eq(w.n, 2);
}
END_TEST

START_TEST(checks_against_the_platform)
{
	config_platform p = tu_platform(4, 4, 2);
	check_fails(&p, 8, CONFIG_WHATIF_SLOW_GPU, "8:2", "rank 8 does not exist: the job has ranks 0 to 7");
	check_fails(&p, 0, CONFIG_WHATIF_SLOW_GPU, "16:2", "ranks 0 to 15"); /* 0: every GPU */
	check_fails(&p, 8, CONFIG_WHATIF_SLOW_NODE, "4:2", "node 4 does not exist");
	check_fails(&p, 8, CONFIG_WHATIF_DEGRADE, "nic:0.2:2", "NIC 2 does not exist");
	check_fails(&p, 8, CONFIG_WHATIF_DEGRADE, "nvlink:0.4:2", "GPU 4 does not exist");
	check_fails(&p, 8, CONFIG_WHATIF_DEGRADE, "nvlink:0.1-2:2", "only on an nvlink-mesh");
	check_fails(&p, 8, CONFIG_WHATIF_DEGRADE, "leaf:0:2", "has no leaf uplinks");
	check_fails(&p, 16, CONFIG_WHATIF_FAIL_NODE, "3", "no longer fits: it needs 16 GPUs, and 3 of 4 nodes remain (12 GPUs)");
	config_platform one = tu_platform(1, 4, 1);
	check_fails(&one, 4, CONFIG_WHATIF_DEGRADE, "nic:0:2", "one node");
	{
		/* what-ifs on one target multiply, and the product is held to one factor's range
		 * (1 to 1000): 100 x 10 on rank 0 runs, 100 x 11 does not; NIC 0 of node 0 is hit
		 * by nic:0 (every NIC) and nic:0.0 (100 x 20 = 2000); nic:0.1 is another NIC (100 x
		 * 20 on NIC 1, 100 on NIC 0: each within); a --slow-gpu on a slowed node is two
		 * bounded factors (1000 x 1000 runs). Every node failed: no "--gpus 0" advice. */
		const struct {
			config_whatif_kind k[2];
			const char *t[2];
			const char *want; /* NULL: accepted */
		} cases[] = {
			{{CONFIG_WHATIF_SLOW_GPU, CONFIG_WHATIF_SLOW_GPU}, {"0:100", "0:10"}, NULL},
			{{CONFIG_WHATIF_SLOW_GPU, CONFIG_WHATIF_SLOW_GPU}, {"0:100", "0:11"},
			 "--slow-gpu 0:100: the what-ifs on its rank multiply to a factor of 1100, expected at most 1000"},
			{{CONFIG_WHATIF_SLOW_GPU, CONFIG_WHATIF_SLOW_GPU}, {"0:100", "1:100"}, NULL},
			{{CONFIG_WHATIF_SLOW_NODE, CONFIG_WHATIF_SLOW_NODE}, {"1:1000", "1:1.5"}, "its node multiply to a factor of 1500"},
			{{CONFIG_WHATIF_SLOW_GPU, CONFIG_WHATIF_SLOW_NODE}, {"0:1000", "0:1000"}, NULL},
			{{CONFIG_WHATIF_DEGRADE, CONFIG_WHATIF_DEGRADE}, {"nic:0:100", "nic:0.0:20"}, "its link multiply to a factor of 2000"},
			{{CONFIG_WHATIF_DEGRADE, CONFIG_WHATIF_DEGRADE}, {"nic:0.0:100", "nic:0.1:20"}, NULL},
			{{CONFIG_WHATIF_DEGRADE, CONFIG_WHATIF_DEGRADE}, {"nvlink:0.1:100", "nvlink:0.1:20"}, "factor of 2000"},
			{{CONFIG_WHATIF_FAIL_NODE, CONFIG_WHATIF_FAIL_NODE}, {"0", "1"}, NULL},
		};
		for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
			config_whatif w = {0};
			config_error err = {{0}};
			for (int i = 0; i < 2; i++)
				ck_assert_msg(config_whatif_add(&w, cases[c].k[i], cases[c].t[i], &err), "%s", err.msg);
			bool ok = config_whatif_check(&w, &p, 8, &err);
			if (!cases[c].want)
				ck_assert_msg(ok, "%s %s refused: %s", cases[c].t[0], cases[c].t[1], err.msg);
			else
				ck_assert_msg(!ok && strstr(err.msg, cases[c].want), "%s %s: '%s' lacks '%s'", cases[c].t[0],
					      cases[c].t[1], ok ? "(accepted)" : err.msg, cases[c].want);
		}
		config_whatif all = {0};
		config_error err = {{0}};
		for (int n = 0; n < 4; n++) {
			char t[8];
			snprintf(t, sizeof t, "%d", n);
			ck_assert(config_whatif_add(&all, CONFIG_WHATIF_FAIL_NODE, t, &err));
		}
		ck_assert(!config_whatif_check(&all, &p, 8, &err));
		ck_assert_msg(strstr(err.msg, "every node of") && strstr(err.msg, "failed (4 of 4)") &&
				      !strstr(err.msg, "--gpus 0"),
			      "%s", err.msg);
	}
	check_fails(&p, 8, CONFIG_WHATIF_BACKGROUND, "1GiB:1ms:2-4", "--background 1GiB:1ms:2-4: node 4 does not exist");
	p.intra.fabric = CONFIG_FABRIC_NVLINK_MESH;
	p.inter.topology = CONFIG_TOPO_FAT_TREE;
	p.inter.nodes_per_leaf = 2;
	config_error err;
	config_whatif w = parse1(CONFIG_WHATIF_DEGRADE, "nvlink:0.1-2:2");
	ck_assert_msg(config_whatif_check(&w, &p, 8, &err), "%s", err.msg);
	w = parse1(CONFIG_WHATIF_DEGRADE, "leaf:1:2");
	ck_assert_msg(config_whatif_check(&w, &p, 8, &err), "%s", err.msg);
	check_fails(&p, 8, CONFIG_WHATIF_DEGRADE, "leaf:2:2", "leaf 2 does not exist: platform 'hand' has leaves 0 to 1");
	w = parse1(CONFIG_WHATIF_FAIL_NODE, "3");
	ck_assert_msg(config_whatif_check(&w, &p, 12, &err), "%s", err.msg); /* 12 GPUs remain */
}
END_TEST

START_TEST(factors_compose)
{
	config_whatif w = {0};
	config_error err;
	ck_assert(config_whatif_add(&w, CONFIG_WHATIF_SLOW_GPU, "5:2", &err));
	ck_assert(config_whatif_add(&w, CONFIG_WHATIF_SLOW_NODE, "1:1.5", &err));
	ck_assert(config_whatif_add(&w, CONFIG_WHATIF_DEGRADE, "nic:1:2", &err));
	ck_assert(config_whatif_add(&w, CONFIG_WHATIF_DEGRADE, "nic:1.0:3", &err));
	ck_assert(config_whatif_add(&w, CONFIG_WHATIF_DEGRADE, "nvlink:0.2:4", &err));
	ck_assert_double_eq(config_whatif_compute_factor(&w, 5, 1), 3);  /* both apply */
	ck_assert_double_eq(config_whatif_compute_factor(&w, 4, 1), 1.5);
	ck_assert_double_eq(config_whatif_compute_factor(&w, 5, 0), 2);
	ck_assert_double_eq(config_whatif_compute_factor(NULL, 5, 0), 1);
	ck_assert_double_eq(config_whatif_link_factor(&w, CONFIG_LINK_NIC, 1, 0, -1), 6);
	ck_assert_double_eq(config_whatif_link_factor(&w, CONFIG_LINK_NIC, 1, 1, -1), 2);
	ck_assert_double_eq(config_whatif_link_factor(&w, CONFIG_LINK_NIC, 0, 0, -1), 1);
	/* a GPU's port covers its own link and every mesh pair link it is part of */
	ck_assert_double_eq(config_whatif_link_factor(&w, CONFIG_LINK_NVLINK, 0, 2, -1), 4);
	ck_assert_double_eq(config_whatif_link_factor(&w, CONFIG_LINK_NVLINK, 0, 1, 2), 4);
	ck_assert_double_eq(config_whatif_link_factor(&w, CONFIG_LINK_NVLINK, 0, 1, 3), 1);
	ck_assert_double_eq(config_whatif_link_factor(&w, CONFIG_LINK_NVLINK, 1, 2, -1), 1);
}
END_TEST

/* ---------------------------------------------------------------- job file --- */

START_TEST(job_file_what_if_key)
{
	char path[] = "/tmp/spsim-whatif-XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	tu_write_file(path, "job:\n  gpus: 8\n  what_if:\n    slow_gpu: [\"1:2\", \"3:1.5\"]\n    degrade: nic:0:2\n"
			 "    fail_node: [3]\n");
	config_whatif w = {0};
	config_error err;
	ck_assert_msg(config_load_whatif(path, &w, &err), "%s", err.msg);
	ck_assert_int_eq(w.n, 4);
	ck_assert_int_eq(w.item[1].rank, 3);
	ck_assert_int_eq(w.item[2].kind, CONFIG_WHATIF_DEGRADE);
	ck_assert_int_eq(w.item[3].node, 3);
	config_job job;
	config_job_defaults(&job);
	ck_assert_msg(config_load_job(path, &job, NULL, NULL, NULL, NULL, &err), "%s", err.msg); /* key known */
	ck_assert_int_eq(job.gpus, 8);

	/* errors point at the entry, in the flag's words; nothing is appended */
	tu_write_file(path, "job:\n  what_if:\n    slow_gpu:\n      - \"1:2\"\n      - \"1:0\"\n");
	config_whatif w2 = {0};
	ck_assert(!config_load_whatif(path, &w2, &err));
	ck_assert_msg(strstr(err.msg, ":5:9: 'slow_gpu': --slow-gpu '1:0': expected RANK:FACTOR"), "%s", err.msg);
	ck_assert_int_eq(w2.n, 0);
	tu_write_file(path, "job:\n  what_if:\n    slow_gpus: \"1:2\"\n");
	ck_assert(!config_load_whatif(path, &w2, &err));
	ck_assert_msg(strstr(err.msg, "slow_gpus") && strstr(err.msg, "slow_gpu"), "%s", err.msg);
	tu_write_file(path, "job:\n  what_if:\n    degrade: {nic: 0}\n");
	ck_assert(!config_load_whatif(path, &w2, &err));
	ck_assert_msg(strstr(err.msg, ":3:14: 'degrade' entries must be strings"), "%s", err.msg);
	tu_write_file(path, "job:\n  what_if: 3\n");
	ck_assert(!config_load_whatif(path, &w2, &err));
	ck_assert_msg(strstr(err.msg, ":2:12:"), "%s", err.msg);
	unlink(path);
}
END_TEST

/* -------------------------------------------------------------- node groups --- */

/* platforms/dgx-h100.yaml with `extra` appended under platform: and its nodes set. */
static void mixed_platform(const char *path, int nodes, const char *extra)
{
	char src[2048];
	snprintf(src, sizeof src, "%s/platforms/dgx-h100.yaml", getenv("SPSIM_DATA_DIR"));
	FILE *in = fopen(src, "r");
	ck_assert_ptr_nonnull(in);
	FILE *out = fopen(path, "w");
	ck_assert_ptr_nonnull(out);
	char line[1024];
	while (fgets(line, sizeof line, in)) {
		if (strcmp(line, "  nodes: 1\n") == 0)
			fprintf(out, "  nodes: %d\n", nodes);
		else
			fputs(line, out);
	}
	fputs(extra, out);
	fclose(in);
	fclose(out);
}

START_TEST(node_groups_load_and_fail_at_their_line)
{
	char path[] = "/tmp/spsim-mixed-XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	mixed_platform(path, 3,
		       "  node_groups:\n    - {nodes: 2}\n    - nodes: 1\n      nics: 4\n"
		       "      gpu: {name: A100-SXM4-80GB, peak_bf16: 312TFLOPS, memory: 64GiB, hbm_bandwidth: 2039GB/s}\n");
	config_platform p;
	config_error err;
	ck_assert_msg(config_load_platform(path, &p, &err), "%s", err.msg);
	ck_assert_int_eq(p.n_node_groups, 2);
	ck_assert_int_eq(p.node_groups[0].nodes, 2);
	ck_assert_int_eq(p.node_groups[0].nics, 8); /* the platform's */
	ck_assert_str_eq(p.node_groups[0].gpu.name, "H100-SXM5-80GB");
	ck_assert_int_eq(p.node_groups[1].nics, 4);
	ck_assert_int_eq(p.node_groups[1].gpu.arch, CONFIG_ARCH_AMPERE); /* by name */
	ck_assert_int_eq(p.node_groups[1].gpu.sms, 108);
	ck_assert_int_eq(config_platform_group_of(&p, 1), 0);
	ck_assert_int_eq(config_platform_group_of(&p, 2), 1);
	ck_assert_int_eq(config_platform_nics_of(&p, 2), 4);
	ck_assert_double_eq(config_platform_gpu_of(&p, 2)->peak_flops, 312e12);
	ck_assert(config_platform_heterogeneous(&p));
	/* the memory check: the smallest GPU holding a rank (contiguous: 16 ranks on nodes 0-1) */
	engine_options opt = {.placement = ENGINE_PLACE_CONTIGUOUS};
	ck_assert_double_eq(engine_placed_gpu_memory(&p, 16, &opt), 80.0 * (1 << 30));
	ck_assert_double_eq(engine_placed_gpu_memory(&p, 17, &opt), 64.0 * (1 << 30));
	config_whatif w = parse1(CONFIG_WHATIF_FAIL_NODE, "0");
	opt.whatif = &w; /* node 0 lost: 16 ranks on nodes 1 and 2 */
	ck_assert_double_eq(engine_placed_gpu_memory(&p, 16, &opt), 64.0 * (1 << 30));

	mixed_platform(path, 4, "  node_groups:\n    - {nodes: 2}\n    - {nodes: 1}\n");
	ck_assert(!config_load_platform(path, &p, &err));
	ck_assert_msg(strstr(err.msg, "'node_groups' hold 3 nodes, expected the platform's nodes (4)"), "%s", err.msg);
	mixed_platform(path, 2, "  node_groups:\n    - {nodes: 2, gpus: 4}\n");
	ck_assert(!config_load_platform(path, &p, &err));
	ck_assert_msg(strstr(err.msg, "unknown key 'gpus'"), "%s", err.msg);
	mixed_platform(path, 2, "  node_groups:\n    - {nodes: 1}\n    - {nodes: 1, gpu: {name: X1}}\n");
	ck_assert(!config_load_platform(path, &p, &err));
	ck_assert_msg(strstr(err.msg, "peak_bf16"), "%s", err.msg);
	mixed_platform(path, 2, "  node_groups: 2\n");
	ck_assert(!config_load_platform(path, &p, &err));
	ck_assert_msg(strstr(err.msg, "non-empty list"), "%s", err.msg);
	mixed_platform(path, 2, "  node_groups:\n    - {nodes: 2}\n");
	ck_assert_msg(config_load_platform(path, &p, &err), "%s", err.msg);
	ck_assert(!config_platform_heterogeneous(&p)); /* one group like the platform */
	unlink(path);
}
END_TEST

/* --------------------------------------------------------------- placement --- */

START_TEST(failed_node_replaces_by_the_policy)
{
	/* 4 nodes x 4 GPUs, node 1 lost: the policy sees nodes 0, 2, 3 as nodes 0, 1, 2. */
	config_platform p = tu_platform(4, 4, 1);
	config_whatif w = parse1(CONFIG_WHATIF_FAIL_NODE, "1");
	engine_options opt = {.placement = ENGINE_PLACE_CONTIGUOUS, .whatif = &w};
	config_error err;
	int got[12];
	/* contiguous: ranks 0-3 on node 0, ranks 4-7 on node 2 (GPU 8 onwards) */
	ck_assert_msg(engine_whatif_placement(&p, 8, &opt, got, &err), "%s", err.msg);
	const int contiguous[8] = {0, 1, 2, 3, 8, 9, 10, 11};
	for (int r = 0; r < 8; r++)
		ck_assert_int_eq(got[r], contiguous[r]);
	/* strided over the first two remaining nodes (0 and 2): local slot major, node minor */
	opt.placement = ENGINE_PLACE_STRIDED;
	ck_assert_msg(engine_whatif_placement(&p, 8, &opt, got, &err), "%s", err.msg);
	const int strided[8] = {0, 8, 1, 9, 2, 10, 3, 11};
	for (int r = 0; r < 8; r++)
		ck_assert_int_eq(got[r], strided[r]);
	/* random: the seeded permutation of the 12 remaining slots, never on node 1 */
	opt.placement = ENGINE_PLACE_RANDOM;
	opt.placement_seed = 7;
	ck_assert(engine_whatif_placement(&p, 12, &opt, got, &err));
	int seen[16] = {0};
	for (int r = 0; r < 12; r++) {
		ck_assert_int_ne(got[r] / 4, 1);
		seen[got[r]]++;
	}
	for (int g = 0; g < 16; g++)
		ck_assert_int_eq(seen[g], g / 4 == 1 ? 0 : 1);
	/* 13 ranks no longer fit on 12 GPUs */
	ck_assert(!engine_whatif_placement(&p, 13, &opt, got, &err));
	ck_assert_msg(strstr(err.msg, "no longer fits: it needs 13 GPUs, and 3 of 4 nodes remain (12 GPUs)"), "%s",
		      err.msg);
	/* without failed nodes it is the plain policy */
	config_whatif none = {0};
	opt = (engine_options){.placement = ENGINE_PLACE_CONTIGUOUS, .whatif = &none};
	ck_assert(engine_whatif_placement(&p, 8, &opt, got, &err));
	for (int r = 0; r < 8; r++)
		ck_assert_int_eq(got[r], r);
}
END_TEST

static double analytic_step(engine_input *in, const config_whatif *w)
{
	in->opt.whatif = w;
	engine_result r;
	config_error err;
	ck_assert_msg(engine_find("analytic")->run(in, &r, &err), "%s", err.msg);
	return r.step_time;
}

/* Ulysses SP 4 over 8 GPUs of a hand platform of `nodes` x 4 GPUs with `nics` NICs each,
 * planned for the analytic engine; zero_overlap -1 keeps the default. `in` points into *f. */
typedef struct an_fixture {
	config_platform p;
	config_model m;
	config_job job;
	workload_plan plan;
	engine_input in;
} an_fixture;

static void an_fixture_init(an_fixture *f, int nodes, int nics, int zero_overlap)
{
	f->p = tu_platform(nodes, 4, nics);
	f->m = tu_model();
	f->job = tu_job(CONFIG_STRATEGY_ULYSSES, 8, 4, 1, 4096, 1);
	if (zero_overlap >= 0)
		f->job.zero_overlap = zero_overlap;
	config_error err;
	ck_assert(workload_check(&f->m, &f->p, &f->job, &err));
	ck_assert_msg(workload_plan_make(&f->m, &f->p, &f->job, &f->plan, &err), "%s", err.msg);
	f->in = (engine_input){.model = &f->m, .platform = &f->p, .job = &f->job, .plan = &f->plan};
}

/* The analytic engine runs the compute what-ifs as every rank at the slowest rank's pace
 * and refuses the others. */
START_TEST(analytic_engine_runs_compute_what_ifs_at_the_slowest_pace)
{
	static an_fixture f;
	an_fixture_init(&f, 2, 1, -1);
	engine_input in = f.in;
	config_model m = f.m;
	workload_plan plan = f.plan;
	config_error err;
	config_whatif none = {0}; /* an empty list is no what-if */
	const double base = analytic_step(&in, &none);
	/* rank 5 is on node 1 (4 GPUs per node): a slow GPU there, the whole node slow, and a
	 * slower GPU elsewhere beside a milder node all pace at 1.5 */
	config_whatif gpu = parse1(CONFIG_WHATIF_SLOW_GPU, "5:1.5"), node = parse1(CONFIG_WHATIF_SLOW_NODE, "1:1.5");
	config_whatif mixed = parse1(CONFIG_WHATIF_SLOW_GPU, "0:1.5");
	ck_assert(config_whatif_add(&mixed, CONFIG_WHATIF_SLOW_NODE, "1:1.2", &err));
	const double slow = analytic_step(&in, &gpu);
	ck_assert_double_gt(slow, base * 1.1);
	ck_assert_double_eq(analytic_step(&in, &node), slow);
	ck_assert_double_eq(analytic_step(&in, &mixed), slow);
	/* factors on one rank multiply: 1.5 x 1.2 = 1.8 is slower still */
	config_whatif both = parse1(CONFIG_WHATIF_SLOW_GPU, "5:1.5");
	ck_assert(config_whatif_add(&both, CONFIG_WHATIF_SLOW_NODE, "1:1.2", &err));
	ck_assert_double_gt(analytic_step(&in, &both), slow);
	/* a factor of 1 changes nothing */
	config_whatif one = parse1(CONFIG_WHATIF_SLOW_NODE, "0:1");
	ck_assert_double_eq(analytic_step(&in, &one), base);
	/* a leaf uplink and a neighbour break the one schedule: refused, naming the flag */
	const struct {
		config_whatif_kind k;
		const char *text, *label;
	} refused[] = {{CONFIG_WHATIF_DEGRADE, "leaf:0:2", "--degrade leaf:0:2"},
		       {CONFIG_WHATIF_BACKGROUND, "1GiB:1ms:0-1", "--background 1GiB:1ms:0-1"}};
	for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
		config_whatif x = parse1(refused[i].k, refused[i].text);
		in.opt.whatif = &x;
		engine_result r;
		ck_assert(!engine_find("analytic")->run(&in, &r, &err));
		ck_assert_msg(strstr(err.msg, refused[i].label) && strstr(err.msg, "--engine simgrid"), "%s", err.msg);
	}
	workload_plan_finish(&plan);

	/* Hand derivation: one GPU, nothing to communicate, every op a GPU kernel in sequence
	 * on the main stream: a pace of 2 doubles the step exactly. */
	config_platform p1 = tu_platform(1, 1, 1);
	config_job j1 = tu_job(CONFIG_STRATEGY_ULYSSES, 1, 1, 1, 4096, 0);
	ck_assert_msg(workload_check(&m, &p1, &j1, &err) && workload_plan_make(&m, &p1, &j1, &plan, &err), "%s",
		      err.msg);
	engine_input in1 = {.model = &m, .platform = &p1, .job = &j1, .plan = &plan};
	const double b1 = analytic_step(&in1, &none);
	config_whatif twice = parse1(CONFIG_WHATIF_SLOW_GPU, "0:2");
	ck_assert_double_eq_tol(analytic_step(&in1, &twice), 2 * b1, 1e-12 * b1);
	workload_plan_finish(&plan);
}
END_TEST

/* --degrade of a NIC or a GPU port on the analytic engine: every link of its kind at the
 * slowest one's rate, NCCL's choices kept on the declared links. */
START_TEST(analytic_engine_degrades_every_link_of_a_kind_alike)
{
	/* Ulysses SP 4 inside each node, data parallelism over nodes 0 and 1 (node 2 unused) */
	static an_fixture f;
	an_fixture_init(&f, 3, 4, 0);
	engine_input in = f.in;
	const config_platform p = f.p;
	config_error err;
	const double base = analytic_step(&in, NULL);
	/* one NIC of node 1, every NIC of node 1, every NIC of node 0: the same step */
	config_whatif one = parse1(CONFIG_WHATIF_DEGRADE, "nic:1.2:4"), node1 = parse1(CONFIG_WHATIF_DEGRADE, "nic:1:4"),
		      node0 = parse1(CONFIG_WHATIF_DEGRADE, "nic:0:4");
	const double nic = analytic_step(&in, &one);
	ck_assert_double_gt(nic, base);
	ck_assert_double_eq(analytic_step(&in, &node1), nic);
	ck_assert_double_eq(analytic_step(&in, &node0), nic);
	/* a NIC of node 2, outside the job, changes nothing */
	config_whatif unused = parse1(CONFIG_WHATIF_DEGRADE, "nic:2:4");
	ck_assert_double_eq(analytic_step(&in, &unused), base);
	/* two what-ifs on one NIC multiply (2 x 2 = nic:...:4); on two NICs the slower rules */
	config_whatif twice = parse1(CONFIG_WHATIF_DEGRADE, "nic:1.2:2");
	ck_assert(config_whatif_add(&twice, CONFIG_WHATIF_DEGRADE, "nic:1.2:2", &err));
	ck_assert_double_eq(analytic_step(&in, &twice), nic);
	config_whatif two = parse1(CONFIG_WHATIF_DEGRADE, "nic:1.2:4");
	ck_assert(config_whatif_add(&two, CONFIG_WHATIF_DEGRADE, "nic:0.1:2", &err));
	ck_assert_double_eq(analytic_step(&in, &two), nic);
	/* Every NIC at a quarter rate with NCCL's view kept: the data-parallel reductions are
	 * 4 times the wire time they had; the SP all-to-alls stay inside the nodes. Against the
	 * platform declared that slow (NCCL's view moved with it) the step is the same wherever
	 * NCCL's choice does not move, as here (ring, Simple, at these sizes). */
	config_platform slow = p;
	slow.inter.nic_bandwidth /= 4;
	engine_input in_slow = in;
	in_slow.platform = &slow;
	ck_assert_double_eq_tol(analytic_step(&in_slow, NULL), nic, 1e-12 * nic);
	/* a GPU's port: the all-to-alls inside the nodes slow, every rank at that pace */
	config_whatif port = parse1(CONFIG_WHATIF_DEGRADE, "nvlink:0.3:2");
	const double nv = analytic_step(&in, &port);
	ck_assert_double_gt(nv, base);
	/* here NCCL's choice moves: a platform declared with half-rate ports (NCCL sees them)
	 * differs, and the same platform with NCCL's view of the declared ports is the step */
	config_platform slow_nv = p;
	slow_nv.intra.bandwidth /= 2;
	slow_nv.intra.pair_bandwidth /= 2;
	in_slow.platform = &slow_nv;
	ck_assert_double_ne(analytic_step(&in_slow, NULL), nv);
	slow_nv.nccl.tuner.set = true;
	slow_nv.nccl.tuner.intra_bw = p.intra.bandwidth;
	slow_nv.nccl.tuner.pair_bw = p.intra.pair_bandwidth;
	slow_nv.nccl.tuner.intra_lat = p.intra.latency;
	slow_nv.nccl.tuner.eff_intra = p.eff.intra_link;
	slow_nv.nccl.tuner.nic_bw = p.inter.nic_bandwidth;
	slow_nv.nccl.tuner.inter_lat = p.inter.latency;
	slow_nv.nccl.tuner.eff_inter = p.eff.inter_link;
	ck_assert_double_eq_tol(analytic_step(&in_slow, NULL), nv, 1e-12 * nv);
	workload_plan_finish(&f.plan);
}
END_TEST

/* --fail-node on the analytic engine: the job re-placed contiguously on the remaining
 * identical nodes behind one switch runs the same step; a slow node that failed slows
 * nothing, one the job moved onto paces every rank; on a fat-tree of several leaves the
 * re-placed job may straddle a leaf, which the closed form does not see: refused. */
START_TEST(analytic_engine_re_places_around_a_failed_node)
{
	static an_fixture f;
	an_fixture_init(&f, 3, 4, -1);
	engine_input in = f.in;
	config_platform *pp = &f.p;
	workload_plan plan = f.plan;
	config_error err;
	const double base = analytic_step(&in, NULL);
	config_whatif fail0 = parse1(CONFIG_WHATIF_FAIL_NODE, "0");
	ck_assert_double_eq(analytic_step(&in, &fail0), base);
	/* the job now on nodes 1 and 2: node 0 slowed changes nothing, node 2 slowed paces it */
	config_whatif dead_slow = parse1(CONFIG_WHATIF_FAIL_NODE, "0");
	ck_assert(config_whatif_add(&dead_slow, CONFIG_WHATIF_SLOW_NODE, "0:2", &err));
	ck_assert_double_eq(analytic_step(&in, &dead_slow), base);
	config_whatif moved = parse1(CONFIG_WHATIF_FAIL_NODE, "0");
	ck_assert(config_whatif_add(&moved, CONFIG_WHATIF_SLOW_NODE, "2:2", &err));
	config_whatif slow1 = parse1(CONFIG_WHATIF_SLOW_NODE, "1:2");
	ck_assert_double_eq(analytic_step(&in, &moved), analytic_step(&in, &slow1));
	ck_assert_double_gt(analytic_step(&in, &moved), base);
	/* without the failure node 2 holds none of the job: slowing it changes nothing */
	config_whatif idle = parse1(CONFIG_WHATIF_SLOW_NODE, "2:2");
	ck_assert_double_eq(analytic_step(&in, &idle), base);
	/* a NIC of node 2 matters once the job moved there */
	config_whatif nic2 = parse1(CONFIG_WHATIF_FAIL_NODE, "0");
	ck_assert(config_whatif_add(&nic2, CONFIG_WHATIF_DEGRADE, "nic:2:4", &err));
	ck_assert_double_gt(analytic_step(&in, &nic2), base);
	/* a fat-tree of two leaves of 2 nodes: refused */
	pp->inter.topology = CONFIG_TOPO_FAT_TREE;
	pp->inter.nodes_per_leaf = 2;
	in.opt.whatif = &fail0;
	engine_result r;
	ck_assert(!engine_find("analytic")->run(&in, &r, &err));
	ck_assert_msg(strstr(err.msg, "cannot run --fail-node 0 on 'hand'") && strstr(err.msg, "--engine simgrid"), "%s",
		      err.msg);
	workload_plan_finish(&plan);
}
END_TEST

#if SPSIM_HAVE_SIMGRID
/* ------------------------------------------------------------- simulation --- */

typedef struct sim_out {
	double step, compute, sp_comm, zero_comm, fwd, bwd;
} sim_out;

/* One run on an engine (engine_simgrid.run forks a process per simulation). */
static sim_out run_on(const char *engine, const config_platform *p, const config_job *job0, const config_whatif *w)
{
	config_model m = tu_model();
	config_job job = *job0;
	config_error err;
	ck_assert_msg(workload_check(&m, p, &job, &err), "%s", err.msg);
	workload_plan plan;
	ck_assert_msg(workload_plan_make(&m, p, &job, &plan, &err), "%s", err.msg);
	engine_input in = {.model = &m, .platform = p, .job = &job, .plan = &plan,
			   .opt = {.placement = ENGINE_PLACE_CONTIGUOUS, .whatif = w}};
	engine_result r;
	ck_assert_msg(engine_find(engine)->run(&in, &r, &err), "%s", err.msg);
	workload_plan_finish(&plan);
	return (sim_out){r.step_time, r.breakdown.compute, r.breakdown.sp_comm, r.breakdown.zero_comm, r.fwd_time,
			 r.bwd_time};
}

static sim_out run_sg(const config_platform *p, const config_job *job, const config_whatif *w)
{
	return run_on("simgrid", p, job, w);
}

/* The same job on the analytic engine (every rank at the slowest one's pace). */
static sim_out run_an(const config_platform *p, const config_job *job, const config_whatif *w)
{
	return run_on("analytic", p, job, w);
}

static void assert_same(sim_out a, sim_out b, const char *what)
{
	const double *x = &a.step, *y = &b.step;
	for (int k = 0; k < 6; k++)
		ck_assert_msg(fabs(x[k] - y[k]) <= 1e-9 * fabs(y[k]) + 1e-15, "%s: field %d = %.12g, want %.12g", what,
			      k, x[k], y[k]);
}

START_TEST(slow_gpu_adds_its_extra_compute_to_the_step)
{
	/* Ulysses SP 4 on 2 nodes x 4 GPUs with a NIC per GPU, ZeRO-1 without overlap: every
	 * compute op sits on the main stream between collectives that include rank 5 (the
	 * all-to-alls of its SP group {4..7}, the gradient reductions of its data-parallel
	 * group {1, 5}), and every rank computes the same ops. Rank 5 running F times slower
	 * arrives last at each of its collectives, its peers already waiting, and its flows
	 * meet the same rates as in the baseline: on NVSwitch a GPU's own port bounds an
	 * all-to-all, and with a NIC per GPU no other group's reduction shares a link with
	 * its own. Its timeline is the critical path:
	 *   step(F) = step(1) + (F - 1) x compute(1).
	 * (With one NIC per node the other groups' reductions finish before rank 5 arrives,
	 * its own then runs alone on the NIC, and the step grows by a little less.) */
	config_platform p = tu_platform(2, 4, 4);
	config_job job = tu_job(CONFIG_STRATEGY_ULYSSES, 8, 4, 1, 4096, 1);
	job.zero_overlap = 0;
	sim_out base = run_sg(&p, &job, NULL);
	config_whatif w = parse1(CONFIG_WHATIF_SLOW_GPU, "5:3");
	sim_out slow = run_sg(&p, &job, &w);
	ck_assert(base.compute > 0);
	ck_assert_close(slow.step, base.step + 2 * base.compute, 1e-9);
	/* a uniformly slow node in the same job: the same critical path */
	w = parse1(CONFIG_WHATIF_SLOW_NODE, "1:3");
	sim_out node = run_sg(&p, &job, &w);
	ck_assert_close(node.step, base.step + 2 * base.compute, 1e-9);
	/* The analytic engine runs every rank at rank 5's pace: with nothing overlapped the
	 * same critical path, step(1) + 2 x compute(1) of its own baseline, and within the
	 * engines' 5% agreement (bench/agreement) of SimGrid's step. */
	sim_out an = run_an(&p, &job, NULL);
	w = parse1(CONFIG_WHATIF_SLOW_GPU, "5:3");
	sim_out an_slow = run_an(&p, &job, &w);
	ck_assert_close(an_slow.step, an.step + 2 * an.compute, 1e-9);
	ck_assert_msg(fabs(an_slow.step / slow.step - 1) < 0.05, "analytic %.9g, simgrid %.9g", an_slow.step, slow.step);
	/* One NIC per node: the other group's reductions may finish before rank 5 arrives and
	 * leave it the NIC, so SimGrid's step is at most the analytic one here */
	config_platform p1 = tu_platform(2, 4, 1);
	sim_out sg1 = run_sg(&p1, &job, &w), an1 = run_an(&p1, &job, &w);
	ck_assert_msg(an1.step >= sg1.step * (1 - 1e-9) && an1.step < sg1.step * 1.05, "analytic %.9g, simgrid %.9g",
		      an1.step, sg1.step);
}
END_TEST

START_TEST(degraded_nic_changes_only_collectives_that_cross_it)
{
	/* Same job: the SP all-to-alls stay inside each node, the gradient reductions cross
	 * the NICs. A NIC of node 0 at a quarter rate leaves compute and SP time exactly as
	 * they were and slows the ZeRO collectives. A NIC of node 2, which the 8-rank job
	 * does not use, changes nothing. */
	config_platform p = tu_platform(3, 4, 1);
	config_job job = tu_job(CONFIG_STRATEGY_ULYSSES, 8, 4, 1, 4096, 1);
	job.zero_overlap = 0;
	sim_out base = run_sg(&p, &job, NULL);
	config_whatif w = parse1(CONFIG_WHATIF_DEGRADE, "nic:0:4");
	sim_out nic = run_sg(&p, &job, &w);
	ck_assert_close(nic.compute, base.compute, 1e-9);
	ck_assert_close(nic.sp_comm, base.sp_comm, 1e-9);
	ck_assert_msg(nic.zero_comm > 1.5 * base.zero_comm, "zero comm %.9g vs %.9g", nic.zero_comm, base.zero_comm);
	ck_assert(nic.step > base.step);
	/* the analytic engine, every NIC at the degraded one's rate, within the engines' 5% */
	sim_out an = run_an(&p, &job, &w);
	ck_assert_msg(fabs(an.step / nic.step - 1) < 0.05, "analytic %.9g, simgrid %.9g", an.step, nic.step);
	w = parse1(CONFIG_WHATIF_DEGRADE, "nic:2:4");
	assert_same(run_sg(&p, &job, &w), base, "unused NIC");
	/* a degraded NVLink port slows the SP all-to-alls of node 1 (they cross it), which
	 * every rank then waits for at the gradient reductions */
	w = parse1(CONFIG_WHATIF_DEGRADE, "nvlink:1.2:4");
	sim_out port = run_sg(&p, &job, &w);
	ck_assert_close(port.compute, base.compute, 1e-9);
	ck_assert(port.step > base.step);
	an = run_an(&p, &job, &w);
	ck_assert_msg(fabs(an.step / port.step - 1) < 0.05, "analytic %.9g, simgrid %.9g", an.step, port.step);
}
END_TEST

START_TEST(background_traffic_contends_only_where_it_shares_links)
{
	/* 4 nodes x 4 GPUs, one NIC each, single switch (unbounded); the job on nodes 0-1.
	 * A neighbour's ring all-reduce over nodes 2-3 shares no link with the job: nothing
	 * changes. One over nodes 0-1 (64 MB every 10 us: always on the wire) shares both
	 * NICs with the job's gradient reductions: compute and the in-node all-to-alls stay
	 * exactly as they were, the reductions slow down (max-min: the NIC is split between
	 * the job's ring edge and the neighbour's). */
	config_platform p = tu_platform(4, 4, 1);
	config_job job = tu_job(CONFIG_STRATEGY_ULYSSES, 8, 4, 1, 4096, 1);
	job.zero_overlap = 0;
	sim_out base = run_sg(&p, &job, NULL);
	config_whatif w = parse1(CONFIG_WHATIF_BACKGROUND, "64MB:10us:2-3");
	assert_same(run_sg(&p, &job, &w), base, "background elsewhere");
	w = parse1(CONFIG_WHATIF_BACKGROUND, "64MB:10us:0-1");
	sim_out bg = run_sg(&p, &job, &w);
	ck_assert_close(bg.compute, base.compute, 1e-9);
	ck_assert_close(bg.sp_comm, base.sp_comm, 1e-9);
	ck_assert_msg(bg.zero_comm > 1.3 * base.zero_comm, "zero comm %.9g vs %.9g", bg.zero_comm, base.zero_comm);
}
END_TEST

START_TEST(trace_shows_the_straggler)
{
	/* One node of 4 GPUs, rank 3 at 2.5x: in the trace, the compute kernels on GPU 3's
	 * main-stream thread add up to exactly 2.5 times those of GPU 0 (same ops, same
	 * shapes), and the step of the run is the trace's last event end. */
	config_platform p = tu_platform(1, 4, 1);
	config_model m = tu_model();
	config_job job = tu_job(CONFIG_STRATEGY_ULYSSES, 4, 4, 1, 4096, 1);
	config_error err;
	ck_assert(workload_check(&m, &p, &job, &err));
	workload_plan plan;
	ck_assert_msg(workload_plan_make(&m, &p, &job, &plan, &err), "%s", err.msg);
	char path[] = "/tmp/spsim-whatif-trace-XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	config_whatif w = parse1(CONFIG_WHATIF_SLOW_GPU, "3:2.5");
	engine_input in = {.model = &m, .platform = &p, .job = &job, .plan = &plan,
			   .opt = {.trace_path = path, .whatif = &w}};
	engine_result r;
	ck_assert_msg(engine_find("simgrid")->run(&in, &r, &err), "%s", err.msg);
	json_error_t je;
	json_t *root = json_load_file(path, 0, &je);
	ck_assert_msg(root != NULL, "%s", je.text);
	json_t *ev = json_is_array(root) ? root : json_object_get(root, "traceEvents");
	double busy[4] = {0}, end = 0;
	size_t i;
	json_t *e;
	json_array_foreach(ev, i, e)
	{
		const char *ph = json_string_value(json_object_get(e, "ph"));
		if (!ph || strcmp(ph, "X") != 0)
			continue;
		double ts = json_number_value(json_object_get(e, "ts")), dur = json_number_value(json_object_get(e, "dur"));
		if (ts + dur > end)
			end = ts + dur;
		const char *cat = json_string_value(json_object_get(e, "cat"));
		int tid = (int)json_integer_value(json_object_get(e, "tid"));
		if (cat && strcmp(cat, "compute") == 0 && tid % REPORT_TRACE_TIDS_PER_GPU == 0)
			busy[tid / REPORT_TRACE_TIDS_PER_GPU] += dur;
	}
	json_decref(root);
	unlink(path);
	workload_plan_finish(&plan);
	ck_assert(busy[0] > 0);
	ck_assert_close(busy[3], 2.5 * busy[0], 1e-9);
	ck_assert_close(busy[1], busy[0], 1e-9);
	ck_assert_close(end * 1e-6, r.step_time, 1e-6); /* the trace is in microseconds */
}
END_TEST

START_TEST(a_slower_gpu_group_is_a_slow_node)
{
	/* Node 1's GPUs at half the FLOP rate and half the HBM bandwidth (same SMs, same
	 * architecture): every compute op there is a roofline max of the two, so it takes
	 * exactly twice as long, as --slow-node 1:2 makes it on the uniform platform. */
	config_platform p = tu_platform(2, 4, 1);
	config_job job = tu_job(CONFIG_STRATEGY_ULYSSES, 8, 4, 1, 4096, 2);
	job.zero_overlap = 1;
	config_whatif w = parse1(CONFIG_WHATIF_SLOW_NODE, "1:2");
	sim_out want = run_sg(&p, &job, &w);
	config_platform mixed = p;
	mixed.n_node_groups = 2;
	mixed.node_groups[0] = (config_node_group){.nodes = 1, .nics = 1, .gpu = p.gpu};
	mixed.node_groups[1] = mixed.node_groups[0];
	mixed.node_groups[1].gpu.peak_flops /= 2;
	mixed.node_groups[1].gpu.hbm_bandwidth /= 2;
	assert_same(run_sg(&mixed, &job, NULL), want, "half-speed group");
	/* a second NIC on node 0 alone: the ring keeps one channel (the platform's NIC count),
	 * so nothing changes */
	mixed = p;
	mixed.n_node_groups = 2;
	mixed.node_groups[0] = (config_node_group){.nodes = 1, .nics = 2, .gpu = p.gpu};
	mixed.node_groups[1] = (config_node_group){.nodes = 1, .nics = 1, .gpu = p.gpu};
	assert_same(run_sg(&mixed, &job, NULL), run_sg(&p, &job, NULL), "extra NIC");
	/* the analytic engine refuses mixed nodes */
	config_model m = tu_model();
	workload_plan plan;
	config_error err;
	ck_assert(workload_plan_make(&m, &mixed, &job, &plan, &err));
	engine_input in = {.model = &m, .platform = &mixed, .job = &job, .plan = &plan};
	engine_result r;
	ck_assert(!engine_find("analytic")->run(&in, &r, &err));
	ck_assert_msg(strstr(err.msg, "mixes node groups"), "%s", err.msg);
	workload_plan_finish(&plan);
}
END_TEST

START_TEST(failed_node_on_a_uniform_fabric_changes_nothing)
{
	/* On a single switch every node is alike: the job re-placed off node 0 (onto nodes 1
	 * and 2) runs exactly as on nodes 0 and 1. */
	config_platform p = tu_platform(3, 4, 1);
	config_job job = tu_job(CONFIG_STRATEGY_BASP, 8, 8, 2, 4096, 2);
	job.zero_overlap = 1;
	sim_out base = run_sg(&p, &job, NULL);
	config_whatif w = parse1(CONFIG_WHATIF_FAIL_NODE, "0");
	assert_same(run_sg(&p, &job, &w), base, "fail node 0");
	w = parse1(CONFIG_WHATIF_FAIL_NODE, "1");
	assert_same(run_sg(&p, &job, &w), base, "fail node 1");
}
END_TEST

START_TEST(symmetric_what_ifs_equal_the_reduced_run)
{
	/* 4 nodes x 2 GPUs, 2 NICs, BASP groups of 2, ZeRO-2 overlapped: the baseline runs
	 * under the translation symmetry (one node simulated, test_simgrid proves it used).
	 * A what-if turns the reduction off; one that changes nothing (factor 1) must give
	 * the reduced run's times, and every node computing twice as slowly must give the
	 * reduced run on a platform whose peak FLOP rate and HBM bandwidth are both halved
	 * (every compute op is a roofline max of the two, so it takes exactly twice as long;
	 * nothing else reads them here). */
	config_platform p = tu_platform(4, 2, 2);
	config_job job = tu_job(CONFIG_STRATEGY_BASP, 8, 4, 2, 4096, 2);
	job.zero_overlap = 1;
	sim_out reduced = run_sg(&p, &job, NULL);
	config_whatif w = parse1(CONFIG_WHATIF_SLOW_NODE, "2:1");
	assert_same(run_sg(&p, &job, &w), reduced, "neutral what-if");
	config_whatif all = {0};
	config_error err;
	const char *nodes[4] = {"0:2", "1:2", "2:2", "3:2"};
	for (int i = 0; i < 4; i++)
		ck_assert(config_whatif_add(&all, CONFIG_WHATIF_SLOW_NODE, nodes[i], &err));
	config_platform half = p;
	half.gpu.peak_flops /= 2;
	half.gpu.hbm_bandwidth /= 2;
	sim_out want = run_sg(&half, &job, NULL);
	assert_same(run_sg(&p, &job, &all), want, "every node slowed alike");
	ck_assert(want.step > reduced.step);
}
END_TEST
#endif

/* --------------------------------------------------------------------- cli --- */

static int spsim_rc(char *err, size_t cap, const char *const *args)
{
	const char *exe = getenv("SPSIM_EXE");
	ck_assert_msg(exe != NULL, "SPSIM_EXE is not set");
	const char *argv[40] = {exe};
	int n = 1;
	for (; args[n - 1] && n < 39; n++)
		argv[n] = args[n - 1];
	argv[n] = NULL;
	char pe[] = "/tmp/spsim-whatif-err-XXXXXX";
	int fe = mkstemp(pe);
	ck_assert_int_ge(fe, 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		if (!freopen("/dev/null", "w", stdout))
			_exit(127);
		dup2(fe, 2);
		execv(exe, (char *const *)argv);
		_exit(127);
	}
	int status;
	waitpid(pid, &status, 0);
	lseek(fe, 0, SEEK_SET);
	ssize_t k = read(fe, err, cap - 1);
	err[k > 0 ? k : 0] = '\0';
	close(fe);
	unlink(pe);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

START_TEST(cli_refuses_bad_what_ifs_with_exit_2)
{
	char err[4096];
#define JOB "run", "--model", "llama-3.2-1b", "--platform", "dgx-h100", "--nodes", "2", "--seq-len", "4K", "--sp", "8"
	const char *a1[] = {JOB, "--engine", "analytic", "--background", "1GiB:1ms:0-1", NULL};
	ck_assert_int_eq(spsim_rc(err, sizeof err, a1), 2);
	ck_assert_msg(strstr(err, "analytic engine cannot run --background 1GiB:1ms:0-1"), "%s", err);
	const char *a2[] = {JOB, "--slow-gpu", "3", NULL};
	ck_assert_int_eq(spsim_rc(err, sizeof err, a2), 2);
	ck_assert_msg(strstr(err, "--slow-gpu '3': expected RANK:FACTOR"), "%s", err);
	const char *a3[] = {JOB, "--fail-node", "1", NULL};
	ck_assert_int_eq(spsim_rc(err, sizeof err, a3), 2);
	ck_assert_msg(strstr(err, "no longer fits: it needs 16 GPUs, and 1 of 2 nodes remain (8 GPUs)"), "%s", err);
	const char *a4[] = {JOB, "--degrade", "leaf:0:2", NULL};
	ck_assert_int_eq(spsim_rc(err, sizeof err, a4), 2);
	ck_assert_msg(strstr(err, "no leaf uplinks"), "%s", err);
	const char *a5[] = {JOB, "--slow-node", "2:2", NULL};
	ck_assert_int_eq(spsim_rc(err, sizeof err, a5), 2);
	ck_assert_msg(strstr(err, "node 2 does not exist"), "%s", err);
	const char *a6[] = {"max-seq", "--model", "llama-3.2-1b", "--platform", "dgx-h100", "--nodes", "2", "--sp", "8",
			    "--degrade", "nic:0:2", NULL};
	ck_assert_int_eq(spsim_rc(err, sizeof err, a6), 2);
	ck_assert_msg(strstr(err, "--degrade nic:0:2 changes step time, not memory"), "%s", err);
#undef JOB
}
END_TEST

#if SPSIM_HAVE_SIMGRID
/* run says which what-ifs it ran: a line under the job in the table (with how the analytic
 * engine took them) and a "what_if" list in JSON, the user's spelling, [] for none. */
START_TEST(run_reports_its_what_ifs)
{
	char cmd[1024], out[8192];
	const char *base = "--model llama-3.2-1b --platform dgx-h100 --nodes 2 --gpus 8 --seq-len 4K --sp 8 "
			   "--engine analytic";
	snprintf(cmd, sizeof cmd, "'%s' run %s --fail-node 1 --slow-gpu 3:2 2>&1", getenv("SPSIM_EXE"), base);
	FILE *f = popen(cmd, "r");
	ck_assert_ptr_nonnull(f);
	size_t n = fread(out, 1, sizeof out - 1, f);
	out[n] = '\0';
	ck_assert_int_eq(pclose(f), 0);
	ck_assert_msg(strstr(out, "what-if: --fail-node 1, --slow-gpu 3:2 (analytic: every rank at the slowest GPU's "
				  "or link's pace, the job re-placed on the remaining nodes)\n"),
		      "%s", out);
	snprintf(cmd, sizeof cmd, "'%s' run %s --slow-node 0:1.5 --format json 2>/dev/null", getenv("SPSIM_EXE"), base);
	f = popen(cmd, "r");
	json_error_t je;
	json_t *j = json_loadf(f, 0, &je);
	ck_assert_int_eq(pclose(f), 0);
	ck_assert_msg(j, "%s", je.text);
	json_t *w = json_object_get(j, "what_if");
	ck_assert_int_eq((int)json_array_size(w), 1);
	ck_assert_str_eq(json_string_value(json_array_get(w, 0)), "slow-node 0:1.5");
	json_decref(j);
	snprintf(cmd, sizeof cmd, "'%s' run %s --format json 2>/dev/null", getenv("SPSIM_EXE"), base);
	f = popen(cmd, "r");
	j = json_loadf(f, 0, &je);
	ck_assert_int_eq(pclose(f), 0);
	ck_assert_msg(j, "%s", je.text);
	ck_assert(json_is_array(json_object_get(j, "what_if")) && json_array_size(json_object_get(j, "what_if")) == 0);
	json_decref(j);
}
END_TEST

START_TEST(compare_shows_each_what_if_beside_the_baseline)
{
	/* llama-3.2-1b on one 8-GPU dgx-h100 node of two, SP 8: a column for the baseline
	 * and one per --what-if. Rank 3 at twice the compute time slows the step; a NIC of
	 * node 0 carries none of this one-node job's traffic, so that column equals the
	 * baseline; a bad spec exits 2 naming the form. */
	char cmd[1024], line[4096];
	snprintf(cmd, sizeof cmd,
		 "'%s' compare --model llama-3.2-1b --platform dgx-h100 --nodes 2 --gpus 8 --seq-len 4K --sp 8 "
		 "--what-if slow-gpu=3:2 --what-if degrade=nic:0:2 --format csv 2>/dev/null",
		 getenv("SPSIM_EXE"));
	FILE *f = popen(cmd, "r");
	ck_assert_ptr_nonnull(f);
	double step[3] = {0};
	char labels[3][64] = {{0}};
	int rows = -1, col_label = -1, col_step = -1;
	while (fgets(line, sizeof line, f)) {
		char *save = NULL;
		int col = 0;
		if (rows++ < 0) { /* header: find the columns by name */
			for (char *tok = strtok_r(line, ",\n", &save); tok; tok = strtok_r(NULL, ",\n", &save), col++) {
				if (strcmp(tok, "label") == 0)
					col_label = col;
				if (strcmp(tok, "step_time_s") == 0)
					col_step = col;
			}
			ck_assert(col_label >= 0 && col_step >= 0);
			continue;
		}
		ck_assert_int_lt(rows, 4);
		/* fields may be empty (strtok would skip them) */
		for (char *tok = line; tok; col++) {
			char *comma = strchr(tok, ',');
			if (comma)
				*comma = '\0';
			if (col == col_label)
				snprintf(labels[rows - 1], sizeof labels[0], "%.63s", tok);
			if (col == col_step)
				step[rows - 1] = atof(tok);
			tok = comma ? comma + 1 : NULL;
		}
	}
	ck_assert_int_eq(pclose(f), 0);
	ck_assert_int_eq(rows, 3);
	ck_assert_str_eq(labels[0], "ulysses");
	ck_assert_str_eq(labels[1], "slow-gpu=3:2");
	ck_assert_str_eq(labels[2], "degrade=nic:0:2");
	ck_assert(step[1] > step[0]);
	ck_assert_close(step[2], step[0], 1e-9);
	const char *bad[] = {"compare", "--model", "llama-3.2-1b", "--platform", "dgx-h100", "--seq-len", "4K",
			     "--what-if", "slow-gpu:3:2", NULL};
	ck_assert_int_eq(spsim_rc(line, sizeof line, bad), 2);
	ck_assert_msg(strstr(line, "is not KIND=VALUE"), "%s", line);
}
END_TEST
#endif

int main(void)
{
	Suite *s = suite_create("whatif");
	TCase *tc = tcase_create("whatif");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, flags_parse_and_print_back);
	tcase_add_test(tc, bad_flags_name_the_flag_and_the_form);
	tcase_add_test(tc, checks_against_the_platform);
	tcase_add_test(tc, what_if_spec_refuses_an_empty_item);
	tcase_add_test(tc, factors_compose);
	tcase_add_test(tc, job_file_what_if_key);
	tcase_add_test(tc, failed_node_replaces_by_the_policy);
	tcase_add_test(tc, node_groups_load_and_fail_at_their_line);
	tcase_add_test(tc, analytic_engine_runs_compute_what_ifs_at_the_slowest_pace);
	tcase_add_test(tc, analytic_engine_degrades_every_link_of_a_kind_alike);
	tcase_add_test(tc, analytic_engine_re_places_around_a_failed_node);
#if SPSIM_HAVE_SIMGRID
	tcase_add_test(tc, slow_gpu_adds_its_extra_compute_to_the_step);
	tcase_add_test(tc, degraded_nic_changes_only_collectives_that_cross_it);
	tcase_add_test(tc, failed_node_on_a_uniform_fabric_changes_nothing);
	tcase_add_test(tc, trace_shows_the_straggler);
	tcase_add_test(tc, a_slower_gpu_group_is_a_slow_node);
	tcase_add_test(tc, background_traffic_contends_only_where_it_shares_links);
	tcase_add_test(tc, symmetric_what_ifs_equal_the_reduced_run);
#endif
	tcase_add_test(tc, cli_refuses_bad_what_ifs_with_exit_2);
#if SPSIM_HAVE_SIMGRID
	tcase_add_test(tc, compare_shows_each_what_if_beside_the_baseline);
	tcase_add_test(tc, run_reports_its_what_ifs);
#endif
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
