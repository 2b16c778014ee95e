/* What-ifs: asymmetric changes to a run (a slow GPU or node, a degraded link, a failed
 * node), parsed from flags or a job file's `what_if:` key and checked against the
 * platform. The SimGrid engine applies them (engine/simgrid); docs/simgrid.md "What-ifs"
 * says what each models. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "config/ranges.h"
#include "config/yamltree.h"

const char *const config_whatif_flags[CONFIG_WHATIF_KINDS] = {"slow-gpu", "slow-node", "degrade", "fail-node",
							       "background"};
static const char *const yaml_keys[CONFIG_WHATIF_KINDS + 1] = {"slow_gpu",  "slow_node", "degrade",
							       "fail_node", "background", NULL};

static const char *const expected[CONFIG_WHATIF_KINDS] = {
	"RANK:FACTOR, e.g. 3:1.5 (world rank 3 computes 1.5x slower)",
	"NODE:FACTOR, e.g. 0:2 (every GPU of node 0 computes 2x slower)",
	"LINK:FACTOR with LINK nic:NODE, nic:NODE.I, nvlink:NODE.GPU, nvlink:NODE.A-B or leaf:L, e.g. nic:0.1:2",
	"NODE, a node index from 0, e.g. 3",
	"SIZE:PERIOD:NODES, e.g. 1GiB:100ms:4-7 (a ring all-reduce of 1 GiB every 100 ms over nodes 4 to 7)",
};

/* What a what-if's text must be; kinds with a FACTOR add its range from the ranges table
 * (one place for the bound, so the message cannot drift from the check). */
static const char *expect_text(config_whatif_kind kind, char *buf, size_t len)
{
	if (kind == CONFIG_WHATIF_FAIL_NODE || kind == CONFIG_WHATIF_BACKGROUND)
		return expected[kind];
	char range[96];
	snprintf(buf, len, "%s; FACTOR %s", expected[kind],
		 config_range_expect(CONFIG_R_WHATIF_FACTOR, range, sizeof range));
	return buf;
}

/* A non-negative integer at *s; advances *s. */
static bool read_index(const char **s, int *out)
{
	if (**s < '0' || **s > '9')
		return false;
	errno = 0;
	char *end;
	long v = strtol(*s, &end, 10);
	if (errno || v > INT_MAX)
		return false;
	*out = (int)v;
	*s = end;
	return true;
}

/* A factor from the ranges table (the flags and the what_if: key read the same row). */
static bool read_factor(const char *s, double *out)
{
	config_error e;
	return config_range_parse(CONFIG_R_WHATIF_FACTOR, NULL, s, out, &e);
}

/* "SIZE:PERIOD:A-B". On failure err says which part is wrong and what it must be. */
static bool parse_background(const char *text, config_whatif_item *it, config_error *err)
{
	const char *flag = config_whatif_flags[CONFIG_WHATIF_BACKGROUND];
	char buf[128];
	char *c1 = strlen(text) < sizeof buf ? strchr(strcpy(buf, text), ':') : NULL;
	char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	if (!c2 || strchr(c2 + 1, ':'))
		return config_fail(err, "--%s '%.200s': expected %s", flag, text, expected[CONFIG_WHATIF_BACKGROUND]);
	*c1 = *c2 = '\0';
	config_error e;
	if (!config_range_parse(CONFIG_R_BACKGROUND_SIZE, NULL, buf, &it->bytes, &e) ||
	    !config_range_parse(CONFIG_R_BACKGROUND_PERIOD, NULL, c1 + 1, &it->period, &e))
		return config_fail(err, "--%s '%.200s': %s (SIZE:PERIOD:NODES, e.g. 1GiB:100ms:4-7)", flag, text, e.msg);
	const char *s = c2 + 1;
	if (!read_index(&s, &it->node) || *s++ != '-' || !read_index(&s, &it->last) || *s || it->last <= it->node)
		return config_fail(err,
				   "--%s '%.200s': nodes '%s' must be A-B, the first and last node of the ring with "
				   "A < B (a ring needs two nodes), e.g. 4-7",
				   flag, text, c2 + 1);
	return true;
}

