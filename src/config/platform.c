/* Platform definitions (platforms/<name>.yaml): GPUs, intra-node fabric, network,
 * achievable-efficiency defaults. */
#include "config/config.h"
#include "config/ranges.h"
#include "config/yamltree.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

double config_platform_intra_bw(const config_platform *p)
{
	return p->intra.bandwidth * p->eff.intra_link;
}

double config_platform_intra_pair_bw(const config_platform *p)
{
	return p->intra.pair_bandwidth * p->eff.intra_link;
}

double config_platform_nic_bw(const config_platform *p)
{
	return p->inter.nic_bandwidth * p->eff.inter_link;
}

/* GPU memory is binary: an "80GB" H100 has 80 GiB (NVIDIA's datasheets write GB for
 * GiB). A decimal unit is taken literally (80GB = 74.5 GiB), which is almost never what
 * was meant, so it is said on stderr, pointing at the value. */
static void warn_decimal_memory(const yt_node *n, double bytes)
{
	size_t k = n && n->kind == YT_SCALAR ? strlen(n->value) : 0;
	while (k > 0 && (n->value[k - 1] == ' ' || n->value[k - 1] == '\t'))
		k--;
	if (k < 3 || n->value[k - 1] != 'B' || strchr("kKMGT", n->value[k - 2]) == NULL)
		return;
	fprintf(stderr, "spsim: %s:%d:%d: warning: memory '%s' is a decimal size (%.4g GiB); GPU memory is sold in "
			"binary units (an 80GB GPU has 80 GiB): write %.*siB if that is meant\n",
		n->file, n->line, n->col, n->value, bytes / (1024.0 * 1024 * 1024), (int)(k - 1), n->value);
}

/* SM counts and architectures of known GPUs, matched by the start of gpu.name
 * (case-insensitive). Sources: NVIDIA A100 Tensor Core GPU Architecture whitepaper (108 SMs
 * enabled on A100, SXM4 and PCIe alike); NVIDIA H100 Tensor Core GPU Architecture
 * whitepaper (H100 SXM5: 132 SMs, H100 PCIe: 114 SMs); H200 is the same GH100 with 132 SMs
 * and HBM3e (NVIDIA H200 datasheet: "same Hopper architecture" as H100 SXM). Order
 * matters: the PCIe H100 before the generic H100 prefix. */
static const struct gpu_known {
	const char *prefix;
	int sms;
	config_gpu_arch arch;
} gpu_known[] = {
	{"A100", 108, CONFIG_ARCH_AMPERE},
	{"H100-PCIE", 114, CONFIG_ARCH_HOPPER},
	{"H100 PCIE", 114, CONFIG_ARCH_HOPPER},
	{"H100", 132, CONFIG_ARCH_HOPPER},
	{"H200", 132, CONFIG_ARCH_HOPPER},
};

static const struct gpu_known *gpu_lookup(const char *name)
{
	for (size_t i = 0; i < sizeof gpu_known / sizeof gpu_known[0]; i++)
		if (strncasecmp(name, gpu_known[i].prefix, strlen(gpu_known[i].prefix)) == 0)
			return &gpu_known[i];
	return NULL;
}

bool config_read_gpu(const yt_node *t, config_gpu *gpu, config_error *err)
{
	static const char *const keys[] = {"name", "peak_bf16", "memory", "hbm_bandwidth", "sms", "arch", NULL};
	const yt_node *g;
	if (!yt_map(t, "gpu", true, &g, err) || !yt_check_keys(g, keys, err) ||
	    !yt_string(g, "name", true, gpu->name, sizeof gpu->name, NULL, err) ||
	    !yt_range(g, CONFIG_R_PEAK_FLOPS, true, &gpu->peak_flops, NULL, err) ||
	    !yt_range(g, CONFIG_R_GPU_MEMORY, true, &gpu->memory_bytes, NULL, err) ||
	    !yt_range(g, CONFIG_R_HBM_BANDWIDTH, true, &gpu->hbm_bandwidth, NULL, err))
		return false;
	/* A GPU spsim knows gets its SM count and architecture by name; any other must give both. */
	const struct gpu_known *k = gpu_lookup(gpu->name);
	int arch = k ? (int)k->arch : 0;
	if (k)
		gpu->sms = k->sms;
	long sms = gpu->sms;
	bool has_sms = false, has_arch = false;
	if (!yt_range_long(g, CONFIG_R_SMS, false, &sms, &has_sms, err) ||
	    !yt_enum(g, "arch", false, config_gpu_arch_names, 2, &arch, &has_arch, err))
		return false;
	if (!k && (!has_sms || !has_arch))
		return yt_fail(err, g,
			       "gpu '%s' is not one spsim knows (A100, H100, H200): give its 'sms' (streaming "
			       "multiprocessors, from the datasheet) and 'arch' (ampere or hopper)",
			       gpu->name);
	gpu->sms = (int)sms;
	gpu->arch = (config_gpu_arch)arch;
	warn_decimal_memory(yt_find(g, "memory"), gpu->memory_bytes);
	return true;
}

