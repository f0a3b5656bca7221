package dev.panamax.collectives.internal.device;

import dev.panamax.cuda.CudaContext;
import dev.panamax.cuda.CudaStream;
import dev.panamax.cuda.DeviceMemory;
import dev.panamax.cuda.ReductionKernels;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

/** {@link CudaDeviceOps.Kernels} by the cuda module's {@link ReductionKernels}. */
final class CudaKernels implements CudaDeviceOps.Kernels {
    private final ReductionKernels kernels;

    private CudaKernels(ReductionKernels kernels) {
        this.kernels = kernels;
    }

    /** Loads the kernels' module into {@code context}; closed with the returned object. */
    static CudaDeviceOps.Kernels load(CudaContext context) {
        return new CudaKernels(ReductionKernels.load(context));
    }

    @Override
    public void reduce(ReduceOp op, DataType type, DeviceMemory inout, DeviceMemory in, long count, CudaStream stream) {
        kernels.reduce(op, type, inout, in, count, stream);
    }

    @Override
    public void divide(DataType type, DeviceMemory inout, long count, int divisor, CudaStream stream) {
        kernels.divide(type, inout, count, divisor, stream);
    }

    @Override
    public void close() {
        kernels.close();
    }
}