static bool parse_link(const char **s, config_whatif_item *it)
{
	const char *p = *s;
	it->a = it->b = -1;
	if (strncmp(p, "nic:", 4) == 0) {
		it->link = CONFIG_LINK_NIC;
		p += 4;
		if (!read_index(&p, &it->node))
			return false;
		if (*p == '.') {
			p++;
			if (!read_index(&p, &it->a))
				return false;
		}
	} else if (strncmp(p, "nvlink:", 7) == 0) {
		it->link = CONFIG_LINK_NVLINK;
		p += 7;
		if (!read_index(&p, &it->node) || *p++ != '.' || !read_index(&p, &it->a))
			return false;
		if (*p == '-') {
			p++;
			if (!read_index(&p, &it->b) || it->b == it->a)
				return false;
			if (it->b < it->a) {
				int t = it->a;
				it->a = it->b;
				it->b = t;
			}
		}
	} else if (strncmp(p, "leaf:", 5) == 0) {
		it->link = CONFIG_LINK_LEAF;
		p += 5;
		if (!read_index(&p, &it->node))
			return false;
	} else {
		return false;
	}
	*s = p;
	return true;
}

bool config_whatif_add(config_whatif *w, config_whatif_kind kind, const char *text, config_error *err)
{
	const char *flag = config_whatif_flags[kind];
	if (w->n >= CONFIG_MAX_WHATIF)
		return config_fail(err, "--%s: at most %d what-ifs in one run", flag, CONFIG_MAX_WHATIF);
	config_whatif_item it = {.kind = kind, .a = -1, .b = -1, .factor = 1};
	const char *s = text;
	bool ok;
	switch (kind) {
	case CONFIG_WHATIF_SLOW_GPU:
	case CONFIG_WHATIF_SLOW_NODE:
		ok = read_index(&s, kind == CONFIG_WHATIF_SLOW_GPU ? &it.rank : &it.node) && *s == ':' &&
		     read_factor(s + 1, &it.factor);
		break;
	case CONFIG_WHATIF_DEGRADE: ok = parse_link(&s, &it) && *s == ':' && read_factor(s + 1, &it.factor); break;
	case CONFIG_WHATIF_FAIL_NODE: ok = read_index(&s, &it.node) && *s == '\0'; break;
	case CONFIG_WHATIF_BACKGROUND:
		if (!parse_background(text, &it, err))
			return false;
		ok = true;
		break;
	default: ok = false;
	}
	char buf[256];
	if (!ok)
		return config_fail(err, "--%s '%.200s': expected %s", flag, text, expect_text(kind, buf, sizeof buf));
	if (strlen(text) < sizeof it.text)
		strcpy(it.text, text);
	w->item[w->n++] = it;
	return true;
}

/* Exact (15 significant digits: what a double parsed from the flag holds), so that the
 * text reads back as the same what-if: %g wrote 1GiB as 1.07374e+09B. */
