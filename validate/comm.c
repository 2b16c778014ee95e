/* Collective sweeps (validate.h): the all-to-all of the world group and of BASP groups
 * (all groups at once, as in training), and the ZeRO collectives over the world group,
 * timed nccl-tests style: warm-up calls, then `iters` back-to-back calls between two
 * timer marks, time = max over ranks of the mean per call. Sizes and bandwidths follow
 * nccl-tests' doc/PERFORMANCE.md. */
#include <stdlib.h>
#include <string.h>

#include "validate.h"

#define SETERR(...)                                         \
	do {                                                \
		if (err && errlen)                          \
			snprintf(err, errlen, __VA_ARGS__); \
	} while (0)

typedef struct sweep {
	validate_transport *t;
	const validate_comm_cfg *cfg;
	void **send, **recv; /* per local rank */
} sweep;

/* nccl-tests' rounding: whole elements per rank. Returns the element count of one call
 * (transport.h's meaning) and sets *bytes to the rounded nccl-tests size. */
static size_t count_of(validate_coll c, size_t size, size_t es, int P, size_t *bytes)
{
	size_t n;
	if (c == VALIDATE_ALLREDUCE) {
		n = size / es;
		*bytes = n * es;
	} else {
		n = size / es / (size_t)P; /* per peer (all-to-all) or per rank (gather/scatter) */
		*bytes = n * (size_t)P * es;
	}
	return n;
}

static int measure(sweep *s, validate_coll c, validate_comm **comms, size_t count, double *time_s)
{
	validate_transport *t = s->t;
	const validate_comm_cfg *cfg = s->cfg;
	int rc = VALIDATE_OK;
	validate_step_begin("comm %s of %zu elements over groups of %d", validate_coll_name(c), count,
			    comms[0] ? comms[0]->size : 0);
	for (int it = 0; it < cfg->warmup && !rc; it++)
		rc = t->ops->coll(t, c, comms, (const void *const *)s->send, s->recv, count, cfg->dtype);
	for (int i = 0; i < t->n_local && !rc; i++)
		rc = t->ops->mark(t, i, 0);
	for (int it = 0; it < cfg->iters && !rc; it++)
		rc = t->ops->coll(t, c, comms, (const void *const *)s->send, s->recv, count, cfg->dtype);
	double worst = 0;
	for (int i = 0; i < t->n_local && !rc; i++) {
		double e;
		if ((rc = t->ops->mark(t, i, 1)) || (rc = t->ops->sync(t, i)) || (rc = t->ops->elapsed(t, i, 0, 1, &e)))
			break;
		worst = e > worst ? e : worst;
	}
	if ((rc = validate_agree(t->launch, rc)) || (rc = t->launch->allreduce_max(t->launch, &worst, 1)))
		return rc;
	*time_s = worst / cfg->iters;
	return VALIDATE_OK;
}

static int run_coll(sweep *s, validate_coll c, validate_comm **comms, int P, size_t max_bytes, validate_comm_emit emit,
		    void *ctx)
{
	const validate_comm_cfg *cfg = s->cfg;
	const size_t es = validate_dtype_size(cfg->dtype);
	validate_comm_point pt = {.coll = c, .group_size = P, .n_groups = s->t->world / P};
	pt.link = validate_transport_groups_intra(s->t, P) ? VALIDATE_LINK_INTRA : VALIDATE_LINK_INTER;
	for (size_t size = cfg->min_bytes; size <= max_bytes; size *= (size_t)cfg->factor) {
		size_t bytes, count = count_of(c, size, es, P, &bytes);
		if (count == 0)
			continue; /* fewer bytes than one element per rank */
		int rc = measure(s, c, comms, count, &pt.time_s);
		if (rc)
			return rc;
		pt.bytes = bytes;
		pt.count = count;
		pt.algbw = pt.time_s > 0 ? (double)bytes / pt.time_s : 0;
		pt.busbw = pt.algbw * validate_busbw_factor(c, P);
		if (emit && (rc = emit(ctx, &pt)))
			return rc;
		if (size > max_bytes / (size_t)cfg->factor)
			break; /* the next step would overflow or pass the end */
	}
	return VALIDATE_OK;
}