static bool read_intra(const yt_node *t, config_platform *p, config_error *err)
{
	static const char *const keys[] = {"fabric", "bandwidth", "pair_bandwidth", "latency", NULL};
	const yt_node *in;
	int fabric = 0;
	bool has_bw = false, has_pair = false;
	if (!yt_map(t, "intra_node", true, &in, err) || !yt_check_keys(in, keys, err) ||
	    !yt_enum(in, "fabric", true, config_fabric_names, 3, &fabric, NULL, err) ||
	    !yt_range(in, CONFIG_R_INTRA_LATENCY, true, &p->intra.latency, NULL, err))
		return false;
	p->intra.fabric = (config_fabric)fabric;
	bool mesh = p->intra.fabric == CONFIG_FABRIC_NVLINK_MESH;
	/* A mesh is described by its pair links; a switch or PCIe by the per-GPU link. */
	if (!yt_range(in, CONFIG_R_PAIR_BANDWIDTH, mesh, &p->intra.pair_bandwidth, &has_pair,
			 err) ||
	    !yt_range(in, CONFIG_R_INTRA_BANDWIDTH, !mesh, &p->intra.bandwidth, &has_bw, err))
		return false;
	if (!mesh && has_pair)
		return yt_fail(err, yt_find(in, "pair_bandwidth"),
			       "'pair_bandwidth' applies only to fabric nvlink-mesh, expected 'bandwidth' alone "
			       "for fabric %s", config_fabric_names[fabric]);
	if (mesh) {
		/* Per GPU, the mesh offers one pair link to each of the other GPUs of the node. */
		if (!has_bw)
			p->intra.bandwidth =
				p->intra.pair_bandwidth * (p->gpus_per_node > 1 ? p->gpus_per_node - 1 : 1);
	} else {
		/* Through a switch one pair can use a GPU's whole link. */
		p->intra.pair_bandwidth = p->intra.bandwidth;
	}
	return true;
}

static bool read_inter(const yt_node *t, config_platform *p, config_error *err)
{
	/* nodes_per_leaf and oversubscription last: only a fat-tree takes them (below) */
	static const char *const keys[] = {"nics",           "nic_bandwidth",    "latency", "topology",
					   "message_latency", "nodes_per_leaf", "oversubscription", NULL};
	const yt_node *in;
	int topo = 0;
	if (!yt_map(t, "inter_node", true, &in, err) || !yt_check_keys(in, keys, err) ||
	    !yt_range_int(in, CONFIG_R_NICS, true, &p->inter.nics_per_node, NULL, err) ||
	    !yt_range(in, CONFIG_R_NIC_BANDWIDTH, true, &p->inter.nic_bandwidth, NULL, err) ||
	    !yt_range(in, CONFIG_R_INTER_LATENCY, true, &p->inter.latency, NULL, err) ||
	    !yt_enum(in, "topology", true, config_topology_names, 3, &topo, NULL, err))
		return false;
	p->inter.message_latency = 0;
	if (!yt_range(in, CONFIG_R_MESSAGE_LATENCY, false, &p->inter.message_latency, NULL, err))
		return false;
	p->inter.topology = (config_topology)topo;
	bool fat = p->inter.topology == CONFIG_TOPO_FAT_TREE;
	/* Only a fat-tree has leaves; elsewhere nodes_per_leaf stays 0 and oversubscription 1,
	 * and either key is an error rather than a setting silently ignored. */
	p->inter.nodes_per_leaf = 0;
	p->inter.oversubscription = 1.0;
	for (const char *const *k = keys + 5; !fat && *k; k++)
		if (yt_find(in, *k))
			return yt_fail(err, yt_find(in, *k),
				       "'%s' applies only to topology fat-tree (the one with leaf switches), "
				       "not to topology %s; remove it or use topology: fat-tree",
				       *k, config_topology_names[topo]);
	return yt_range_int(in, CONFIG_R_NODES_PER_LEAF, fat, &p->inter.nodes_per_leaf, NULL, err) &&
	       yt_range(in, CONFIG_R_OVERSUBSCRIPTION, fat, &p->inter.oversubscription, NULL, err);
}

