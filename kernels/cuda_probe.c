/* Is there an NVIDIA device here (kernels.h, kernels_cuda_probe)? */
#include <dlfcn.h>
#include <stdio.h>

#include <cuda_runtime_api.h>

#include "kernels.h"

int kernels_cuda_probe(int *count, char *msg, size_t len)
{
	*count = 0;
	cudaError_t e = cudaGetDeviceCount(count);
	if (e == cudaSuccess && *count > 0)
		return KERNELS_PROBE_OK;
	if (e == cudaSuccess || e == cudaErrorNoDevice) {
		snprintf(msg, len, "no NVIDIA device (%s)", e == cudaSuccess ? "0 devices visible" : cudaGetErrorString(e));
		return KERNELS_PROBE_NO_DEVICE;
	}
	/* Without any NVIDIA driver the runtime also says "insufficient driver"; only when
	 * the driver library itself is missing is that "no device" rather than a mismatch. */
	void *driver = e == cudaErrorInsufficientDriver ? dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL) : NULL;
	if (e == cudaErrorInsufficientDriver && !driver) {
		snprintf(msg, len, "no NVIDIA device (no NVIDIA driver installed: libcuda.so.1 not found)");
		return KERNELS_PROBE_NO_DEVICE;
	}
	if (driver)
		dlclose(driver);
	snprintf(msg, len, "CUDA initialisation failed: %s (%s)", cudaGetErrorString(e), cudaGetErrorName(e));
	return KERNELS_PROBE_ERROR;
}
