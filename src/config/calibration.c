/* Calibration files: measured latencies, bandwidths and compute efficiencies that
 * override a platform's datasheet numbers (format in config.h). */
#include "config/config.h"
#include "config/yamltree.h"

#include <string.h>
#include <strings.h>

/* The `protocols:` keys, in config_platform.nccl.proto_cal's order: LL, LL128, Simple,
 * then the (algorithm, protocol) pairs (config_cal_entry). */
const char *const config_proto_keys[CONFIG_CAL_ENTRIES] = {
	"ll", "ll128", "simple", "tree_ll", "tree_ll128", "tree_simple", "ring_ll", "ring_ll128", "ring_simple", "nvls"};

int config_cal_entry(int algo, int proto)
{
	if (proto < 0 || proto >= CONFIG_NCCL_PROTOS || algo < 0 || algo > 2)
		return -1;
	if (algo == 2) /* NVLS runs Simple only (tuning.cc: NVLS's LL and LL128 disabled) */
		return proto == CONFIG_NCCL_PROTOS - 1 ? CONFIG_CAL_ENTRIES - 1 : -1;
	return CONFIG_NCCL_PROTOS * (1 + algo) + proto;
}

/* An empty section sets nothing: said, rather than read as a calibration of nothing. */
static bool not_empty(const yt_node *m, const char *expected, config_error *err)
{
	return !m || m->n > 0 || yt_fail(err, m, "'%s' is empty, expected %s", m->name, expected);
}

static bool read_link(const yt_node *t, const char *key, bool *has_lat, double *lat, bool *has_bw, double *bw,
		      config_proto_link *proto, config_error *err)
{
	static const char *const keys[] = {"latency", "bandwidth", "protocols", NULL};
	static const char *const link_keys[] = {"latency", "bandwidth", NULL};
	const yt_node *l, *ps;
	if (!yt_map(t, key, false, &l, err))
		return false;
	if (!l)
		return true;
	if (!not_empty(l, "at least one of latency, bandwidth, protocols", err) || !yt_check_keys(l, keys, err) ||
	    !yt_range(l, CONFIG_R_CAL_LATENCY, false, lat, has_lat, err) ||
	    !yt_range(l, CONFIG_R_CAL_BANDWIDTH, false, bw, has_bw, err) || !yt_map(l, "protocols", false, &ps, err))
		return false;
	if (!ps)
		return true;
	const char *proto_keys[CONFIG_CAL_ENTRIES + 1];
	for (int i = 0; i < CONFIG_CAL_ENTRIES; i++)
		proto_keys[i] = config_proto_keys[i];
	proto_keys[CONFIG_CAL_ENTRIES] = NULL;
	if (!not_empty(ps, "at least one of ll, ll128, simple or an (algorithm, protocol) entry such as ring_simple", err) ||
	    !yt_check_keys(ps, proto_keys, err))
		return false;
	for (int i = 0; i < CONFIG_CAL_ENTRIES; i++) {
		const yt_node *e;
		config_proto_link *pl = &proto[i];
		if (!yt_map(ps, config_proto_keys[i], false, &e, err))
			return false;
		if (e && (!not_empty(e, "at least one of latency, bandwidth", err) || !yt_check_keys(e, link_keys, err) ||
			  !yt_range(e, CONFIG_R_CAL_LATENCY, false, &pl->latency, &pl->has_latency, err) ||
			  !yt_range(e, CONFIG_R_CAL_BANDWIDTH, false, &pl->bandwidth, &pl->has_bw, err)))
			return false;
	}
	return true;
}

/* attention_points: a sequence of mappings (format in config.h). Validate mode writes
 * every key; a hand-written file needs kernel, seq, head_dim, direction and tflops. */
