// Checks that the emulation is as strict as cuda_emulation.cpp and nccl_emulation.cpp say: the Java
// tests passing against it mean something only if the mistakes below fail here. Run by
// scripts/gpu/cuda-emulation-tests before the Java tests: emulation_check PATH/TO/reduce.ptx
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "cuda_driver.h"
extern "C" {
#include "nccl.h"
}

namespace {

int failures = 0;

void expect(bool ok, const char* what) {
    if (!ok) {
        failures++;
        fprintf(stderr, "FAIL %s\n", what);
    }
}

void expectRc(CUresult got, CUresult want, const char* what) {
    if (got != want) {
        failures++;
        fprintf(stderr, "FAIL %s: CUresult %d, expected %d\n", what, got, want);
    }
}

std::string readFile(const char* path) {
    std::string text;
    FILE* f = fopen(path, "rb");
    if (f == nullptr) return text;
    char buffer[65536];
    size_t n;
    while ((n = fread(buffer, 1, sizeof buffer, f)) > 0) text.append(buffer, n);
    fclose(f);
    return text;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: emulation_check reduce.ptx\n");
        return 2;
    }
    int count = 0;
    expectRc(cuDeviceGetCount(&count), CUDA_ERROR_NOT_INITIALIZED, "calls before cuInit");
    expectRc(cuInit(0), CUDA_SUCCESS, "cuInit");
    CUdevice dev;
    expectRc(cuDeviceGet(&dev, 1), CUDA_ERROR_INVALID_DEVICE, "device 1 of 1");
    expectRc(cuDeviceGet(&dev, 0), CUDA_SUCCESS, "cuDeviceGet(0)");
    CUdeviceptr d = 0;
    expectRc(cuMemAlloc_v2(&d, 4096), CUDA_ERROR_INVALID_CONTEXT, "cuMemAlloc_v2 without a current context");
    CUcontext ctx;
    expectRc(cuDevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS, "cuDevicePrimaryCtxRetain");
    expectRc(cuCtxSetCurrent(ctx), CUDA_SUCCESS, "cuCtxSetCurrent");

    // Copies check their pointers; frees happen once.
    const size_t n = 1 << 20;
    expectRc(cuMemAlloc_v2(&d, n), CUDA_SUCCESS, "cuMemAlloc_v2");
    std::vector<unsigned char> host(n, 1), back(n, 0);
    expectRc(cuMemcpyHtoD_v2(d, host.data(), n + 1), CUDA_ERROR_INVALID_VALUE, "a copy past the allocation");
    expectRc(cuMemcpyHtoD_v2(d + 1, host.data(), n), CUDA_ERROR_INVALID_VALUE, "a copy past the end");
    expectRc(cuMemcpyHtoD_v2(d, reinterpret_cast<void*>(d), 16), CUDA_ERROR_INVALID_VALUE,
             "a device address as host source");
    expectRc(cuMemcpyDtoH_v2(reinterpret_cast<void*>(d), d, 16), CUDA_ERROR_INVALID_VALUE,
             "a device address as host destination");
    expectRc(cuMemcpyDtoD_v2(d, reinterpret_cast<CUdeviceptr>(host.data()), 16), CUDA_ERROR_INVALID_VALUE,
             "a host address as device source");
    CUdeviceptr base = 0;
    size_t size = 0;
    expectRc(cuMemGetAddressRange_v2(&base, &size, d + 100), CUDA_SUCCESS, "cuMemGetAddressRange_v2");
    expect(base == d && size == n, "the address range of an interior pointer is the allocation");