void config_whatif_format(const config_whatif_item *it, char *buf, size_t len)
{
	const char *flag = config_whatif_flags[it->kind];
	switch (it->kind) {
	case CONFIG_WHATIF_SLOW_GPU: snprintf(buf, len, "%s %d:%.15g", flag, it->rank, it->factor); return;
	case CONFIG_WHATIF_SLOW_NODE: snprintf(buf, len, "%s %d:%.15g", flag, it->node, it->factor); return;
	case CONFIG_WHATIF_FAIL_NODE: snprintf(buf, len, "%s %d", flag, it->node); return;
	case CONFIG_WHATIF_BACKGROUND:
		snprintf(buf, len, "%s %.15gB:%.15gs:%d-%d", flag, it->bytes, it->period, it->node, it->last);
		return;
	case CONFIG_WHATIF_DEGRADE: break;
	}
	char link[64];
	if (it->link == CONFIG_LINK_LEAF)
		snprintf(link, sizeof link, "leaf:%d", it->node);
	else if (it->link == CONFIG_LINK_NIC && it->a < 0)
		snprintf(link, sizeof link, "nic:%d", it->node);
	else if (it->link == CONFIG_LINK_NIC)
		snprintf(link, sizeof link, "nic:%d.%d", it->node, it->a);
	else if (it->b < 0)
		snprintf(link, sizeof link, "nvlink:%d.%d", it->node, it->a);
	else
		snprintf(link, sizeof link, "nvlink:%d.%d-%d", it->node, it->a, it->b);
	snprintf(buf, len, "%s %s:%.15g", flag, link, it->factor);
}

void config_whatif_label(const config_whatif_item *it, char *buf, size_t len)
{
	if (it->text[0])
		snprintf(buf, len, "%s %s", config_whatif_flags[it->kind], it->text);
	else
		config_whatif_format(it, buf, len);
}

bool config_whatif_node_failed(const config_whatif *w, int node)
{
	for (int i = 0; w && i < w->n; i++)
		if (w->item[i].kind == CONFIG_WHATIF_FAIL_NODE && w->item[i].node == node)
			return true;
	return false;
}

int config_whatif_failed_nodes(const config_whatif *w, int nodes)
{
	int n = 0;
	for (int u = 0; u < nodes; u++)
		n += config_whatif_node_failed(w, u);
	return n;
}

