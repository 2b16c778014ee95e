/* Calibration files: measured latencies, bandwidths and compute efficiencies that
 * override a platform's datasheet numbers (format in config.h). */
#include "config/config.h"
#include "config/yamltree.h"

#include <string.h>

static bool read_link(const yt_node *t, const char *key, bool *has_lat, double *lat, bool *has_bw, double *bw,
		      config_error *err)
{
	static const char *const keys[] = {"latency", "bandwidth", NULL};
	const yt_node *l;
	if (!yt_map(t, key, false, &l, err))
		return false;
	if (!l)
		return true;
	return yt_check_keys(l, keys, err) && yt_range(l, CONFIG_R_CAL_LATENCY, false, lat, has_lat, err) &&
	       yt_range(l, CONFIG_R_CAL_BANDWIDTH, false, bw, has_bw, err);
}

static bool calibration_read(const yt_doc *doc, config_calibration *c, config_error *err)
{
	static const char *const keys[] = {"source",	 "platform",   "intra_node", "inter_node",
					   "efficiency", "collective_overhead", NULL};
	static const char *const eff_keys[] = {"gemm", "attention", "memory", NULL};
	const yt_node *t, *e;
	if (!yt_top(doc, "calibration", &t, err) || !yt_check_keys(t, keys, err) ||
	    !yt_string(t, "source", false, c->source, sizeof c->source, NULL, err) ||
	    !yt_string(t, "platform", false, c->platform, sizeof c->platform, NULL, err) ||
	    !read_link(t, "intra_node", &c->has_intra_latency, &c->intra_latency, &c->has_intra_bw, &c->intra_bw,
		       err) ||
	    !read_link(t, "inter_node", &c->has_inter_latency, &c->inter_latency, &c->has_inter_bw, &c->inter_bw,
		       err) ||
	    !yt_map(t, "efficiency", false, &e, err))
		return false;
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
static void put_link(FILE *f, const char *key, bool has_lat, double lat, bool has_bw, double bw)
{
	if (!has_lat && !has_bw)
		return;
	fprintf(f, "  %s:\n", key);
	if (has_lat)
		fprintf(f, "    latency: %.9gus\n", lat * 1e6);
	if (has_bw)
		fprintf(f, "    bandwidth: %.9gGB/s\n", bw / 1e9);
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
	if (c->has_overhead) {
		if (c->overhead > 0)
			fprintf(f, "  collective_overhead: %.9gus\n", c->overhead * 1e6);
		else
			fprintf(f, "  collective_overhead: 0\n");
	}
	put_link(f, "intra_node", c->has_intra_latency, c->intra_latency, c->has_intra_bw, c->intra_bw);
	put_link(f, "inter_node", c->has_inter_latency, c->inter_latency, c->has_inter_bw, c->inter_bw);
	if (c->has_gemm || c->has_attention || c->has_memory) {
		fprintf(f, "  efficiency:\n");
		if (c->has_gemm)
			fprintf(f, "    gemm: %.9g\n", c->gemm);
		if (c->has_attention)
			fprintf(f, "    attention: %.9g\n", c->attention);
		if (c->has_memory)
			fprintf(f, "    memory: %.9g\n", c->memory);
	}
	return fflush(f) == 0 && !ferror(f);
}

void config_apply_calibration(config_platform *p, const config_calibration *c)
{
	/* Fitted latencies are intercepts that already contain NCCL's per-call cost, so a
	 * calibration with a latency replaces the platform's overhead (by its own, or 0). */
	if (c->has_overhead)
		p->coll_overhead = c->overhead;
	else if (c->has_intra_latency || c->has_inter_latency)
		p->coll_overhead = 0;
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
	if (c->has_gemm)
		p->eff.gemm = c->gemm;
	if (c->has_attention)
		p->eff.attention = c->attention;
	if (c->has_memory)
		p->eff.memory = c->memory;
}