    // Work is asynchronous: results read before synchronizing are stale.
    CUstream stream;
    expectRc(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS, "cuStreamCreate");
    expectRc(cuMemcpyHtoD_v2(d, host.data(), n), CUDA_SUCCESS, "cuMemcpyHtoD_v2");
    expectRc(cuStreamSynchronize(nullptr), CUDA_SUCCESS, "cuStreamSynchronize(legacy)");
    expectRc(cuMemcpyDtoHAsync_v2(back.data(), d, n, stream), CUDA_SUCCESS, "cuMemcpyDtoHAsync_v2");
    expect(back[0] == 0 && back[n - 1] == 0, "an asynchronous copy has not run when the call returns");
    expectRc(cuStreamQuery(stream), CUDA_ERROR_NOT_READY, "cuStreamQuery with work queued");
    expectRc(cuStreamSynchronize(stream), CUDA_SUCCESS, "cuStreamSynchronize");
    expect(back[0] == 1 && back[n - 1] == 1, "the copy has run after cuStreamSynchronize");
    expectRc(cuMemsetD8_v2(d, 7, n), CUDA_SUCCESS, "cuMemsetD8_v2");
    expectRc(cuStreamQuery(CU_STREAM_LEGACY), CUDA_ERROR_NOT_READY, "a memset returns before it ran");
    expectRc(cuMemcpyDtoH_v2(back.data(), d, n), CUDA_SUCCESS, "cuMemcpyDtoH_v2");
    expect(back[0] == 7 && back[n - 1] == 7, "the synchronous copy to the host waits for the memset before it");

