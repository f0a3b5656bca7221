package dev.panamax.collectives.internal;

import dev.panamax.cuda.CudaContext;

/** The GPU reduction kernels for {@link CudaDeviceOps}. */
final class CudaKernels {
    private CudaKernels() {
    }

    static CudaDeviceOps.Kernels load(CudaContext context) {
        throw new UnsupportedOperationException("the GPU reduction kernels (dev.panamax.cuda.ReductionKernels) are not in this build");
    }
}
