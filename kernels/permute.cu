/* Layout permutes around the sequence-parallel all-to-alls (kernels.h for the layouts):
 * token-sharded <-> all-to-all buffer <-> head-sharded. Memory-bound copies, one thread
 * per VEC contiguous elements of the destination; VEC = 8 (16-byte vectors) when rows and
 * pointers allow, else 1. Same index arithmetic as kernels_cpu_permute(). */
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "kernels.h"

typedef struct permute_params {
	int dir;
	size_t P, nseq, t, Hp, rep, Htok, d, ld;
} permute_params;

template <int VEC> struct vec_of;
template <> struct vec_of<8> {
	typedef uint4 type;
};
template <> struct vec_of<1> {
	typedef uint16_t type;
};

__device__ static inline float bf16_bits_to_f32(uint16_t b) { return __uint_as_float((uint32_t)b << 16); }

template <int VEC>
__global__ void permute_kernel(permute_params p, const uint16_t *src, uint16_t *dst, size_t nvec)
{
	typedef typename vec_of<VEC>::type V;
	for (size_t v = (size_t)blockIdx.x * blockDim.x + threadIdx.x; v < nvec; v += (size_t)gridDim.x * blockDim.x) {
		size_t e = v * VEC; /* first destination element, in the destination's dense index space */
		const size_t c = e % p.d;
		e /= p.d;
		if (p.dir == KERNELS_TOK_UNPACK) {
			/* dense space [nseq][t][Htok] x d */
			const size_t ht = e % p.Htok, i = (e / p.Htok) % p.t, s = e / (p.Htok * p.t);
			uint16_t *to = dst + (s * p.t + i) * p.ld + ht * p.d + c;
			if (p.rep == 1) {
				const size_t j = ht / p.Hp, hh = ht % p.Hp;
				*(V *)to = *(const V *)(src + (((j * p.nseq + s) * p.t + i) * p.Hp + hh) * p.d + c);
				continue;
			}
			/* The gradient of replication: sum the replicas in fp32, in replica order. */
			float acc[VEC];
			for (int x = 0; x < VEC; x++)
				acc[x] = 0.0f;
			for (size_t r = 0; r < p.rep; r++) {
				const size_t hg = ht * p.rep + r, j = hg / p.Hp, hh = hg % p.Hp;
				const uint16_t *from = src + (((j * p.nseq + s) * p.t + i) * p.Hp + hh) * p.d + c;
				for (int x = 0; x < VEC; x++)
					acc[x] += bf16_bits_to_f32(from[x]);
			}
			for (int x = 0; x < VEC; x++) {
				to[x] = __bfloat16_as_ushort(__float2bfloat16_rn(acc[x]));
			}
			continue;
		}
		const uint16_t *from;
		uint16_t *to;
		if (p.dir == KERNELS_TOK_PACK || p.dir == KERNELS_HEAD_PACK) {
			/* destination: buffer [P][nseq][t][Hp] x d */
			const size_t hh = e % p.Hp, i = (e / p.Hp) % p.t, s = (e / (p.Hp * p.t)) % p.nseq,
				     j = e / (p.Hp * p.t * p.nseq);
			to = dst + v * VEC;
			if (p.dir == KERNELS_TOK_PACK)
				from = src + (s * p.t + i) * p.ld + ((j * p.Hp + hh) / p.rep) * p.d + c;
			else
				from = src + ((s * p.P * p.t + j * p.t + i) * p.Hp + hh) * p.d + c;
		} else {
			/* HEAD_UNPACK, destination: head-sharded [nseq][P·t][Hp] x d */
			const size_t hh = e % p.Hp, tok = (e / p.Hp) % (p.P * p.t), s = e / (p.Hp * p.P * p.t);
			const size_t j = tok / p.t, i = tok % p.t;
			to = dst + v * VEC;
			from = src + (((j * p.nseq + s) * p.t + i) * p.Hp + hh) * p.d + c;
		}
		*(V *)to = *(const V *)from;
	}
}

extern "C" int kernels_cuda_permute(const kernels_permute *kp, const void *src, void *dst, void *stream)
{
	if (kernels_permute_check(kp))
		return (int)cudaErrorInvalidValue;
	permute_params p;
	p.dir = (int)kp->dir;
	p.P = (size_t)kp->peers;
	p.nseq = (size_t)kp->nseq;
	p.t = (size_t)kp->tokens;
	p.Hp = (size_t)(kp->heads / kp->peers);
	p.rep = (size_t)kp->rep;
	p.Htok = (size_t)(kp->heads / kp->rep);
	p.d = (size_t)kp->head_dim;
	p.ld = kp->ld ? (size_t)kp->ld : p.Htok * p.d;
	/* Destination elements in its dense index space. */
	const size_t n = kp->dir == KERNELS_TOK_UNPACK ? p.nseq * p.t * p.Htok * p.d : kernels_permute_buffer_elems(kp);
	const bool vec8 = p.d % 8 == 0 && p.ld % 8 == 0 && (uintptr_t)src % 16 == 0 && (uintptr_t)dst % 16 == 0;
	const size_t nvec = vec8 ? n / 8 : n;
	const size_t want = (nvec + 255) / 256;
	const unsigned blocks = (unsigned)(want < 65535 * 8 ? (want ? want : 1) : 65535 * 8);
	cudaStream_t st = (cudaStream_t)stream;
	if (vec8)
		permute_kernel<8><<<blocks, 256, 0, st>>>(p, (const uint16_t *)src, (uint16_t *)dst, nvec);
	else
		permute_kernel<1><<<blocks, 256, 0, st>>>(p, (const uint16_t *)src, (uint16_t *)dst, nvec);
	return (int)cudaGetLastError();
}