    // Events: timing needs two completed records of timing events.
    CUevent start, end, untimed;
    float ms = 0;
    expectRc(cuEventCreate(&start, CU_EVENT_DEFAULT), CUDA_SUCCESS, "cuEventCreate");
    expectRc(cuEventCreate(&end, CU_EVENT_DEFAULT), CUDA_SUCCESS, "cuEventCreate");
    expectRc(cuEventCreate(&untimed, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS, "cuEventCreate");
    expectRc(cuEventElapsedTime_v2(&ms, start, end), CUDA_ERROR_INVALID_HANDLE, "elapsed time of unrecorded events");
    expectRc(cuEventRecord(start, stream), CUDA_SUCCESS, "cuEventRecord");
    expectRc(cuMemcpyDtoDAsync_v2(d, d + n / 2, n / 2, stream), CUDA_SUCCESS, "cuMemcpyDtoDAsync_v2");
    expectRc(cuEventRecord(end, stream), CUDA_SUCCESS, "cuEventRecord");
    expectRc(cuEventElapsedTime_v2(&ms, start, end), CUDA_ERROR_NOT_READY, "elapsed time of pending events");
    expectRc(cuEventSynchronize(end), CUDA_SUCCESS, "cuEventSynchronize");
    expectRc(cuEventElapsedTime_v2(&ms, start, end), CUDA_SUCCESS, "cuEventElapsedTime_v2");
    expect(ms > 0, "time passes between two events around a copy");
    expectRc(cuEventRecord(untimed, stream), CUDA_SUCCESS, "cuEventRecord");
    expectRc(cuEventSynchronize(untimed), CUDA_SUCCESS, "cuEventSynchronize");
    expectRc(cuEventElapsedTime_v2(&ms, start, untimed), CUDA_ERROR_INVALID_HANDLE, "elapsed time without timing");

    // IPC: a process cannot open its own handle.
    CUipcMemHandle handle;
    CUdeviceptr mapped;
    expectRc(cuIpcGetMemHandle(&handle, d + 16), CUDA_ERROR_INVALID_VALUE, "a handle of an interior pointer");
    expectRc(cuIpcGetMemHandle(&handle, d), CUDA_SUCCESS, "cuIpcGetMemHandle");
    expectRc(cuIpcOpenMemHandle_v2(&mapped, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), CUDA_ERROR_INVALID_CONTEXT,
             "opening a handle in the process that made it");

    // Pinned memory.
    std::vector<unsigned char> page(3 * 4096);
    void* aligned = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(page.data()) + 4095) / 4096 * 4096);
    expectRc(cuMemHostRegister_v2(aligned, 4096, CU_MEMHOSTREGISTER_PORTABLE), CUDA_SUCCESS, "cuMemHostRegister_v2");
    expectRc(cuMemHostRegister_v2(aligned, 4096, CU_MEMHOSTREGISTER_PORTABLE), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
             "registering twice");
    expectRc(cuMemHostUnregister(aligned), CUDA_SUCCESS, "cuMemHostUnregister");
    expectRc(cuMemHostUnregister(aligned), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "unregistering twice");

    // Kernels: the PTX's entries, its .maxntid, and operands checked when the kernel runs.
    std::string ptx = readFile(argv[1]);
    expect(!ptx.empty(), "reading the PTX");
    CUmodule module;
    CUfunction fn;
    expectRc(cuModuleLoadData(&module, ptx.c_str()), CUDA_SUCCESS, "cuModuleLoadData");
    expectRc(cuModuleGetFunction(&fn, module, "panamax_reduce_sum_f33"), CUDA_ERROR_NOT_FOUND, "an unknown kernel");
    expectRc(cuModuleGetFunction(&fn, module, "panamax_reduce_sum_f32"), CUDA_SUCCESS, "cuModuleGetFunction");
    CUdeviceptr in;
    expectRc(cuMemAlloc_v2(&in, n), CUDA_SUCCESS, "cuMemAlloc_v2");
    unsigned long long elements = n / 4;
    void* params[] = {&d, &in, &elements};
    expectRc(cuLaunchKernel(fn, 1, 1, 1, 512, 1, 1, 0, stream, params, nullptr), CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
             "more threads than the kernel's .maxntid");
    expectRc(cuLaunchKernel(fn, 4, 1, 1, 256, 1, 1, 0, stream, params, nullptr), CUDA_SUCCESS, "cuLaunchKernel");
    expectRc(cuStreamSynchronize(stream), CUDA_SUCCESS, "a kernel within its operands");
    expectRc(cuMemFree_v2(in), CUDA_SUCCESS, "cuMemFree_v2");
    expectRc(cuMemFree_v2(in), CUDA_ERROR_INVALID_VALUE, "freeing twice");

    // NCCL: one rank; a non-blocking communicator is in progress before it is ready.
    ncclUniqueId id;
    ncclComm_t comm = nullptr;
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    expect(ncclGetUniqueId(&id) == ncclSuccess, "ncclGetUniqueId");
    expect(ncclCommInitRankConfig(&comm, 2, id, 0, nullptr) == ncclInvalidUsage, "a blocking communicator of 2 ranks");
    expect(ncclCommInitRankConfig(&comm, 1, id, 0, &config) == ncclInProgress, "a non-blocking creation");
    expect(ncclAllReduce(reinterpret_cast<void*>(d), reinterpret_cast<void*>(d), 16, ncclFloat32, ncclSum, comm,
                         stream) == ncclInvalidUsage,
           "a call while the communicator is in progress");
    ncclResult_t state = ncclInProgress;
    for (int i = 0; i < 5000 && state == ncclInProgress; i++) {
        ncclCommGetAsyncError(comm, &state);
        if (state == ncclInProgress) usleep(1000);
    }
    expect(state == ncclSuccess, "the communicator becomes ready");
    expect(ncclAllReduce(host.data(), reinterpret_cast<void*>(d), 16, ncclFloat32, ncclSum, comm, stream) ==
               ncclInvalidArgument,
           "a host buffer");
    expect(ncclSend(reinterpret_cast<void*>(d), 16, ncclFloat32, 0, comm, stream) == ncclInvalidUsage,
           "a send to itself outside a group");
    expect(ncclCommAbort(comm) == ncclSuccess, "ncclCommAbort");

    // An operand past its allocation is found when the kernel runs: a sticky error, as on a device.
    elements = n / 4 + 1;
    expectRc(cuLaunchKernel(fn, 4, 1, 1, 256, 1, 1, 0, stream, params, nullptr), CUDA_SUCCESS,
             "a launch with a bad operand (found when it runs)");
    expectRc(cuStreamSynchronize(stream), CUDA_ERROR_ILLEGAL_ADDRESS, "the kernel's illegal address");
    expectRc(cuMemAlloc_v2(&in, 16), CUDA_ERROR_ILLEGAL_ADDRESS, "the context after an illegal address");
    expectRc(cuDevicePrimaryCtxRelease_v2(dev), CUDA_SUCCESS, "cuDevicePrimaryCtxRelease_v2");
    expectRc(cuMemAlloc_v2(&in, 16), CUDA_ERROR_CONTEXT_IS_DESTROYED, "the released primary context");

    if (failures != 0) {
        fprintf(stderr, "emulation_check: %d failures\n", failures);
        return 1;
    }
    printf("emulation_check: the emulation refuses and delays what it should\n");
    return 0;
}