static bool read_points(const yt_node *t, config_calibration *c, config_error *err)
{
	static const char *const keys[] = {"kernel", "seq",    "head_dim", "heads", "kv_heads", "direction",
					   "causal", "tflops", "p10",	   "p90",   NULL};
	static const char *const dirs[] = {"fwd", "bwd"};
	const yt_node *seq = yt_find(t, "attention_points");
	if (!seq)
		return true;
	if (seq->kind != YT_SEQ || seq->n == 0)
		return yt_fail(err, seq, "'attention_points' must be a non-empty list of {kernel, seq, head_dim, "
					 "direction, tflops} mappings (optional: heads, kv_heads, causal, p10, p90)");
	if (seq->n > CONFIG_MAX_ATTENTION_POINTS)
		return yt_fail(err, seq, "'attention_points' holds %zu points, at most %d are read", seq->n,
			       CONFIG_MAX_ATTENTION_POINTS);
	for (size_t i = 0; i < seq->n; i++) {
		const yt_node *m = seq->items[i];
		config_attention_point *p = &c->attention_points[i];
		int dir = 0;
		bool causal = true, has_p10 = false, has_p90 = false;
		char text[CONFIG_NAME_MAX];
		if (m->kind != YT_MAP)
			return yt_fail(err, m, "attention point %zu must be a mapping {kernel, seq, head_dim, direction, "
					       "tflops}", i + 1);
		if (!yt_check_keys(m, keys, err) || !yt_string(m, "kernel", true, p->kernel, sizeof p->kernel, NULL, err) ||
		    !yt_string(m, "seq", true, text, sizeof text, NULL, err) ||
		    !yt_range_int(m, CONFIG_R_HEAD_DIM, true, &p->head_dim, NULL, err) ||
		    !yt_range_int(m, CONFIG_R_HEADS, false, &p->heads, NULL, err) ||
		    !yt_range_int(m, CONFIG_R_KV_HEADS, false, &p->kv_heads, NULL, err) ||
		    !yt_enum(m, "direction", true, dirs, 2, &dir, NULL, err) ||
		    !yt_bool(m, "causal", false, &causal, NULL, err) ||
		    !yt_range(m, CONFIG_R_POINT_TFLOPS, true, &p->tflops, NULL, err) ||
		    !yt_range(m, CONFIG_R_POINT_P10, false, &p->p10, &has_p10, err) ||
		    !yt_range(m, CONFIG_R_POINT_P90, false, &p->p90, &has_p90, err))
			return false;
		if (!config_parse_tokens(text, &p->seq))
			return yt_fail(err, yt_find(m, "seq"),
				       "'seq' must be a positive token count such as 8192 or 8K, got '%s'", text);
		p->direction = (config_direction)dir;
		p->causal = causal;
		if (!has_p10)
			p->p10 = p->tflops;
		if (!has_p90)
			p->p90 = p->tflops;
		if (p->heads > 0 && p->kv_heads > 0 && p->heads % p->kv_heads)
			return yt_fail(err, m, "attention point %zu: %d query heads are not a multiple of %d kv heads", i + 1,
				       p->heads, p->kv_heads);
		if (!(p->p10 <= p->tflops && p->tflops <= p->p90))
			return yt_fail(err, m, "attention point %zu: want p10 <= tflops <= p90, got %g, %g, %g", i + 1,
				       p->p10, p->tflops, p->p90);
		for (size_t j = 0; j < i; j++) {
			const config_attention_point *q = &c->attention_points[j];
			if (!strcmp(q->kernel, p->kernel) && q->seq == p->seq && q->head_dim == p->head_dim &&
			    q->heads == p->heads && q->kv_heads == p->kv_heads && q->direction == p->direction &&
			    q->causal == p->causal)
				return yt_fail(err, m,
					       "attention point %zu repeats point %zu (same kernel, seq, head_dim, heads, "
					       "kv_heads, direction and causal); give each shape once",
					       i + 1, j + 1);
		}
	}
	c->n_attention_points = (int)seq->n;
	return true;
}

