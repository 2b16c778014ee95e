/* GEMMs through cuBLAS (cublasGemmEx, bf16 operands, fp32 compute). The row-major product
 * C = op(A)·op(B) is computed as the column-major product Cᵀ = op(B)ᵀ·op(A)ᵀ: a row-major
 * matrix with row stride ld is the column-major transpose with leading dimension ld, so
 * the operands swap places and keep their transpose flags. */
#include <cublas_v2.h>

#include "kernels.h"

int kernels_cuda_gemm(void *cublas_handle, const kernels_gemm *g, const void *a, const void *b, void *c)
{
	if (kernels_gemm_check(g))
		return (int)CUBLAS_STATUS_INVALID_VALUE;
	const float alpha = g->alpha, beta = g->beta;
	return (int)cublasGemmEx((cublasHandle_t)cublas_handle, g->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
				 g->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, (int)g->n, (int)g->m, (int)g->k, &alpha, b,
				 CUDA_R_16BF, (int)g->ldb, a, CUDA_R_16BF, (int)g->lda, &beta, c, CUDA_R_16BF,
				 (int)g->ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}