static bool read_eff(const yt_node *t, config_platform *p, config_error *err)
{
	static const char *const keys[] = {"gemm", "attention", "memory", "intra_link", "inter_link", NULL};
	const yt_node *e;
	/* attention is optional: absent, attention follows the kernel curves (engine/compute.c). */
	p->eff.attention = 0;
	return yt_map(t, "efficiency", true, &e, err) && yt_check_keys(e, keys, err) &&
	       yt_range(e, CONFIG_R_EFF_GEMM, true, &p->eff.gemm, NULL, err) &&
	       yt_range(e, CONFIG_R_EFF_ATTENTION, false, &p->eff.attention, NULL, err) &&
	       yt_range(e, CONFIG_R_EFF_MEMORY, true, &p->eff.memory, NULL, err) &&
	       yt_range(e, CONFIG_R_EFF_INTRA_LINK, true, &p->eff.intra_link, NULL, err) &&
	       yt_range(e, CONFIG_R_EFF_INTER_LINK, true, &p->eff.inter_link, NULL, err);
}

/* Optional `nccl:` section. Defaults: the compute capability of the GPU's architecture
 * (`gpu.arch`: Ampere 8.0, Hopper 9.0; CUDA C Programming Guide, compute capabilities
 * table), channels derived from
 * the fabric (engine/nccl.c, nccl_channels), no NVLS (NCCL enables it only on NVSwitch
 * systems whose switches support NVLink SHARP, src/transport/nvls.cc ncclNvlsInit). */
const char *const config_nccl_release_names[CONFIG_NCCL_RELEASES] = {"2.19", "2.28"};
const char *const config_nccl_processes_names[CONFIG_NCCL_PROCS] = {"per_gpu", "per_node"};

static bool read_nccl(const yt_node *t, config_platform *p, config_error *err)
{
	static const char *const keys[] = {"compute_capability", "channels", "nvls", "version", "processes", NULL};
	long cc = p->gpu.arch == CONFIG_ARCH_HOPPER ? 90 : 80, ch = 0;
	p->nccl.compute_capability = (int)cc;
	p->nccl.channels = 0;
	p->nccl.nvls = false;
	p->nccl.release = CONFIG_NCCL_2_19;
	p->nccl.processes = CONFIG_NCCL_PROCS_PER_GPU;
	p->nccl.force_algo = p->nccl.force_proto = 0;
	const yt_node *n;
	bool found = false;
	if (!yt_map(t, "nccl", false, &n, err))
		return false;
	if (!n)
		return true;
	if (!yt_check_keys(n, keys, err) || !yt_range_long(n, CONFIG_R_NCCL_CC, false, &cc, &found, err) ||
	    !yt_range_long(n, CONFIG_R_NCCL_CHANNELS, false, &ch, NULL, err) || !yt_bool(n, "nvls", false, &p->nccl.nvls, NULL, err) ||
	    !yt_enum(n, "version", false, config_nccl_release_names, CONFIG_NCCL_RELEASES, &p->nccl.release, NULL, err) ||
	    !yt_enum(n, "processes", false, config_nccl_processes_names, CONFIG_NCCL_PROCS, &p->nccl.processes, NULL, err))
		return false;
	if (found && cc != 70 && cc != 80 && cc != 90 && cc != 100)
		return yt_fail(err, yt_find(n, "compute_capability"),
			       "'compute_capability' %ld is not a GPU generation NCCL tunes for, expected 70, 80, 90 or 100",
			       cc);
	if (p->nccl.nvls && (p->intra.fabric != CONFIG_FABRIC_NVSWITCH || cc < 90))
		return yt_fail(err, yt_find(n, "nvls"),
			       "'nvls' needs an nvswitch fabric and compute_capability 90 or more (NVLink SHARP "
			       "is a third-generation NVSwitch feature), expected nvls: false here");
	p->nccl.compute_capability = (int)cc;
	p->nccl.channels = (int)ch;
	return true;
}