static bool calibration_read(const yt_doc *doc, config_calibration *c, config_error *err)
{
	static const char *const keys[] = {"source",	 "platform",   "intra_node", "inter_node",
					   "efficiency", "collective_overhead", "collectives", "gpu", "attention_kernel",
					   "attention_points", NULL};
	static const char *const coll_modes[] = {"nccl", "links"};
	static const char *const eff_keys[] = {"gemm", "attention", "memory", NULL};
	const yt_node *t, *e;
	if (!yt_top(doc, "calibration", &t, err) || !yt_check_keys(t, keys, err) ||
	    !yt_string(t, "source", false, c->source, sizeof c->source, NULL, err) ||
	    !yt_string(t, "platform", false, c->platform, sizeof c->platform, NULL, err) ||
	    !yt_string(t, "gpu", false, c->gpu, sizeof c->gpu, NULL, err) ||
	    !yt_string(t, "attention_kernel", false, c->attention_kernel, sizeof c->attention_kernel, NULL, err) ||
	    !read_points(t, c, err) ||
	    !read_link(t, "intra_node", &c->has_intra_latency, &c->intra_latency, &c->has_intra_bw, &c->intra_bw,
		       c->proto[0], err) ||
	    !read_link(t, "inter_node", &c->has_inter_latency, &c->inter_latency, &c->has_inter_bw, &c->inter_bw,
		       c->proto[1], err) ||
	    !yt_map(t, "efficiency", false, &e, err))
		return false;
	int mode = 0;
	if (!yt_enum(t, "collectives", false, coll_modes, 2, &mode, NULL, err))
		return false;
	c->links_only = mode == 1;
	/* a measured overhead of zero is legitimate: the range holds 0 as well as a time */
	if (!yt_range(t, CONFIG_R_COLL_OVERHEAD, false, &c->overhead, &c->has_overhead, err))
		return false;
	if (!e)
		return true;
	return yt_check_keys(e, eff_keys, err) &&
	       yt_range(e, CONFIG_R_EFF_GEMM, false, &c->gemm, &c->has_gemm, err) &&
	       yt_range(e, CONFIG_R_EFF_ATTENTION, false, &c->attention, &c->has_attention, err) &&
	       yt_range(e, CONFIG_R_EFF_MEMORY, false, &c->memory, &c->has_memory, err);
}

bool config_load_calibration(const char *path, config_calibration *out, config_error *err)
{
	config_calibration c;
	memset(&c, 0, sizeof c);
	size_t n = strlen(path);
	if (n >= sizeof c.path)
		return config_fail(err, "%s: path too long", path);
	memcpy(c.path, path, n + 1);
	yt_doc *doc;
	if (!yt_load(path, &doc, err))
		return false;
	bool ok = calibration_read(doc, &c, err);
	yt_free(doc);
	if (ok)
		*out = c;
	return ok;
}