bool config_whatif_check(const config_whatif *w, const config_platform *p, int world, config_error *err)
{
	int G = p->gpus_per_node, N = p->nodes;
	if (world <= 0)
		world = config_platform_gpus(p);
	bool mesh = p->intra.fabric == CONFIG_FABRIC_NVLINK_MESH;
	int leaves = p->inter.topology == CONFIG_TOPO_FAT_TREE && p->inter.nodes_per_leaf > 0 &&
				     N > p->inter.nodes_per_leaf
			     ? N / p->inter.nodes_per_leaf
			     : 0;
	for (int i = 0; w && i < w->n; i++) {
		const config_whatif_item *it = &w->item[i];
		char what[96];
		config_whatif_label(it, what, sizeof what);
		switch (it->kind) {
		case CONFIG_WHATIF_SLOW_GPU:
			if (it->rank >= world)
				return config_fail(err, "--%s: rank %d does not exist: the job has ranks 0 to %d", what,
						   it->rank, world - 1);
			break;
		case CONFIG_WHATIF_SLOW_NODE:
		case CONFIG_WHATIF_FAIL_NODE:
			if (it->node >= N)
				return config_fail(err, "--%s: node %d does not exist: platform '%s' has nodes 0 to %d",
						   what, it->node, p->name, N - 1);
			break;
		case CONFIG_WHATIF_BACKGROUND:
			if (it->last >= N)
				return config_fail(err, "--%s: node %d does not exist: platform '%s' has nodes 0 to %d",
						   what, it->last, p->name, N - 1);
			if (p->inter.nics_per_node < 1)
				return config_fail(err, "--%s: platform '%s' has no NIC to carry it", what, p->name);
			break;
		case CONFIG_WHATIF_DEGRADE:
			if (it->link == CONFIG_LINK_LEAF) {
				if (it->node >= leaves)
					return leaves == 0 ? config_fail(err,
									 "--%s: platform '%s' has no leaf uplinks (they exist on a "
									 "fat-tree with more nodes than nodes_per_leaf)",
									 what, p->name)
							   : config_fail(err, "--%s: leaf %d does not exist: platform '%s' has "
									      "leaves 0 to %d",
									 what, it->node, p->name, leaves - 1);
				break;
			}
			if (it->node >= N)
				return config_fail(err, "--%s: node %d does not exist: platform '%s' has nodes 0 to %d",
						   what, it->node, p->name, N - 1);
			if (it->link == CONFIG_LINK_NIC) {
				int nics = config_platform_nics_of(p, it->node); /* node groups may differ */
				if (it->a >= nics)
					return config_fail(err, "--%s: NIC %d does not exist: node %d of '%s' has NICs 0 to %d",
							   what, it->a, it->node, p->name, nics - 1);
				if (N < 2)
					return config_fail(err, "--%s: platform '%s' has one node: no NIC carries its traffic",
							   what, p->name);
				break;
			}
			if (it->a >= G || it->b >= G)
				return config_fail(err, "--%s: GPU %d does not exist: nodes of '%s' have GPUs 0 to %d", what,
						   it->a >= G ? it->a : it->b, p->name, G - 1);
			if (it->b >= 0 && !mesh)
				return config_fail(err,
						   "--%s: a GPU pair has its own link only on an nvlink-mesh fabric; '%s' is %s: "
						   "degrade the GPU's port nvlink:%d.%d instead",
						   what, p->name, config_fabric_names[p->intra.fabric], it->node, it->a);
			break;
		}
	}
	/* What-ifs on one GPU or link multiply; the product is held to one factor's range, as 1000^k
	 * would leave the step's times beyond a double's precision (30 x 1000 printed a step of
	 * 2e82 years with its all-to-alls at 0.0 us). A --slow-gpu on a slowed node is two
	 * factors, each bounded (10^6 at most). */
	const double fmax = config_range_get(CONFIG_R_WHATIF_FACTOR)->hi;
	for (int i = 0; w && i < w->n; i++) {
		const config_whatif_item *it = &w->item[i];
		double f = it->kind == CONFIG_WHATIF_SLOW_GPU	 ? config_whatif_compute_factor(w, it->rank, -1)
			   : it->kind == CONFIG_WHATIF_SLOW_NODE ? config_whatif_compute_factor(w, -1, it->node)
			   : it->kind == CONFIG_WHATIF_DEGRADE	 ? config_whatif_link_factor(w, it->link, it->node, it->a, it->b)
								 : 1;
		if (f > fmax) {
			char what[96];
			config_whatif_label(it, what, sizeof what);
			return config_fail(err,
					   "--%s: the what-ifs on its %s multiply to a factor of %g, expected at most %g in all "
					   "(what-ifs on the same GPU or link multiply)",
					   what, it->kind == CONFIG_WHATIF_DEGRADE ? "link" : it->kind == CONFIG_WHATIF_SLOW_GPU ? "rank" : "node",
					   f, fmax);
		}
	}
	int failed = config_whatif_failed_nodes(w, N);
	if (failed == N)
		return config_fail(err, "--fail-node: every node of '%s' failed (%d of %d), expected at least one left to run the job",
				   p->name, failed, N);
	if (failed > 0 && world > (N - failed) * G)
		return config_fail(err,
				   "--fail-node: the job no longer fits: it needs %d GPUs, and %d of %d nodes remain "
				   "(%d GPUs); give --gpus %d or fewer",
				   world, N - failed, N, (N - failed) * G, (N - failed) * G);
	return true;
}

double config_whatif_compute_factor(const config_whatif *w, int rank, int node)
{
	double f = 1;
	for (int i = 0; w && i < w->n; i++) {
		const config_whatif_item *it = &w->item[i];
		if ((it->kind == CONFIG_WHATIF_SLOW_GPU && it->rank == rank) ||
		    (it->kind == CONFIG_WHATIF_SLOW_NODE && it->node == node))
			f *= it->factor;
	}
	return f;
}

