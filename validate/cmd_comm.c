/* spsim-validate comm: collective sweeps, alpha-beta fits per collective, group size and
 * link class, and the link latencies/bandwidths of a calibration file — fitted by the
 * nccltests module so that engine_collective_time reproduces the measured times (the fit
 * inverts the model that later uses it; docs/nccl-tests.md). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "nccltests/nccltests.h"

typedef struct comm_ctx {
	vcli_out *o;
	const validate_transport *t;
	const char *type; /* nccl-tests datatype name */
	validate_comm_point *pts;
	int n, cap;
} comm_ctx;

static int on_point(void *vctx, const validate_comm_point *p)
{
	comm_ctx *c = vctx;
	if (c->n == c->cap) {
		int cap = c->cap ? 2 * c->cap : 64;
		validate_comm_point *n = realloc(c->pts, (size_t)cap * sizeof *n);
		if (!n)
			return VALIDATE_ENOMEM;
		c->pts = n;
		c->cap = cap;
	}
	c->pts[c->n++] = *p;
	vcli_say(c->o, "| %-13s | %4d | %6d | %-5s | %12zu | %12.2f | %9.2f | %9.2f |\n", validate_coll_name(p->coll),
		 p->group_size, p->n_groups, validate_link_name(p->link), p->bytes, p->time_s * 1e6, p->algbw / 1e9,
		 p->busbw / 1e9);
	return validate_log_append(&c->o->log, "comm",
				   "\"coll\": \"%s\", \"group_size\": %d, \"groups\": %d, \"concurrent\": %s, "
				   "\"link\": \"%s\", \"bytes\": %zu, \"count\": %zu, \"dtype\": \"%s\", \"time_s\": %.9g, "
				   "\"algbw_GBps\": %.6g, \"busbw_GBps\": %.6g, \"ranks\": %d, \"nodes\": %d, "
				   "\"transport\": \"%s\", \"host\": \"%s\"",
				   validate_coll_name(p->coll), p->group_size, p->n_groups, p->n_groups > 1 ? "true" : "false",
				   validate_link_name(p->link), p->bytes, p->count, c->type, p->time_s, p->algbw / 1e9,
				   p->busbw / 1e9, c->t->world, c->t->nodes, c->t->ops->name, c->t->host);
}

static workload_coll wl_coll(validate_coll c)
{
	switch (c) {
	case VALIDATE_ALLGATHER: return WL_COLL_ALLGATHER;
	case VALIDATE_REDUCESCATTER: return WL_COLL_REDUCESCATTER;
	case VALIDATE_ALLREDUCE: return WL_COLL_ALLREDUCE;
	default: return WL_COLL_ALLTOALL;
	}
}

/* The points of one (collective, group size) as an nccl-tests log of one group on its own
 * layout, for nccltests_calibrate. */
static bool as_log(const comm_ctx *c, validate_coll coll, int P, int nodes, int per_node, nccltests_log *log)
{
	memset(log, 0, sizeof *log);
	snprintf(log->path, sizeof log->path, "measured %s, %d ranks on %d node(s)", validate_coll_name(coll), P, nodes);
	log->coll = wl_coll(coll);
	log->coll_from = "option";
	log->ranks = P;
	log->nodes = nodes;
	log->gpus_per_node = per_node;
	log->groups = 1;
	log->rows = calloc((size_t)c->n, sizeof *log->rows);
	if (!log->rows)
		return false;
	const int es = nccltests_type_size(c->type);
	for (int i = 0; i < c->n; i++) {
		const validate_comm_point *p = &c->pts[i];
		if (p->coll != coll || p->group_size != P)
			continue;
		nccltests_row *r = &log->rows[log->n_rows++];
		r->line = log->n_rows;
		r->size = (double)p->bytes;
		r->count = nccltests_count(log->coll, (double)p->bytes, es, P);
		snprintf(r->type, sizeof r->type, "%s", c->type);
		snprintf(r->redop, sizeof r->redop, "%s", nccltests_default_redop(log->coll));
		r->root = -1;
		r->has[0] = true;
		r->time_us[0] = p->time_s * 1e6;
		r->algbw[0] = p->algbw / 1e9;
		r->busbw[0] = p->busbw / 1e9;
		r->wrong[0] = -1;
	}
	return true;
}