/* A YAML double-quoted scalar. */
static void put_quoted(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\x%02x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

/* Latencies in microseconds and bandwidths in GB/s with 9 significant digits: the
 * loader reads them back to within 1e-9 relative. */
static void put_link(FILE *f, const char *key, bool has_lat, double lat, bool has_bw, double bw,
		     const config_proto_link *proto)
{
	bool any = false;
	for (int i = 0; i < CONFIG_CAL_ENTRIES; i++)
		any |= proto[i].has_latency || proto[i].has_bw;
	if (!has_lat && !has_bw && !any)
		return;
	fprintf(f, "  %s:\n", key);
	if (has_lat)
		fprintf(f, "    latency: %.9gus\n", lat * 1e6);
	if (has_bw)
		fprintf(f, "    bandwidth: %.9gGB/s\n", bw / 1e9);
	if (any)
		fprintf(f, "    protocols:\n");
	for (int i = 0; i < CONFIG_CAL_ENTRIES; i++) {
		if (!proto[i].has_latency && !proto[i].has_bw)
			continue;
		fprintf(f, "      %s:\n", config_proto_keys[i]);
		if (proto[i].has_latency)
			fprintf(f, "        latency: %.9gus\n", proto[i].latency * 1e6);
		if (proto[i].has_bw)
			fprintf(f, "        bandwidth: %.9gGB/s\n", proto[i].bandwidth / 1e9);
	}
}

bool config_write_calibration(FILE *f, const config_calibration *c)
{
	fprintf(f, "calibration:\n");
	if (c->source[0]) {
		fprintf(f, "  source: ");
		put_quoted(f, c->source);
		fputc('\n', f);
	}
	if (c->platform[0]) {
		fprintf(f, "  platform: ");
		put_quoted(f, c->platform);
		fputc('\n', f);
	}
	if (c->links_only)
		fprintf(f, "  collectives: links\n");
	if (c->gpu[0]) {
		fprintf(f, "  gpu: ");
		put_quoted(f, c->gpu);
		fputc('\n', f);
	}
	if (c->has_overhead) {
		if (c->overhead > 0)
			fprintf(f, "  collective_overhead: %.9gus\n", c->overhead * 1e6);
		else
			fprintf(f, "  collective_overhead: 0\n");
	}
	put_link(f, "intra_node", c->has_intra_latency, c->intra_latency, c->has_intra_bw, c->intra_bw, c->proto[0]);
	put_link(f, "inter_node", c->has_inter_latency, c->inter_latency, c->has_inter_bw, c->inter_bw, c->proto[1]);
	if (c->has_gemm || c->has_attention || c->has_memory) {
		fprintf(f, "  efficiency:\n");
		if (c->has_gemm)
			fprintf(f, "    gemm: %.9g\n", c->gemm);
		if (c->has_attention)
			fprintf(f, "    attention: %.9g\n", c->attention);
		if (c->has_memory)
			fprintf(f, "    memory: %.9g\n", c->memory);
	}
	if (c->attention_kernel[0]) {
		fprintf(f, "  attention_kernel: ");
		put_quoted(f, c->attention_kernel);
		fputc('\n', f);
	}
	if (c->n_attention_points > 0)
		fprintf(f, "  attention_points:\n");
	for (int i = 0; i < c->n_attention_points; i++) {
		const config_attention_point *p = &c->attention_points[i];
		fprintf(f, "    - {kernel: ");
		put_quoted(f, p->kernel);
		fprintf(f, ", seq: %ld, head_dim: %d", p->seq, p->head_dim);
		if (p->heads > 0)
			fprintf(f, ", heads: %d", p->heads);
		if (p->kv_heads > 0)
			fprintf(f, ", kv_heads: %d", p->kv_heads);
		fprintf(f, ", direction: %s, causal: %s, tflops: %.9g, p10: %.9g, p90: %.9g}\n",
			p->direction == CONFIG_DIRECTION_BWD ? "bwd" : "fwd", p->causal ? "true" : "false", p->tflops,
			p->p10, p->p90);
	}
	return fflush(f) == 0 && !ferror(f);
}

bool config_calibration_check(const config_calibration *c, const config_platform *p, config_error *err)
{
	if (!c->gpu[0] || !p->gpu.name[0] || strcasecmp(c->gpu, p->gpu.name) == 0)
		return true;
	return config_fail(err,
			   "%s: measured on GPU '%s', but platform '%s' has GPU '%s'; a calibration holds only for the GPU "
			   "it was measured on (measure this platform's GPU, or use the platform that has '%s')",
			   c->path[0] ? c->path : "calibration", c->gpu, p->name, p->gpu.name, c->gpu);
}

void config_platform_keep_tuner_view(config_platform *p)
{
	if (p->nccl.tuner.set) /* a first calibration or what-if already took it */
		return;
	p->nccl.tuner.set = true;
	p->nccl.tuner.intra_bw = p->intra.bandwidth;
	p->nccl.tuner.pair_bw = p->intra.pair_bandwidth;
	p->nccl.tuner.intra_lat = p->intra.latency;
	p->nccl.tuner.eff_intra = p->eff.intra_link;
	p->nccl.tuner.nic_bw = p->inter.nic_bandwidth;
	p->nccl.tuner.inter_lat = p->inter.latency;
	p->nccl.tuner.eff_inter = p->eff.inter_link;
}

void config_apply_calibration(config_platform *p, const config_calibration *c)
{
	/* Fitted latencies are intercepts that already contain NCCL's per-call cost, so a
	 * calibration with a latency replaces the platform's overhead (by its own, or 0). */
	if (c->has_overhead)
		p->coll_overhead = c->overhead;
	else if (c->has_intra_latency || c->has_inter_latency)
		p->coll_overhead = 0;
	if (c->links_only)
		p->nccl.links_only = true;
	config_platform_keep_tuner_view(p);
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < CONFIG_CAL_ENTRIES; i++) {
			if (c->proto[k][i].has_latency)
				p->nccl.proto_cal[k][i].latency = c->proto[k][i].latency;
			if (c->proto[k][i].has_bw)
				p->nccl.proto_cal[k][i].bandwidth = c->proto[k][i].bandwidth;
		}
	if (c->has_intra_latency)
		p->intra.latency = c->intra_latency;
	if (c->has_inter_latency)
		p->inter.latency = c->inter_latency;
	if (c->has_intra_bw) {
		/* The measurement is per GPU and already includes the link efficiency. */
		p->intra.bandwidth = c->intra_bw;
		if (p->intra.fabric == CONFIG_FABRIC_NVLINK_MESH && p->gpus_per_node > 1)
			p->intra.pair_bandwidth = c->intra_bw / (p->gpus_per_node - 1);
		else
			p->intra.pair_bandwidth = c->intra_bw;
		p->eff.intra_link = 1.0;
	}
	if (c->has_inter_bw) {
		p->inter.nic_bandwidth = c->inter_bw;
		p->eff.inter_link = 1.0;
	}
	if (c->has_gemm) {
		p->eff.gemm = c->gemm; /* measured on real GEMMs: replaces the shape model */
		p->eff.gemm_measured = true;
	}
	if (c->has_attention)
		p->eff.attention = c->attention;
	if (c->has_memory)
		p->eff.memory = c->memory;
	config_calibration_attn_points(c, p);
}