bool config_attn_kernel_has_curve(config_attn_kernel k, config_gpu_arch arch)
{
	/* engine/compute.c: every family on Hopper (arXiv 2407.08608), FlashAttention-2 on Ampere
	 * (arXiv 2307.08691); the Triton kernel is timed on FlashAttention-2's non-causal curve
	 * of the same GPU */
	return arch == CONFIG_ARCH_HOPPER || k == CONFIG_ATTN_FA2 || k == CONFIG_ATTN_TRITON;
}

const char *config_attn_kernel_unusable(const config_platform *p, config_attn_kernel k)
{
	/* FlashAttention-3 uses Hopper's WGMMA and TMA (arXiv 2407.08608 section 3): no Ampere build. */
	if (k == CONFIG_ATTN_FA3 && p->gpu.arch != CONFIG_ARCH_HOPPER)
		return "runs only on hopper GPUs";
	if (config_attn_kernel_has_curve(k, p->gpu.arch) || p->eff.attention > 0)
		return NULL;
	for (int i = 0; i < p->n_attn_points; i++)
		if (p->attn_points[i].kernel == (int)k)
			return NULL;
	return "has no published efficiency curve on this GPU architecture (give measured attention_points for "
	       "it in a calibration file)";
}

/* attention_kernel: the family the platform's stack runs; FlashAttention-2 when absent (the
 * kernel Hugging Face's flash_attention_2 and DeepSpeed's examples load). */
static bool read_attn_kernel(const yt_node *t, config_platform *p, config_error *err)
{
	int k = CONFIG_ATTN_FA2;
	bool found = false;
	if (!yt_enum(t, "attention_kernel", false, config_attn_kernel_names, CONFIG_ATTN_KERNELS, &k, &found, err))
		return false;
	const char *why = config_attn_kernel_unusable(p, (config_attn_kernel)k);
	if (why)
		return yt_fail(err, yt_find(t, "attention_kernel"),
			       "'attention_kernel' %s %s; this platform's gpu is %s (%s), expected %s",
			       config_attn_kernel_names[k], why, p->gpu.name, config_gpu_arch_names[p->gpu.arch],
			       p->gpu.arch == CONFIG_ARCH_HOPPER ? "flash-attn-2, flash-attn-3, cudnn or flash-attn-triton"
								       : "flash-attn-2 or flash-attn-triton");
	p->attention_kernel = (config_attn_kernel)k;
	return true;
}

/* host_link: {bandwidth, latency, memory[, memory_bandwidth]}: the GPU's link to host
 * memory (PCIe or NVLink-C2C) and the host memory of one node; the first three required
 * when the section is there; memory_bandwidth (the node's DRAM bandwidth, which the CPU
 * optimizer step needs) optional. Absent: no host link (offload is refused). */
static bool read_host_link(const yt_node *t, config_platform *p, config_error *err)
{
	static const char *const keys[] = {"bandwidth", "latency", "memory", "memory_bandwidth", NULL};
	const yt_node *h;
	bool found = false;
	if (!yt_map(t, "host_link", false, &h, err))
		return false;
	found = h != NULL;
	if (!found)
		return true;
	return yt_check_keys(h, keys, err) && yt_range(h, CONFIG_R_HOST_BANDWIDTH, true, &p->host.bandwidth, NULL, err) &&
	       yt_range(h, CONFIG_R_HOST_LATENCY, true, &p->host.latency, NULL, err) &&
	       yt_range(h, CONFIG_R_HOST_MEMORY, true, &p->host.memory, NULL, err) &&
	       yt_range(h, CONFIG_R_HOST_MEMORY_BW, false, &p->host.memory_bandwidth, NULL, err);
}

