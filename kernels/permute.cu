/* Layout permutes around the sequence-parallel all-to-alls (kernels.h for the layouts):
 * token-sharded <-> all-to-all buffer <-> head-sharded. Memory-bound copies, one thread
 * per VEC contiguous elements of the destination; VEC = 8 (16-byte vectors) when rows and
 * pointers allow, else 1. Same index arithmetic as kernels_cpu_permute().
 *
 * Index type I: 32-bit whenever every index of source and destination fits (all shapes a
 * rank holds in practice: 2^32 bf16 elements are 8 GiB), 64-bit otherwise. A 64-bit
 * division is a multi-instruction software routine on NVIDIA GPUs while a 32-bit one by a
 * kernel-argument divisor is a short multiply-shift sequence (CUDA C++ Best Practices
 * Guide, "Integer Division and Modulo Operations"); with a handful of divisions per
 * 16-byte vector, 64-bit indices keep the copy well short of HBM bandwidth. */
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "kernels.h"

template <typename I> struct permute_params {
	int dir;
	I P, nseq, t, Hp, rep, Htok, d, ld;
};

template <int VEC> struct vec_of;
template <> struct vec_of<8> {
	typedef uint4 type;
};
template <> struct vec_of<1> {
	typedef uint16_t type;
};

__device__ static inline float bf16_bits_to_f32(uint16_t b) { return __uint_as_float((uint32_t)b << 16); }

template <int VEC, typename I>
__global__ void permute_kernel(permute_params<I> p, const uint16_t *src, uint16_t *dst, I nvec)
{
	typedef typename vec_of<VEC>::type V;
	for (I v = (I)blockIdx.x * blockDim.x + threadIdx.x; v < nvec; v += (I)gridDim.x * blockDim.x) {
		I e = v * VEC; /* first destination element, in the destination's dense index space */
		const I c = e % p.d;
		e /= p.d;
		if (p.dir == KERNELS_TOK_UNPACK) {
			/* dense space [nseq][t][Htok] x d */
			const I ht = e % p.Htok, i = (e / p.Htok) % p.t, s = e / (p.Htok * p.t);
			uint16_t *to = dst + (s * p.t + i) * p.ld + ht * p.d + c;
			if (p.rep == 1) {
				const I j = ht / p.Hp, hh = ht % p.Hp;
				*(V *)to = *(const V *)(src + (((j * p.nseq + s) * p.t + i) * p.Hp + hh) * p.d + c);
				continue;
			}
			/* The gradient of replication: sum the replicas in fp32, in replica order. */
			float acc[VEC];
			for (int x = 0; x < VEC; x++)
				acc[x] = 0.0f;
			for (I r = 0; r < p.rep; r++) {
				const I hg = ht * p.rep + r, j = hg / p.Hp, hh = hg % p.Hp;
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
			const I hh = e % p.Hp, i = (e / p.Hp) % p.t, s = (e / (p.Hp * p.t)) % p.nseq,
				     j = e / (p.Hp * p.t * p.nseq);
			to = dst + v * VEC;
			if (p.dir == KERNELS_TOK_PACK)
				from = src + (s * p.t + i) * p.ld + ((j * p.Hp + hh) / p.rep) * p.d + c;
			else
				from = src + ((s * p.P * p.t + j * p.t + i) * p.Hp + hh) * p.d + c;
		} else {
			/* HEAD_UNPACK, destination: head-sharded [nseq][P·t][Hp] x d */
			const I hh = e % p.Hp, tok = (e / p.Hp) % (p.P * p.t), s = e / (p.Hp * p.P * p.t);
			const I j = tok / p.t, i = tok % p.t;
			to = dst + v * VEC;
			from = src + (((j * p.nseq + s) * p.t + i) * p.Hp + hh) * p.d + c;
		}
		*(V *)to = *(const V *)from;
	}
}

template <typename I>
static void launch(const kernels_permute *kp, const void *src, void *dst, cudaStream_t st)
{
	permute_params<I> p;
	p.dir = (int)kp->dir;
	p.P = (I)kp->peers;
	p.nseq = (I)kp->nseq;
	p.t = (I)kp->tokens;
	p.Hp = (I)(kp->heads / kp->peers);
	p.rep = (I)kp->rep;
	p.Htok = (I)(kp->heads / kp->rep);
	p.d = (I)kp->head_dim;
	p.ld = kp->ld ? (I)kp->ld : p.Htok * p.d;
	/* Destination elements in its dense index space. */
	const I n = kp->dir == KERNELS_TOK_UNPACK ? p.nseq * p.t * p.Htok * p.d : (I)kernels_permute_buffer_elems(kp);
	const bool vec8 = p.d % 8 == 0 && p.ld % 8 == 0 && (uintptr_t)src % 16 == 0 && (uintptr_t)dst % 16 == 0;
	const I nvec = vec8 ? n / 8 : n;
	const size_t want = ((size_t)nvec + 255) / 256;
	const unsigned blocks = (unsigned)(want < 65535 * 8 ? (want ? want : 1) : 65535 * 8);
	if (vec8)
		permute_kernel<8, I><<<blocks, 256, 0, st>>>(p, (const uint16_t *)src, (uint16_t *)dst, nvec);
	else
		permute_kernel<1, I><<<blocks, 256, 0, st>>>(p, (const uint16_t *)src, (uint16_t *)dst, nvec);
}

extern "C" int kernels_cuda_permute(const kernels_permute *kp, const void *src, void *dst, void *stream)
{
	if (kernels_permute_check(kp))
		return (int)cudaErrorInvalidValue;
	/* The largest index either side reaches: the buffer, or the token side's rows of ld
	 * (plus the grid-stride loop's last step, which stays below 2^32 when these are below
	 * 2^31). */
	const size_t htok = (size_t)(kp->heads / kp->rep) * (size_t)kp->head_dim;
	const size_t ld = kp->ld ? (size_t)kp->ld : htok;
	const size_t tok_side = (size_t)kp->nseq * (size_t)kp->tokens * ld;
	const size_t buf = kernels_permute_buffer_elems(kp);
	const size_t most = tok_side > buf ? tok_side : buf;
	if (most < ((size_t)1 << 31))
		launch<uint32_t>(kp, src, dst, (cudaStream_t)stream);
	else
		launch<size_t>(kp, src, dst, (cudaStream_t)stream);
	return (int)cudaGetLastError();
}
