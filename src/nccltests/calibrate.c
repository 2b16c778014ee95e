/* nccltests: calibrating a platform from nccl-tests logs.
 *
 * A single-node log (every rank on one host) only exercises the intra-node links, so it
 * fits the intra_node class; a multi-node log then fits the inter_node class with the
 * intra-node one held at its fitted (or the platform's) values. Each log is modelled on
 * its own layout, and its time is the one spsim's engine gives that collective:
 * engine_collective_time on the platform with the candidate calibration applied
 * (config_apply_calibration), so the fit inverts exactly the model that later uses it.
 * The inversion per algorithm is derived in docs/nccl-tests.md. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "engine/nccl.h"
#include "nccltests/nccltests.h"

void nccltests_generic_platform(config_platform *p, int nodes, int gpus_per_node)
{
	memset(p, 0, sizeof *p);
	snprintf(p->name, sizeof p->name, "nccl-tests-layout");
	p->nodes = nodes;
	p->gpus_per_node = gpus_per_node;
	snprintf(p->gpu.name, sizeof p->gpu.name, "unknown");
	p->gpu.peak_flops = 312e12;
	p->gpu.memory_bytes = 80.0 * (1 << 30);
	p->gpu.hbm_bandwidth = 2e12;
	p->intra.fabric = CONFIG_FABRIC_NVSWITCH;
	p->intra.bandwidth = p->intra.pair_bandwidth = 100e9;
	p->intra.latency = 2e-6;
	p->inter.nics_per_node = gpus_per_node;
	p->inter.nic_bandwidth = 25e9;
	p->inter.latency = 5e-6;
	p->inter.topology = CONFIG_TOPO_SINGLE_SWITCH;
	p->inter.oversubscription = 1.0;
	p->eff.gemm = p->eff.attention = p->eff.memory = 1.0;
	p->eff.intra_link = p->eff.inter_link = 1.0;
	/* a placeholder, not hardware NCCL's tuner sees: the links being fitted are the best
	 * guess at the hardware, so the tuner chooses on them */
	p->nccl.tuner_follows = true;
}

typedef struct log_model {
	const nccltests_log *log;
	config_platform orig; /* the log's layout on the platform as given */
	config_platform base; /* the same, the already fitted class applied */
	engine_group_shape *shapes;
	int n_shapes;
	workload_alg alg;
	bool inter;
} log_model;

typedef struct fit_ctx {
	log_model *models;
	int *model_of; /* point -> model */
	double *bytes;
	double *times;
	int n, cap;
	bool inter; /* the class being fitted */
	int proto;  /* the `protocols:` entry whose own links are fitted (CONFIG_CAL_ENTRIES); -1: the class's */
} fit_ctx;

static double model_time(void *vctx, int i, double latency, double bandwidth)
{
	const fit_ctx *c = vctx;
	const log_model *m = &c->models[c->model_of[i]];
	config_platform p = m->base;
	config_calibration cal;
	memset(&cal, 0, sizeof cal);
	/* the launch is its own term of NCCL's model, not part of the link latency */
	cal.has_overhead = !m->base.nccl.links_only;
	cal.overhead = m->base.coll_overhead;
	if (c->proto >= 0) {
		config_proto_link *pl = &cal.proto[c->inter][c->proto];
		pl->has_latency = pl->has_bw = true;
		pl->latency = latency > 1e-12 ? latency : 1e-12; /* the range's floor: 0 reads as none */
		pl->bandwidth = bandwidth;
	} else if (c->inter) {
		cal.has_inter_latency = cal.has_inter_bw = true;
		cal.inter_latency = latency;
		cal.inter_bw = bandwidth;
	} else {
		cal.has_intra_latency = cal.has_intra_bw = true;
		cal.intra_latency = latency;
		cal.intra_bw = bandwidth;
	}
	config_apply_calibration(&p, &cal);
	double t = 0;
	for (int k = 0; k < m->n_shapes; k++)
		t = fmax(t, engine_collective_time(&p, m->log->coll, m->alg, m->shapes[k], c->bytes[i]));
	return t;
}