static bool platform_read(const yt_doc *doc, config_platform *p, config_error *err)
{
	static const char *const keys[] = {"name",       "nodes",      "gpus_per_node", "gpu",
					   "intra_node", "inter_node", "efficiency",    "collective_overhead",
					   "attention_kernel", "memory_reserve", "nccl", "node_groups", "host_link", NULL};
	const yt_node *t;
	return yt_top(doc, "platform", &t, err) && yt_check_keys(t, keys, err) &&
	       yt_string(t, "name", true, p->name, sizeof p->name, NULL, err) &&
	       yt_range_int(t, CONFIG_R_NODES, true, &p->nodes, NULL, err) &&
	       yt_range_int(t, CONFIG_R_GPUS_PER_NODE, true, &p->gpus_per_node, NULL, err) && config_read_gpu(t, &p->gpu, err) &&
	       read_intra(t, p, err) && read_inter(t, p, err) && read_eff(t, p, err) &&
	       read_attn_kernel(t, p, err) &&
	       yt_range(t, CONFIG_R_COLL_OVERHEAD, false, &p->coll_overhead, NULL, err) &&
	       yt_size_or_zero(t, "memory_reserve", &p->memory_reserve, &p->has_memory_reserve, err) &&
	       read_nccl(t, p, err) && config_read_node_groups(t, p, err) && read_host_link(t, p, err);
}

bool config_load_platform(const char *name_or_path, config_platform *out, config_error *err)
{
	config_platform p;
	memset(&p, 0, sizeof p);
	if (!config_find_data("platforms", name_or_path, p.path, sizeof p.path, err))
		return false;
	yt_doc *doc;
	if (!yt_load(p.path, &doc, err))
		return false;
	bool ok = platform_read(doc, &p, err);
	yt_free(doc);
	if (ok)
		*out = p;
	return ok;
}

bool config_platform_check(const config_platform *p, config_error *err)
{
	bool fat = p->inter.topology == CONFIG_TOPO_FAT_TREE;
	const config_range_value v[] = {
		{CONFIG_R_NODES, p->nodes},
		{CONFIG_R_GPUS_PER_NODE, p->gpus_per_node},
		{CONFIG_R_SMS, p->gpu.sms > 0 ? p->gpu.sms : 1},
		{CONFIG_R_PEAK_FLOPS, p->gpu.peak_flops},
		{CONFIG_R_GPU_MEMORY, p->gpu.memory_bytes},
		{CONFIG_R_HBM_BANDWIDTH, p->gpu.hbm_bandwidth},
		{CONFIG_R_INTRA_BANDWIDTH, p->intra.bandwidth},
		{CONFIG_R_PAIR_BANDWIDTH, p->intra.pair_bandwidth},
		{CONFIG_R_INTRA_LATENCY, p->intra.latency},
		{CONFIG_R_NICS, p->inter.nics_per_node},
		{CONFIG_R_NIC_BANDWIDTH, p->inter.nic_bandwidth},
		{CONFIG_R_INTER_LATENCY, p->inter.latency},
		{CONFIG_R_MESSAGE_LATENCY, p->inter.message_latency},
		{CONFIG_R_NODES_PER_LEAF, fat ? p->inter.nodes_per_leaf : 1},
		{CONFIG_R_OVERSUBSCRIPTION, p->inter.oversubscription},
		{CONFIG_R_COLL_OVERHEAD, p->coll_overhead},
		{CONFIG_R_EFF_GEMM, p->eff.gemm},
		{CONFIG_R_EFF_ATTENTION, p->eff.attention > 0 ? p->eff.attention : 1}, /* 0: by kernel curves */
		{CONFIG_R_EFF_MEMORY, p->eff.memory},
		{CONFIG_R_EFF_INTRA_LINK, p->eff.intra_link},
		{CONFIG_R_EFF_INTER_LINK, p->eff.inter_link},
	};
	if (!config_range_check_all("platform", p->name, v, sizeof v / sizeof v[0], err))
		return false;
	/* the host link: absent (bandwidth 0) or every value in range */
	const config_range_value host[] = {
		{CONFIG_R_HOST_BANDWIDTH, p->host.bandwidth},
		{CONFIG_R_HOST_LATENCY, p->host.latency},
		{CONFIG_R_HOST_MEMORY, p->host.memory},
	};
	if (p->host.bandwidth != 0 && !config_range_check_all("platform", p->name, host, 3, err))
		return false;
	int gpus = config_platform_gpus(p);
	if (gpus < 0 || !config_range_ok(CONFIG_R_GPUS, gpus))
		return config_fail(err, "platform '%s': %d nodes x %d GPUs per node is more than %.0f GPUs; lower the node count",
				   p->name, p->nodes, p->gpus_per_node, config_range_get(CONFIG_R_GPUS)->hi);
	return true;
}