static void calibrate(const vcli_opts *opt, comm_ctx *c, const validate_comm_cfg *cfg)
{
	vcli_out *o = c->o;
	const validate_transport *t = c->t;
	const int rpn = validate_transport_ranks_per_node(t);
	if (!rpn) {
		vcli_say(o, "\nNo calibration: ranks are not spread evenly over the hosts.\n");
		return;
	}
	nccltests_log logs[VALIDATE_COLL_COUNT + VCLI_MAX_LIST];
	int n = 0;
	bool ok = true;
	/* The world group, every collective measured on it. */
	for (int k = 0; k < VALIDATE_COLL_COUNT && ok; k++) {
		bool have = false;
		for (int i = 0; i < c->n; i++)
			have |= c->pts[i].coll == (validate_coll)k && c->pts[i].group_size == t->world;
		if (have)
			ok = as_log(c, (validate_coll)k, t->world, t->nodes, rpn, &logs[n++]);
	}
	/* BASP groups inside one host: each group has its own links (the concurrency adds
	 * nothing on a switched node), so each is a single-node log. */
	for (int g = 0; g < cfg->n_group_sizes && ok; g++) {
		const int K = cfg->group_sizes[g];
		if (K < t->world && validate_transport_groups_intra(t, K))
			ok = as_log(c, VALIDATE_ALLTOALL, K, 1, K, &logs[n++]);
	}
	config_platform plat;
	config_error e;
	bool have_plat = opt->platform && config_load_platform(opt->platform, &plat, &e);
	if (opt->platform && !have_plat)
		vcli_say(o, "\n%s: %s; calibrating on a generic platform\n", opt->platform, e.msg);
	if (have_plat && opt->nics_per_node)
		plat.inter.nics_per_node = opt->nics_per_node;
	/* only a transport that runs NCCL is modelled by NCCL's terms */
	nccltests_calib_opts copts = {.platform = have_plat ? &plat : NULL,
				      .links_only = strcmp(t->ops->name, "nccl") != 0};
	nccltests_calib_report rep;
	config_calibration cal;
	if (ok && n > 0 && nccltests_calibrate(logs, n, &copts, &cal, &rep, &e)) {
		snprintf(cal.source, sizeof cal.source, "spsim-validate comm (%s, %d ranks, %d hosts)", t->ops->name,
			 t->world, t->nodes);
		vcli_say(o, "\nCalibration (links fitted so that the analytic engine reproduces these times):\n\n");
		if (rep.intra.fitted)
			vcli_say(o, "- intra-node: latency %.3g us, bandwidth %.4g GB/s per GPU per direction (%d points, "
				 "rms error %.1f%%, max %.1f%%)\n",
				 cal.intra_latency * 1e6, cal.intra_bw / 1e9, rep.intra.fit.n_points, 100 * rep.intra.fit.rms_rel,
				 100 * rep.intra.fit.max_rel);
		if (rep.inter.fitted)
			vcli_say(o, "- inter-node: latency %.3g us, bandwidth %.4g GB/s per NIC (%d points, rms error %.1f%%, "
				 "max %.1f%%)\n",
				 cal.inter_latency * 1e6, cal.inter_bw / 1e9, rep.inter.fit.n_points, 100 * rep.inter.fit.rms_rel,
				 100 * rep.inter.fit.max_rel);
		if (rep.notes[0])
			vcli_say(o, "\nNotes:\n%s\n", rep.notes);
		vcli_calibration_merge(o, &cal);
		validate_log_append(&o->log, "calibration",
				    "\"has_intra\": %s, \"intra_latency_s\": %.9g, \"intra_bw_Bps\": %.9g, "
				    "\"has_inter\": %s, \"inter_latency_s\": %.9g, \"inter_bw_Bps\": %.9g",
				    cal.has_intra_bw ? "true" : "false", cal.intra_latency, cal.intra_bw,
				    cal.has_inter_bw ? "true" : "false", cal.inter_latency, cal.inter_bw);
	} else if (ok && n > 0) {
		vcli_say(o, "\nNo link calibration: %s\n", e.msg);
	}
	for (int i = 0; i < n; i++)
		nccltests_log_finish(&logs[i]);
}