int validate_comm_sweep(validate_transport *t, const validate_comm_cfg *cfg, validate_comm_emit emit, void *ctx,
			size_t *capped_bytes, char *err, size_t errlen)
{
	if (cfg->min_bytes < 1 || cfg->max_bytes < cfg->min_bytes || cfg->factor < 2 || cfg->iters < 1 ||
	    cfg->warmup < 0) {
		SETERR("sizes need 1 <= min <= max, a step factor >= 2 and at least one iteration");
		return VALIDATE_EINVAL;
	}
	for (int i = 0; i < cfg->n_group_sizes; i++) {
		int K = cfg->group_sizes[i];
		if (K < 1 || K > t->world || t->world % K != 0) {
			SETERR("group size %d does not divide the %d ranks", K, t->world);
			return VALIDATE_EINVAL;
		}
	}
	/* Device memory: a send and a receive buffer of the largest size on every rank. Cap
	 * the sweep at what fits (with 10% headroom for the library's own buffers). */
	size_t max_bytes = cfg->max_bytes;
	double fits = (double)max_bytes;
	int rc = VALIDATE_OK;
	validate_step_begin("comm: free device memory");
	for (int i = 0; i < t->n_local && !rc; i++) {
		size_t avail;
		if ((rc = t->ops->mem_available(t, i, &avail)))
			break;
		double room = 0.9 * (double)avail / 2;
		fits = room < fits ? room : fits;
	}
	double neg = -fits; /* the smallest room of any process */
	if ((rc = validate_agree(t->launch, rc)) || (rc = t->launch->allreduce_max(t->launch, &neg, 1)))
		return rc;
	while ((double)max_bytes > -neg && max_bytes > cfg->min_bytes)
		max_bytes /= 2;
	if ((double)max_bytes > -neg) {
		SETERR("not even %zu bytes per buffer fit in device memory", cfg->min_bytes);
		return VALIDATE_ENOMEM;
	}
	if (capped_bytes)
		*capped_bytes = max_bytes;

	sweep s = {.t = t, .cfg = cfg};
	s.send = calloc((size_t)t->n_local, sizeof *s.send);
	s.recv = calloc((size_t)t->n_local, sizeof *s.recv);
	validate_comm **groups = calloc((size_t)t->n_local, sizeof *groups);
	int *color = calloc((size_t)t->n_local, sizeof *color);
	if (!s.send || !s.recv || !groups || !color) {
		SETERR("out of host memory");
		rc = VALIDATE_ENOMEM;
		goto out;
	}
	for (int i = 0; i < t->n_local; i++)
		if ((rc = t->ops->alloc(t, i, max_bytes, &s.send[i])) || (rc = t->ops->alloc(t, i, max_bytes, &s.recv[i])) ||
		    (rc = t->ops->zero(t, i, s.send[i], max_bytes)) || (rc = t->ops->zero(t, i, s.recv[i], max_bytes))) {
			SETERR("allocating %zu-byte collective buffers failed", max_bytes);
			goto out;
		}
	if (cfg->alltoall_world && (rc = run_coll(&s, VALIDATE_ALLTOALL, t->world_comm, t->world, max_bytes, emit, ctx)))
		goto out;
	for (int g = 0; g < cfg->n_group_sizes; g++) {
		const int K = cfg->group_sizes[g];
		if (K == t->world && cfg->alltoall_world)
			continue; /* that is the world all-to-all */
		for (int i = 0; i < t->n_local; i++)
			color[i] = (t->first_rank + i) / K;
		if ((rc = t->ops->comm_split(t, t->world_comm, color, groups))) {
			SETERR("splitting into groups of %d failed", K);
			goto out;
		}
		rc = run_coll(&s, VALIDATE_ALLTOALL, groups, K, max_bytes, emit, ctx);
		t->ops->comm_free(t, groups);
		if (rc)
			goto out;
	}
	if (cfg->zero) {
		const validate_coll zc[] = {VALIDATE_ALLGATHER, VALIDATE_REDUCESCATTER, VALIDATE_ALLREDUCE};
		for (int i = 0; i < 3; i++)
			if ((rc = run_coll(&s, zc[i], t->world_comm, t->world, max_bytes, emit, ctx)))
				goto out;
	}
out:
	if (s.send && s.recv)
		for (int i = 0; i < t->n_local; i++) {
			t->ops->release(t, i, s.send[i]);
			t->ops->release(t, i, s.recv[i]);
		}
	free(s.send);
	free(s.recv);
	free(groups);
	free(color);
	return rc;
}