double config_whatif_link_factor(const config_whatif *w, config_link_kind link, int node, int a, int b)
{
	double f = 1;
	for (int i = 0; w && i < w->n; i++) {
		const config_whatif_item *it = &w->item[i];
		if (it->kind != CONFIG_WHATIF_DEGRADE || it->link != link || it->node != node)
			continue;
		bool hit;
		switch (link) {
		case CONFIG_LINK_NIC: hit = it->a < 0 || it->a == a; break;
		case CONFIG_LINK_NVLINK:
			/* a GPU's port (b < 0 in the what-if) covers every link of that GPU */
			hit = it->b < 0 ? (it->a == a || it->a == b) : (it->a == a && it->b == b);
			break;
		default: hit = true;
		}
		if (hit)
			f *= it->factor;
	}
	return f;
}

static bool read_entry(const yt_node *v, config_whatif_kind kind, config_whatif *w, config_error *err)
{
	char buf[256];
	if (v->kind != YT_SCALAR)
		return yt_fail(err, v, "'%s' entries must be strings in the flag syntax, expected %s",
			       yaml_keys[kind], expect_text(kind, buf, sizeof buf));
	config_error e;
	if (!config_whatif_add(w, kind, v->value, &e))
		return yt_fail(err, v, "'%s': %s", yaml_keys[kind], e.msg);
	return true;
}

bool config_read_whatif(const yt_node *wi, config_whatif *w, config_error *err)
{
	config_whatif out = *w;
	bool ok = yt_check_keys(wi, yaml_keys, err);
	for (int k = 0; ok && k < CONFIG_WHATIF_KINDS; k++) {
		const yt_node *v = yt_find(wi, yaml_keys[k]);
		if (!v)
			continue;
		if (v->kind == YT_SEQ)
			for (size_t i = 0; ok && i < v->n; i++)
				ok = read_entry(v->items[i], (config_whatif_kind)k, &out, err);
		else
			ok = read_entry(v, (config_whatif_kind)k, &out, err);
	}
	if (ok)
		*w = out;
	return ok;
}

bool config_load_whatif(const char *path, config_whatif *w, config_error *err)
{
	yt_doc *doc;
	if (!yt_load(path, &doc, err))
		return false;
	const yt_node *t, *wi = NULL;
	bool ok = yt_top(doc, "job", &t, err) && yt_map(t, "what_if", false, &wi, err) &&
		  (!wi || config_read_whatif(wi, w, err));
	yt_free(doc);
	return ok;
}

bool config_whatif_parse_spec(config_whatif *w, const char *spec, config_error *err)
{
	config_whatif out = *w;
	char buf[256];
	if (strlen(spec) >= sizeof buf || !*spec)
		return config_fail(err, "--what-if '%.200s': expected KIND=VALUE[+KIND=VALUE...] with KIND slow-gpu, "
					"slow-node, degrade, fail-node or background, e.g. slow-gpu=3:2+degrade=nic:0:2",
				   spec);
	size_t n = strlen(spec);
	if (spec[0] == '+' || spec[n - 1] == '+' || strstr(spec, "++")) /* strtok would skip it: a column without what-if */
		return config_fail(err, "--what-if '%.200s' has an empty item, expected KIND=VALUE items joined by single '+'",
				   spec);
	strcpy(buf, spec);
	char *save = NULL;
	for (char *tok = strtok_r(buf, "+", &save); tok; tok = strtok_r(NULL, "+", &save)) {
		char *eq = strchr(tok, '=');
		int kind = -1;
		if (eq) {
			*eq = '\0';
			for (int k = 0; k < CONFIG_WHATIF_KINDS; k++)
				if (strcmp(tok, config_whatif_flags[k]) == 0 || strcmp(tok, yaml_keys[k]) == 0)
					kind = k;
		}
		if (kind < 0)
			return config_fail(err, "--what-if '%.200s': '%.60s' is not KIND=VALUE with KIND slow-gpu, "
						"slow-node, degrade, fail-node or background",
					   spec, tok);
		if (!config_whatif_add(&out, (config_whatif_kind)kind, eq + 1, err))
			return false;
	}
	*w = out;
	return true;
}