static void note(nccltests_calib_report *rep, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(nccltests_calib_report *rep, const char *fmt, ...)
{
	size_t len = strlen(rep->notes);
	if (len + 2 >= sizeof rep->notes)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(rep->notes + len, sizeof rep->notes - len, fmt, ap);
	va_end(ap);
	len = strlen(rep->notes);
	if (len + 1 < sizeof rep->notes) {
		rep->notes[len] = '\n';
		rep->notes[len + 1] = '\0';
	}
}

static bool push_point(fit_ctx *c, int model, double bytes, double time)
{
	if (c->n == c->cap) {
		int cap = c->cap ? 2 * c->cap : 64;
		int *mo = realloc(c->model_of, (size_t)cap * sizeof *mo);
		if (!mo)
			return false;
		c->model_of = mo;
		double *b = realloc(c->bytes, (size_t)cap * sizeof *b);
		if (!b)
			return false;
		c->bytes = b;
		double *t = realloc(c->times, (size_t)cap * sizeof *t);
		if (!t)
			return false;
		c->times = t;
		c->cap = cap;
	}
	c->model_of[c->n] = model;
	c->bytes[c->n] = bytes;
	c->times[c->n] = time;
	c->n++;
	return true;
}

static bool row_usable(const nccltests_row *r, int col)
{
	return r->has[col] && r->size > 0 && r->time_us[col] > 0 && r->wrong[col] <= 0;
}

/* Adds a log's rows within [min, max]; falls back to all sizes when fewer than two
 * distinct sizes lie in the range. */
static bool add_log_points(fit_ctx *c, int model, const nccltests_log *log, const nccltests_calib_opts *o,
			   nccltests_calib_report *rep)
{
	int col = o->in_place ? NCCLTESTS_IP : NCCLTESTS_OOP;
	double lo = o->min_bytes, hi = o->max_bytes > 0 ? o->max_bytes : INFINITY;
	int wrong = 0, distinct = 0;
	double last = -1;
	for (int i = 0; i < log->n_rows; i++) {
		const nccltests_row *r = &log->rows[i];
		if (r->has[col] && r->wrong[col] > 0)
			wrong++;
		if (row_usable(r, col) && r->size >= lo && r->size <= hi && r->size != last) {
			distinct++;
			last = r->size;
		}
	}
	if (wrong)
		note(rep, "%s: %d row%s with #wrong > 0 left out of the fit", log->path, wrong, wrong == 1 ? "" : "s");
	if (distinct < 2) {
		if (lo > 0 || isfinite(hi))
			note(rep, "%s: fewer than two sizes in the fitted range, fitting all its sizes", log->path);
		lo = 0;
		hi = INFINITY;
	}
	for (int i = 0; i < log->n_rows; i++) {
		const nccltests_row *r = &log->rows[i];
		if (row_usable(r, col) && r->size >= lo && r->size <= hi &&
		    !push_point(c, model, r->size, r->time_us[col] * 1e-6))
			return false;
	}
	return true;
}

static bool fit_class(log_model *models, int n_models, bool inter, const nccltests_calib_opts *o,
		      nccltests_calib_class *out, nccltests_calib_report *rep, config_error *err)
{
	fit_ctx c = {.models = models, .inter = inter, .proto = -1};
	const config_platform *start = NULL;
	bool ok = true;
	for (int m = 0; m < n_models && ok; m++) {
		if (models[m].inter != inter)
			continue;
		if (!start)
			start = &models[m].base;
		out->n_logs++;
		ok = add_log_points(&c, m, models[m].log, o, rep);
		if (!ok)
			config_fail(err, "out of memory");
	}
	if (ok && out->n_logs > 0) {
		double L0 = inter ? start->inter.latency : start->intra.latency;
		double B0 = inter ? config_platform_nic_bw(start) : config_platform_intra_bw(start);
		config_error why;
		ok = nccltests_fit_model(model_time, &c, c.times, c.n, L0, B0, &out->fit, &why);
		if (ok) {
			out->fitted = true;
		} else {
			char logs[512] = "";
			for (int m = 0; m < n_models; m++)
				if (models[m].inter == inter && strlen(logs) + strlen(models[m].log->path) + 3 < sizeof logs) {
					if (logs[0])
						strcat(logs, ", ");
					strcat(logs, models[m].log->path);
				}
			config_fail(err, "%s: cannot fit the %s links: %s", logs, inter ? "inter-node" : "intra-node", why.msg);
		}
	}
	free(c.model_of);
	free(c.bytes);
	free(c.times);
	return ok;
}

/* The log's time under platform p: the slowest of its groups. */
static double log_time(const log_model *m, const config_platform *p, double bytes)
{
	double t = 0;
	for (int k = 0; k < m->n_shapes; k++)
		t = fmax(t, engine_collective_time(p, m->log->coll, m->alg, m->shapes[k], bytes));
	return t;
}

/* A size is "worse" calibrated when its relative error grows by more than 3 points: the
 * spread of nccl-tests timings between runs and neighbouring rows (each row averages 20
 * iterations; published logs ripple by 1-3%), below which an uncalibrated curve that
 * merely crosses the measured one at some size would veto every fit. */
#define WORSE_TOL 0.03

typedef struct cand_score {
	double max_fit; /* largest relative error over the fitted range */
	bool worse;     /* some size of some log worse than uncalibrated */
} cand_score;

/* |model - measured| / measured for a row of m's log on platform p. */
static double row_error(const log_model *m, const config_platform *p, const nccltests_row *r, int col)
{
	double t = r->time_us[col] * 1e-6;
	return fabs(log_time(m, p, r->size) - t) / t;
}

static cand_score score_of(const log_model *models, int n, const config_calibration *cal, const nccltests_calib_opts *o)
{
	cand_score sc = {0, false};
	int col = o->in_place ? NCCLTESTS_IP : NCCLTESTS_OOP;
	double lo = o->min_bytes, hi = o->max_bytes > 0 ? o->max_bytes : INFINITY;
	for (int i = 0; i < n; i++) {
		const log_model *m = &models[i];
		config_platform p = m->orig;
		config_apply_calibration(&p, cal);
		for (int j = 0; j < m->log->n_rows; j++) {
			const nccltests_row *r = &m->log->rows[j];
			if (!row_usable(r, col))
				continue;
			double e = row_error(m, &p, r, col);
			if (e > row_error(m, &m->orig, r, col) + WORSE_TOL)
				sc.worse = true;
			if (r->size >= lo && r->size <= hi && e > sc.max_fit)
				sc.max_fit = e;
		}
	}
	return sc;
}

/* NCCL's per-call launch from the sizes below the fitted range (all sizes up to -e when none),
 * the links as calibrated: weighted least squares of the constant offset,
 * sum(((c + model_i - t_i) / t_i)^2), c >= 0. Returns < 0 when no size informs it. */
static double fit_launch(const log_model *models, int n, const config_calibration *cal, const nccltests_calib_opts *o)
{
	int col = o->in_place ? NCCLTESTS_IP : NCCLTESTS_OOP;
	double num = 0, den = 0;
	for (int pass = 0; pass < 2 && den == 0; pass++)
		for (int i = 0; i < n; i++) {
			const log_model *m = &models[i];
			config_platform p = m->orig;
			config_apply_calibration(&p, cal);
			p.coll_overhead = 0;
			for (int j = 0; j < m->log->n_rows; j++) {
				const nccltests_row *r = &m->log->rows[j];
				if (!row_usable(r, col) || (pass == 0 && r->size >= o->min_bytes) ||
				    (o->max_bytes > 0 && r->size > o->max_bytes))
					continue;
				double t = r->time_us[col] * 1e-6;
				num += (t - log_time(m, &p, r->size)) / (t * t);
				den += 1 / (t * t);
			}
		}
	if (den == 0)
		return -1;
	return num / den > 0 ? num / den : 0;
}

/* Candidate c (0..3) of a link class: 0 latency and bandwidth fitted, 1 bandwidth only,
 * 2 latency only, 3 neither. */
static void set_class(config_calibration *cal, bool inter, int c, const nccltests_calib_class *k)
{
	bool lat = k->fitted && (c == 0 || c == 2), bw = k->fitted && (c == 0 || c == 1);
	if (inter) {
		cal->has_inter_latency = lat;
		cal->inter_latency = k->fit.latency;
		cal->has_inter_bw = bw;
		cal->inter_bw = k->fit.bandwidth;
	} else {
		cal->has_intra_latency = lat;
		cal->intra_latency = k->fit.latency;
		cal->has_intra_bw = bw;
		cal->intra_bw = k->fit.bandwidth;
	}
}

/* Keeps calibration from making any size worse: of the fitted values (each link class's
 * latency and bandwidth, the launch) the subset with the smallest largest error over the
 * fitted range among those that leave no size of any log worse than the platform as
 * given; the empty subset always qualifies. */
static void choose_subset(const log_model *models, int n, const nccltests_calib_opts *o, config_calibration *out,
			  nccltests_calib_report *rep)
{
	config_calibration best = *out, cal = *out;
	double c0 = models[0].orig.coll_overhead;
	double launch = out->overhead; /* fitted in the second pass, or c0 */
	cal.has_overhead = true;
	double best_err = INFINITY;
	int best_i = 3, best_e = 3, best_l = 1;
	for (int ci = 0; ci < 4; ci++)
		for (int ce = 0; ce < 4; ce++)
			for (int cl = 0; cl < 2; cl++) {
				if ((ci != 3 && !rep->intra.fitted) || (ce != 3 && !rep->inter.fitted) ||
				    (cl == 0 && launch < 0))
					continue;
				set_class(&cal, false, ci, &rep->intra);
				set_class(&cal, true, ce, &rep->inter);
				cal.overhead = cl == 0 ? launch : c0;
				cand_score sc = score_of(models, n, &cal, o);
				if (!sc.worse && sc.max_fit < best_err - 1e-12) {
					best_err = sc.max_fit;
					best = cal;
					best_i = ci;
					best_e = ce;
					best_l = cl;
				}
			}
	if (!isfinite(best_err)) { /* nothing qualifies: the platform as given */
		best = cal;
		set_class(&best, false, 3, &rep->intra);
		set_class(&best, true, 3, &rep->inter);
		best.overhead = c0;
	}
	static const char *const what[4] = {"latency and bandwidth", "bandwidth", "latency", "nothing"};
	if (rep->intra.fitted && best_i == 3)
		note(rep, "intra_node: keeping the platform as given: every fitted term made some size worse");
	else if (rep->intra.fitted && best_i != 0)
		note(rep, "intra_node: keeping the fitted %s only: the rest made some size worse than the platform "
			  "as given", what[best_i]);
	if (rep->inter.fitted && best_e == 3)
		note(rep, "inter_node: keeping the platform as given: every fitted term made some size worse");
	else if (rep->inter.fitted && best_e != 0)
		note(rep, "inter_node: keeping the fitted %s only: the rest made some size worse than the platform "
			  "as given", what[best_e]);
	if (best_l == 0 && launch != c0)
		note(rep, "collective_overhead (NCCL's launch per call) fitted on the small sizes: %.3g us",
		     best.overhead * 1e6);
	*out = best;
}

/* The (algorithm, protocol) NCCL's tuner picks for a log's size: its own model on the
 * platform as given (the choice does not depend on a calibration, engine/nccl.c); false
 * where the log's collective is not tuned (all-to-all, send/recv, spsim's own
 * compositions). */
static bool tuned_pair(const log_model *m, double bytes, int *algo, int *proto)
{
	if (m->alg != WL_ALG_RING || m->log->coll == WL_COLL_ALLTOALL || m->log->coll == WL_COLL_SENDRECV ||
	    m->n_shapes < 1 || m->orig.nccl.links_only)
		return false;
	nccl_cost k = nccl_cost_of(&m->orig, m->log->coll, m->alg, m->shapes[0], bytes);
	*algo = (int)k.algo;
	*proto = (int)k.proto;
	return true;
}

/* A region: the sizes where the tuner picks protocol pr with an algorithm of `algos` (bit
 * a for nccl_algo a). */
typedef struct region {
	int pr;
	unsigned algos;
} region;

enum { ALL_ALGOS = (1u << NCCL_ALGO_P2P) - 1 };

/* The rows of a region: usable, within the user's range [-b, -e], where the tuner picks
 * one of its pairs. Without a -b the region reaches below the class's default bottom
 * (1 MiB): the class's fit starts there so as not to bend its one line to the
 * launch-bound small sizes, while a protocol's own line is alone on its sizes (LL and
 * LL128 run only below it). */
static bool in_region(const log_model *m, const nccltests_row *r, int col, const nccltests_calib_opts *o, region g)
{
	double hi = o->max_bytes > 0 ? o->max_bytes : INFINITY;
	int a, pr;
	return row_usable(r, col) && r->size >= o->proto_min_bytes && r->size <= hi && tuned_pair(m, r->size, &a, &pr) &&
	       pr == g.pr && (g.algos >> a & 1u);
}

/* Largest relative error over a region of the class's logs under cal, and whether any
 * size of any log is worse than the platform as given (as score_of). */
static cand_score region_score(const log_model *models, int n, bool inter, region g, const config_calibration *cal,
			       const nccltests_calib_opts *o, bool check_worse)
{
	/* the largest error over the region's sizes in the fitted range, or over the whole
	 * region when none is */
	cand_score sc = {0, false};
	double all = 0;
	int col = o->in_place ? NCCLTESTS_IP : NCCLTESTS_OOP, n_hi = 0;
	for (int i = 0; i < n; i++) {
		const log_model *m = &models[i];
		config_platform p = m->orig;
		config_apply_calibration(&p, cal);
		for (int j = 0; j < m->log->n_rows; j++) {
			const nccltests_row *r = &m->log->rows[j];
			bool in = m->inter == inter && in_region(m, r, col, o, g);
			if (!row_usable(r, col) || (!in && !check_worse))
				continue;
			double e = row_error(m, &p, r, col);
			if (check_worse && e > row_error(m, &m->orig, r, col) + WORSE_TOL)
				sc.worse = true;
			if (in && r->size >= o->min_bytes) {
				n_hi++;
				sc.max_fit = fmax(sc.max_fit, e);
			}
			if (in)
				all = fmax(all, e);
		}
	}
	if (n_hi == 0)
		sc.max_fit = all;
	return sc;
}

/* The points of a region of the class's logs into c; false when out of memory. */
static bool region_points(fit_ctx *c, const nccltests_calib_opts *o, int n, region g)
{
	int col = o->in_place ? NCCLTESTS_IP : NCCLTESTS_OOP;
	for (int m = 0; m < n; m++) {
		if (c->models[m].inter != c->inter)
			continue;
		for (int j = 0; j < c->models[m].log->n_rows; j++) {
			const nccltests_row *r = &c->models[m].log->rows[j];
			if (in_region(&c->models[m], r, col, o, g) && !push_point(c, m, r->size, r->time_us[col] * 1e-6))
				return false;
		}
	}
	return true;
}

static int distinct_sizes(const fit_ctx *c)
{
	int d = 0;
	for (int k = 0; k < c->n; k++) {
		bool seen = false;
		for (int j = 0; j < k && !seen; j++)
			seen = c->bytes[j] == c->bytes[k];
		d += !seen;
	}
	return d;
}

/* The distinct sizes of a region (-1: out of memory). */
static int region_sizes(log_model *models, int n, bool inter, const nccltests_calib_opts *o, region g)
{
	fit_ctx c = {.models = models, .inter = inter, .proto = -1};
	int d = region_points(&c, o, n, g) ? distinct_sizes(&c) : -1;
	free(c.model_of), free(c.bytes), free(c.times);
	return d;
}

/* A protocol's bandwidth fitted above the link rate of the path it calibrates is not a
 * property of the link but of a term the points barely constrain (LL's region is
 * latency-bound: 1142 GB/s over dgx-h100's 450 GB/s NVLink): it is held at the rate and
 * the latency refitted under it (nccltests_fit_latency). Clamping rather than refusing
 * keeps the best fit a physical link allows, and the never-worse choice then judges it like
 * any fitted value. The rate is the platform's raw one (intra.bandwidth per GPU,
 * inter.nic_bandwidth per NIC, before efficiencies), or the class's calibrated bandwidth
 * where that is higher (measurements beat a platform file that understates its links).
 * Only against a platform the user gave: the generic one's rates are placeholders.
 * Returns the rate clamped to, 0 when the fit stands. */
/* A link class's raw rate on p, before efficiencies: intra.bandwidth per GPU, or
 * inter.nic_bandwidth per NIC. */
static double link_rate(const config_platform *p, bool inter)
{
	return inter ? p->inter.nic_bandwidth : p->intra.bandwidth;
}

static double clamp_to_link(fit_ctx *c, const nccltests_calib_opts *o, const config_calibration *cal,
			    nccltests_fit *f, double *unclamped)
{
	*unclamped = 0;
	if (!o->platform)
		return 0;
	double rate = link_rate(o->platform, c->inter);
	if (c->inter ? cal->has_inter_bw : cal->has_intra_bw)
		rate = fmax(rate, c->inter ? cal->inter_bw : cal->intra_bw);
	if (!(rate > 0) || !(f->bandwidth > rate))
		return 0;
	nccltests_fit g;
	config_error why;
	if (!nccltests_fit_latency(model_time, c, c->times, c->n, f->latency, rate, &g, &why))
		return 0; /* n > 0 and rate > 0 here: cannot happen */
	*unclamped = f->bandwidth;
	*f = g;
	return rate;
}

static const char *const entry_names[CONFIG_CAL_ENTRIES] = {
	"LL", "LL128", "Simple", "tree/LL", "tree/LL128", "tree/Simple", "ring/LL", "ring/LL128", "ring/Simple",
	"NVLS/Simple"};

const char *nccltests_entry_name(int e) { return e >= 0 && e < CONFIG_CAL_ENTRIES ? entry_names[e] : "?"; }

/* Entry e's own links, fitted on region g with the calibration so far (out) applied: one
 * weighted least squares, then, with a platform given, of the fitted latency and
 * bandwidth the subset with the smallest largest error over the region among those that
 * make no size of any log worse (the regions are disjoint and the choice does not move,
 * so each entry is decided alone). A region of fewer than 2 sizes fits nothing. */
static bool fit_entry(log_model *models, int n, const nccltests_calib_opts *o, bool inter, int e, region g,
		      config_calibration *out, nccltests_calib_report *rep, config_error *err)
{
	nccltests_calib_class *cls = inter ? &rep->inter : &rep->intra;
	const char *cname = inter ? "inter_node" : "intra_node";
	for (int i = 0; i < n; i++) {
		models[i].base = models[i].orig;
		config_apply_calibration(&models[i].base, out);
	}
	fit_ctx c = {.models = models, .inter = inter, .proto = e};
	if (!region_points(&c, o, n, g)) {
		free(c.model_of), free(c.bytes), free(c.times);
		return config_fail(err, "out of memory");
	}
	const config_platform *b = n > 0 ? &models[0].base : NULL;
	const char *stand = e < CONFIG_NCCL_PROTOS ? "class's" : "protocol's or class's";
	config_error why;
	int d = distinct_sizes(&c);
	if (d >= 2 && b) {
		double L0 = inter ? b->inter.latency : b->intra.latency;
		double B0 = inter ? config_platform_nic_bw(b) : config_platform_intra_bw(b);
		nccltests_fit *f = &cls->proto_fit[e];
		cls->proto_fitted[e] = nccltests_fit_model(model_time, &c, c.times, c.n, L0, B0, f, &why);
		if (!cls->proto_fitted[e])
			note(rep, "%s %s: the entry's own links do not fit (%s); the %s stand for it", cname, entry_names[e],
			     why.msg, stand);
		double rate = cls->proto_fitted[e] ? clamp_to_link(&c, o, out, f, &cls->proto_unclamped_bw[e]) : 0;
		bool own = rate > 0 && rate == link_rate(o->platform, inter);
		if (rate > 0)
			note(rep, "%s %s: the fitted bandwidth, %.4g GB/s, is above the path's link rate (%.4g GB/s per %s, %s%s), "
				  "which no protocol exceeds: clamped to the rate, the latency refitted under it (%.3g us)",
			     cname, entry_names[e], cls->proto_unclamped_bw[e] / 1e9, rate / 1e9, inter ? "NIC" : "GPU",
			     own ? o->platform->name : "the class's fitted bandwidth, above ", own ? "'s" : o->platform->name,
			     f->latency * 1e6);
	} else if (b && (o->proto_min_bytes > 0 || o->max_bytes > 0)) {
		/* the range, not the logs, left the entry too few sizes: say so */
		nccltests_calib_opts all = *o;
		all.proto_min_bytes = all.max_bytes = 0;
		int d_all = region_sizes(models, n, inter, &all, g);
		if (d_all >= 2)
			note(rep, "%s %s: %d size%s within -b/-e where NCCL's tuner runs it (%d in the logs), at least 2 "
				  "needed: not fitted, the %s links stand for it",
			     cname, entry_names[e], d, d == 1 ? "" : "s", d_all, stand);
	}
	free(c.model_of), free(c.bytes), free(c.times);
	if (!cls->proto_fitted[e])
		return true;
	config_proto_link fitted = {.has_latency = true,
				    .has_bw = true,
				    .latency = fmax(cls->proto_fit[e].latency, 1e-12),
				    .bandwidth = cls->proto_fit[e].bandwidth};
	config_proto_link best = {0};
	if (o->platform) { /* never worse: 0 both, 1 bandwidth, 2 latency, 3 none */
		double best_err = INFINITY;
		for (int k = 3; k >= 0; k--) {
			config_calibration cal = *out;
			config_proto_link cand = fitted;
			cand.has_latency = k == 0 || k == 2;
			cand.has_bw = k == 0 || k == 1;
			cal.proto[inter][e] = cand;
			cand_score sc = region_score(models, n, inter, g, &cal, o, true);
			if (!sc.worse && sc.max_fit < best_err - 1e-12) {
				best_err = sc.max_fit;
				best = cand;
			}
		}
		if (!best.has_latency && !best.has_bw)
			note(rep, "%s %s: keeping nothing fitted: the fit made some size worse than the platform as given",
			     cname, entry_names[e]);
		else if (!best.has_latency || !best.has_bw)
			note(rep, "%s %s: keeping the fitted %s only: the rest made some size worse than the platform as given",
			     cname, entry_names[e], best.has_bw ? "bandwidth" : "latency");
	} else {
		best = fitted;
	}
	out->proto[inter][e] = best;
	cls->proto_kept_latency[e] = best.has_latency;
	cls->proto_kept_bw[e] = best.has_bw;
	return true;
}

/* Each NCCL protocol's own links, per class, the class's calibration applied. Where the
 * tuner runs a protocol with one algorithm on the logs' sizes, the protocol's entry is
 * fitted on its region (all its sizes). Where it runs it with several (Simple as ring and
 * NVLS on an NVSwitch-3 node), each (algorithm, protocol) region of at least 2 sizes gets
 * its own entry, and the protocol's entry is fitted on the rest (the pairs of fewer
 * sizes; on the whole protocol region when the rest holds fewer than 2), first, so that
 * the pairs' entries then override it on their own sizes. */
static bool fit_protocols(log_model *models, int n, const nccltests_calib_opts *o, config_calibration *out,
			  nccltests_calib_report *rep, config_error *err)
{
	for (int inter = 0; inter < 2; inter++)
		for (int pr = 0; pr < CONFIG_NCCL_PROTOS; pr++) {
			unsigned seen = 0, own = 0;
			int n_seen = 0;
			for (int a = 0; a < NCCL_ALGO_P2P; a++) {
				int d = region_sizes(models, n, inter, o, (region){pr, 1u << a});
				if (d < 0)
					return config_fail(err, "out of memory");
				if (d > 0) {
					seen |= 1u << a;
					n_seen++;
				}
				if (d >= 2 && config_cal_entry(a, pr) >= 0)
					own |= 1u << a;
			}
			if (n_seen < 2) /* one algorithm: the protocol is not ambiguous */
				own = 0;
			unsigned rest = seen & ~own;
			if (own == 0 || rest) {
				region g = {pr, own == 0 ? ALL_ALGOS : rest};
				int d = region_sizes(models, n, inter, o, g);
				if (d < 0)
					return config_fail(err, "out of memory");
				if (d < 2)
					g.algos = ALL_ALGOS;
				if (!fit_entry(models, n, o, inter, pr, g, out, rep, err))
					return false;
			}
			for (int a = 0; a < NCCL_ALGO_P2P; a++)
				if ((own >> a & 1u) &&
				    !fit_entry(models, n, o, inter, config_cal_entry(a, pr), (region){pr, 1u << a}, out, rep,
					       err))
					return false;
		}
	return true;
}

bool nccltests_calibrate(const nccltests_log *logs, int n_logs, const nccltests_calib_opts *opts,
			 config_calibration *out, nccltests_calib_report *rep, config_error *err)
{
	memset(rep, 0, sizeof *rep);
	memset(out, 0, sizeof *out);
	snprintf(out->source, sizeof out->source, "nccl-tests");
	if (opts->platform)
		snprintf(out->platform, sizeof out->platform, "%s", opts->platform->name);
	log_model *models = calloc((size_t)(n_logs > 0 ? n_logs : 1), sizeof *models);
	if (!models)
		return config_fail(err, "out of memory");
	int n = 0;
	bool ok = true;
	for (int i = 0; i < n_logs && ok; i++) {
		const nccltests_log *log = &logs[i];
		if (log->ranks < 2) {
			note(rep, "%s: one rank moves no data between GPUs, nothing to fit", log->path);
			continue;
		}
		log_model *m = &models[n];
		m->log = log;
		m->inter = log->nodes > 1;
		m->alg = opts->alg_set ? opts->alg : nccltests_default_alg(log->coll);
		if (opts->platform) {
			m->base = *opts->platform;
			if (opts->platform->gpus_per_node != log->gpus_per_node)
				note(rep, "%s: %d GPUs per node, %s has %d; modelling the log's layout", log->path,
				     log->gpus_per_node, opts->platform->name, opts->platform->gpus_per_node);
		} else {
			nccltests_generic_platform(&m->base, log->nodes, log->gpus_per_node);
		}
		m->base.nodes = log->nodes;
		m->base.gpus_per_node = log->gpus_per_node;
		m->base.nccl.links_only = opts->links_only;
		if (opts->processes_set)
			m->base.nccl.processes = opts->processes;
		else if (nccltests_log_one_process_per_node(log))
			m->base.nccl.processes = CONFIG_NCCL_PROCS_PER_NODE;
		m->orig = m->base;
		nccltests_setup s = {.platform = &m->base, .coll = log->coll, .alg = m->alg, .gpus = log->ranks,
				     .group_size = log->ranks, .placement = ENGINE_PLACE_CONTIGUOUS};
		config_error why;
		if (!nccltests_shapes(&s, &m->shapes, &m->n_shapes, &why)) {
			ok = config_fail(err, "%s: %s", log->path, why.msg);
			break;
		}
		n++;
	}
	bool any_intra = false, any_inter = false;
	for (int i = 0; i < n; i++) {
		any_intra |= !models[i].inter;
		any_inter |= models[i].inter;
	}
	if (ok && n == 0)
		ok = config_fail(err, "no log has two or more ranks: nothing to calibrate");
	if (ok && any_inter && !any_intra && !opts->platform)
		ok = config_fail(err, "multi-node logs alone need the intra-node links from somewhere: pass --platform, or "
				 "a single-node log as well");
	/* Two passes: the links with the platform's launch, then NCCL's launch fitted on the
	 * small sizes (fit_launch) and the links again with it, since a launch too long for
	 * the log would otherwise be absorbed by a latency pinned at 0 and a wrong bandwidth. */
	size_t notes_len = 0;
	out->links_only = opts->links_only;
	for (int pass = 0; ok && pass < (opts->links_only ? 1 : 2); pass++) {
		if (pass == 1) {
			double c = fit_launch(models, n, out, opts);
			if (c < 0)
				break;
			notes_len = strlen(rep->notes);
			memset(&rep->intra, 0, sizeof rep->intra);
			memset(&rep->inter, 0, sizeof rep->inter);
			for (int i = 0; i < n; i++) {
				models[i].base = models[i].orig;
				models[i].base.coll_overhead = c;
			}
			out->overhead = c;
		}
		if (any_intra)
			ok = fit_class(models, n, false, opts, &rep->intra, rep, err);
		if (ok && rep->intra.fitted) {
			out->has_intra_latency = out->has_intra_bw = true;
			out->intra_latency = rep->intra.fit.latency;
			out->intra_bw = rep->intra.fit.bandwidth;
			for (int i = 0; i < n; i++)
				if (models[i].inter)
					config_apply_calibration(&models[i].base, out);
		} else if (ok && any_inter && pass == 0) {
			note(rep, "no single-node log: the inter-node fit holds the intra-node links at %s's values",
			     opts->platform->name);
		}
		if (ok && any_inter)
			ok = fit_class(models, n, true, opts, &rep->inter, rep, err);
		if (ok && rep->inter.fitted) {
			out->has_inter_latency = out->has_inter_bw = true;
			out->inter_latency = rep->inter.fit.latency;
			out->inter_bw = rep->inter.fit.bandwidth;
		}
		out->has_overhead = !opts->links_only;
		if (pass == 0)
			out->overhead = models[0].orig.coll_overhead;
		if (pass == 1)
			rep->notes[notes_len] = '\0'; /* the second pass repeats the first one's remarks */
	}
	/* Against a platform the user gave, calibrating may not make a size worse; the
	 * generic platform is only a starting point, nothing to hold the fit to. */
	if (ok && n > 0 && opts->platform && !opts->links_only)
		choose_subset(models, n, opts, out, rep);
	/* A class bandwidth above the platform's raw rate is kept (the never-worse rule judged
	 * it: a platform file may understate its links, as a synthetic or mislabelled log may
	 * overstate them) but never silently; it then bounds the protocols (clamp_to_link). */
	for (int k = 0; ok && opts->platform && k < 2; k++) {
		double bw = k ? out->inter_bw : out->intra_bw, rate = link_rate(opts->platform, k);
		if ((k ? out->has_inter_bw : out->has_intra_bw) && bw > rate)
			note(rep, "%s: the fitted bandwidth, %.4g GB/s, is above %s's link rate (%.4g GB/s per %s): kept, "
				  "as no size got worse with it, but the log and the platform disagree",
			     k ? "inter_node" : "intra_node", bw / 1e9, opts->platform->name, rate / 1e9, k ? "NIC" : "GPU");
	}
	if (ok && n > 0 && !opts->links_only)
		ok = fit_protocols(models, n, opts, out, rep, err);
	for (int i = 0; i < n; i++)
		free(models[i].shapes);
	free(models);
	return ok;
}

void nccltests_fit_text(const nccltests_fit *f, double unclamped_bw, char *lat, size_t lat_len, char *bw,
			size_t bw_len)
{
	if (f->latency_at_bound)
		snprintf(lat, lat_len, "latency at its lower bound (0)");
	else
		snprintf(lat, lat_len, "latency %.3g us", f->latency * 1e6);
	if (unclamped_bw > 0)
		snprintf(bw, bw_len, "bandwidth %.4g GB/s (the link rate; fitted %.4g)", f->bandwidth / 1e9,
			 unclamped_bw / 1e9);
	else
		snprintf(bw, bw_len, "bandwidth %.4g GB/s", f->bandwidth / 1e9);
}

void nccltests_protocols_text(const nccltests_calib_class *k, char *buf, size_t len)
{
	size_t at = 0;
	if (len)
		buf[0] = '\0';
	for (int pr = 0; pr < CONFIG_CAL_ENTRIES && at < len; pr++) {
		if (!k->proto_fitted[pr])
			continue;
		const nccltests_fit *f = &k->proto_fit[pr];
		char lat[64], bw[96];
		nccltests_fit_text(f, k->proto_unclamped_bw[pr], lat, sizeof lat, bw, sizeof bw);
		int w = snprintf(buf + at, len - at, "%s%s %s%s, %s%s (largest error %.1f%% over %d points)", at ? "; " : "",
				 entry_names[pr], lat, k->proto_kept_latency[pr] ? "" : " (not kept)", bw,
				 k->proto_kept_bw[pr] ? "" : " (not kept)", f->max_rel * 100, f->n_points);
		if (w < 0)
			break;
		at += (size_t)w;
	}
}