int vcli_comm(const vcli_opts *opt, validate_transport *t, vcli_out *o)
{
	int sizes[VCLI_MAX_LIST], n_sizes = 0;
	if (opt->n_group_sizes) {
		memcpy(sizes, opt->group_sizes, (size_t)opt->n_group_sizes * sizeof *sizes);
		n_sizes = opt->n_group_sizes;
	} else {
		/* BASP groups: every power of two between 1 and the world that divides it. */
		for (int K = 2; K < t->world && n_sizes < VCLI_MAX_LIST; K *= 2)
			if (t->world % K == 0)
				sizes[n_sizes++] = K;
	}
	validate_comm_cfg cfg = {.min_bytes = opt->min_bytes, .max_bytes = opt->max_bytes, .factor = opt->factor,
				 .warmup = opt->warmup, .iters = opt->iters, .group_sizes = sizes,
				 .n_group_sizes = n_sizes, .alltoall_world = !opt->no_world, .zero = !opt->no_zero,
				 .dtype = opt->dtype};
	comm_ctx c = {.o = o, .t = t, .type = opt->dtype == VALIDATE_BF16 ? "bfloat16" : "float"};
	if (t->world < 2)
		vcli_say(o, "One rank: collectives move no data between GPUs; the times are the launch overheads.\n\n");
	vcli_say(o, "Sizes per rank as nccl-tests counts them; time = slowest rank, mean of %d calls after %d warm-up;\n"
		    "algbw = size/time, busbw = algbw x (n-1)/n (all-reduce: 2(n-1)/n), nccl-tests doc/PERFORMANCE.md.\n"
		    "Groups of K run all at once, as BASP's do in training.\n\n",
		 opt->iters, opt->warmup);
	vcli_say(o, "| collective    |    K | groups | link  |   size (B)   |   time (us)  | algbw GB/s | busbw GB/s |\n"
		    "|---------------|------|--------|-------|--------------|--------------|-----------|-----------|\n");
	char err[512] = "";
	size_t used = 0;
	int rc = validate_comm_sweep(t, &cfg, on_point, &c, &used, err, sizeof err);
	if (rc) {
		if (err[0] && o->writer)
			fprintf(stderr, "spsim-validate comm: %s\n", err);
		free(c.pts);
		return rc;
	}
	if (used < opt->max_bytes)
		vcli_say(o, "\nLargest size capped at %zu bytes by free device memory.\n", used);

	/* Alpha-beta per (collective, K, link): time = latency + bus bytes / bandwidth, bus
	 * bytes = size x busbw factor, so bandwidth is the asymptotic bus bandwidth. */
	vcli_say(o, "\nFits, time = latency + size x busbw-factor / bandwidth (least squares on relative error):\n\n"
		    "| collective    |    K | link  | latency (us) | bandwidth GB/s | points | max error |\n"
		    "|---------------|------|-------|--------------|----------------|--------|-----------|\n");
	double *x = calloc((size_t)(c.n ? c.n : 1), sizeof *x), *y = calloc((size_t)(c.n ? c.n : 1), sizeof *y);
	for (int i = 0; x && y && i < c.n; i++) {
		bool first = true;
		for (int j = 0; j < i; j++)
			first &= !(c.pts[j].coll == c.pts[i].coll && c.pts[j].group_size == c.pts[i].group_size);
		if (!first)
			continue;
		int m = 0;
		for (int j = i; j < c.n; j++)
			if (c.pts[j].coll == c.pts[i].coll && c.pts[j].group_size == c.pts[i].group_size) {
				x[m] = (double)c.pts[j].bytes * validate_busbw_factor(c.pts[j].coll, c.pts[j].group_size);
				y[m++] = c.pts[j].time_s;
			}
		validate_fit f;
		if (validate_fit_alpha_beta(x, y, m, &f) != VALIDATE_OK)
			continue;
		vcli_say(o, "| %-13s | %4d | %-5s | %12.3f | %14.4g | %6d | %8.1f%% |\n", validate_coll_name(c.pts[i].coll),
			 c.pts[i].group_size, validate_link_name(c.pts[i].link), f.latency * 1e6, f.bandwidth / 1e9, f.n,
			 100 * f.max_rel);
		validate_log_append(&o->log, "comm_fit",
				    "\"coll\": \"%s\", \"group_size\": %d, \"link\": \"%s\", \"latency_s\": %.9g, "
				    "\"busbw_Bps\": %.9g, \"points\": %d, \"max_rel_error\": %.6g",
				    validate_coll_name(c.pts[i].coll), c.pts[i].group_size, validate_link_name(c.pts[i].link),
				    f.latency, f.bandwidth, f.n, f.max_rel);
	}
	free(x);
	free(y);
	if (t->world > 1)
		calibrate(opt, &c, &cfg);
	free(c.pts);
	return VALIDATE_OK;
}