void config_calibration_attn_points(const config_calibration *c, config_platform *p)
{
	if (c->n_attention_points == 0)
		return;
	int n = 0;
	for (int i = 0; i < c->n_attention_points; i++) {
		const config_attention_point *a = &c->attention_points[i];
		int kernel = -1;
		for (int k = 0; k < CONFIG_ATTN_KERNELS; k++)
			if (!strcmp(a->kernel, config_attn_kernel_names[k]))
				kernel = k;
		if (kernel < 0) /* a family spsim has no curve for (validate's wmma-fallback) */
			continue;
		config_attn_point pt = {.kernel = kernel,
					.bwd = a->direction == CONFIG_DIRECTION_BWD,
					.causal = a->causal,
					.head_dim = a->head_dim,
					.seq = (double)a->seq,
					.flops = a->tflops * 1e12};
		/* one point per shape: of points differing only in heads, the fullest waves win */
		int at = 0;
		while (at < n && !(p->attn_points[at].kernel == pt.kernel && p->attn_points[at].bwd == pt.bwd &&
				   p->attn_points[at].causal == pt.causal && p->attn_points[at].head_dim == pt.head_dim &&
				   p->attn_points[at].seq == pt.seq))
			at++;
		if (at < n) {
			const config_attention_point *prev = NULL;
			for (int j = 0; j < i && !prev; j++) {
				const config_attention_point *q = &c->attention_points[j];
				if (!strcmp(q->kernel, a->kernel) && q->seq == a->seq && q->head_dim == a->head_dim &&
				    q->direction == a->direction && q->causal == a->causal)
					prev = q;
			}
			if (prev && prev->heads >= a->heads)
				continue;
			p->attn_points[at] = pt;
		} else if (n < CONFIG_MAX_ATTN_POINTS) {
			p->attn_points[n++] = pt;
		}
	}
	if (n > 0)
		p->n_attn_points = n;
}

bool config_calibrate_platform(const char *path, config_platform *p, config_calibration *out, config_error *err)
{
	config_calibration local;
	config_calibration *c = out ? out : &local;
	if (!config_load_calibration(path, c, err) || !config_calibration_check(c, p, err))
		return false;
	config_apply_calibration(p, c);
	return true;
}
