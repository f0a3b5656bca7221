// The part of the CUDA driver API (cuda.h, CUDA 13) that the emulation implements: the types, the
// constants and the exported functions, with the values and signatures of cuda.h (the same values
// as the generated bindings in bindings/src/main/java/dev/panamax/bindings/cuda/cuda_h.java), so
// that the emulation builds with g++ alone.
#ifndef PANAMAX_CUDA_DRIVER_H
#define PANAMAX_CUDA_DRIVER_H

#include <stddef.h>

#define PANAMAX_CUDA_EXPORT extern "C" __attribute__((visibility("default")))

typedef int CUresult;  // enum cudaError_enum
typedef int CUdevice;
typedef int CUdevice_attribute;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st* CUcontext;
typedef struct CUstream_st* CUstream;
typedef struct CUevent_st* CUevent;
typedef struct CUmod_st* CUmodule;
typedef struct CUfunc_st* CUfunction;

#define CU_IPC_HANDLE_SIZE 64
typedef struct CUipcMemHandle_st {
    char reserved[CU_IPC_HANDLE_SIZE];
} CUipcMemHandle;

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_NO_DEVICE = 100,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_INVALID_IMAGE = 200,
    CUDA_ERROR_INVALID_CONTEXT = 201,
    CUDA_ERROR_MAP_FAILED = 205,
    CUDA_ERROR_NO_BINARY_FOR_GPU = 209,
    CUDA_ERROR_INVALID_PTX = 218,
    CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222,
    CUDA_ERROR_OPERATING_SYSTEM = 304,
    CUDA_ERROR_INVALID_HANDLE = 400,
    CUDA_ERROR_NOT_FOUND = 500,
    CUDA_ERROR_NOT_READY = 600,
    CUDA_ERROR_ILLEGAL_ADDRESS = 700,
    CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701,
    CUDA_ERROR_CONTEXT_IS_DESTROYED = 709,
    CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712,
    CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED = 713,
    CUDA_ERROR_MISALIGNED_ADDRESS = 716,
    CUDA_ERROR_LAUNCH_FAILED = 719,
    CUDA_ERROR_NOT_SUPPORTED = 801,
    CUDA_ERROR_UNKNOWN = 999,
};

enum {
    CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
    CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X = 2,
    CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y = 3,
    CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z = 4,
    CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X = 5,
    CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y = 6,
    CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z = 7,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8,
    CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY = 9,
    CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10,
    CU_DEVICE_ATTRIBUTE_MAX_PITCH = 11,
    CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK = 12,
    CU_DEVICE_ATTRIBUTE_CLOCK_RATE = 13,
    CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT = 14,
    CU_DEVICE_ATTRIBUTE_GPU_OVERLAP = 15,
    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
    CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT = 17,
    CU_DEVICE_ATTRIBUTE_INTEGRATED = 18,
    CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY = 19,
    CU_DEVICE_ATTRIBUTE_COMPUTE_MODE = 20,
    CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS = 31,
    CU_DEVICE_ATTRIBUTE_ECC_ENABLED = 32,
    CU_DEVICE_ATTRIBUTE_PCI_BUS_ID = 33,
    CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID = 34,
    CU_DEVICE_ATTRIBUTE_TCC_DRIVER = 35,
    CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE = 36,
    CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH = 37,
    CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38,
    CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR = 39,
    CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT = 40,
    CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING = 41,
    CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID = 50,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
    CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED = 78,
    CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED = 79,
    CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED = 80,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR = 81,
    CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR = 82,
    CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY = 83,
    CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD = 84,
    CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED = 90,
    CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH = 95,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
    CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED = 99,
    CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 102,
    CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR = 106,
    CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED = 116,
    CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED = 115,
    CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED = 125,
};

#define CU_MEMHOSTALLOC_PORTABLE 0x01
#define CU_MEMHOSTALLOC_DEVICEMAP 0x02
#define CU_MEMHOSTALLOC_WRITECOMBINED 0x04
#define CU_MEMHOSTREGISTER_PORTABLE 0x01
#define CU_MEMHOSTREGISTER_DEVICEMAP 0x02
#define CU_MEMHOSTREGISTER_IOMEMORY 0x04
#define CU_MEMHOSTREGISTER_READ_ONLY 0x08
#define CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS 0x1
#define CU_STREAM_DEFAULT 0x0
#define CU_STREAM_NON_BLOCKING 0x1
#define CU_EVENT_DEFAULT 0x0
#define CU_EVENT_BLOCKING_SYNC 0x1
#define CU_EVENT_DISABLE_TIMING 0x2
#define CU_EVENT_INTERPROCESS 0x4
#define CU_EVENT_WAIT_DEFAULT 0x0
#define CU_STREAM_LEGACY ((CUstream)0x1)
#define CU_STREAM_PER_THREAD ((CUstream)0x2)

PANAMAX_CUDA_EXPORT CUresult cuGetErrorName(CUresult error, const char** pStr);
PANAMAX_CUDA_EXPORT CUresult cuGetErrorString(CUresult error, const char** pStr);
PANAMAX_CUDA_EXPORT CUresult cuInit(unsigned int Flags);
PANAMAX_CUDA_EXPORT CUresult cuDriverGetVersion(int* driverVersion);
PANAMAX_CUDA_EXPORT CUresult cuDeviceGet(CUdevice* device, int ordinal);
PANAMAX_CUDA_EXPORT CUresult cuDeviceGetCount(int* count);
PANAMAX_CUDA_EXPORT CUresult cuDeviceGetName(char* name, int len, CUdevice dev);
PANAMAX_CUDA_EXPORT CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev);
PANAMAX_CUDA_EXPORT CUresult cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice dev);
PANAMAX_CUDA_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev);
PANAMAX_CUDA_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev);
PANAMAX_CUDA_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx);
PANAMAX_CUDA_EXPORT CUresult cuCtxGetCurrent(CUcontext* pctx);
PANAMAX_CUDA_EXPORT CUresult cuCtxGetDevice(CUdevice* device);
PANAMAX_CUDA_EXPORT CUresult cuCtxSynchronize(void);
PANAMAX_CUDA_EXPORT CUresult cuStreamCreate(CUstream* phStream, unsigned int Flags);
PANAMAX_CUDA_EXPORT CUresult cuStreamDestroy_v2(CUstream hStream);
PANAMAX_CUDA_EXPORT CUresult cuStreamSynchronize(CUstream hStream);
PANAMAX_CUDA_EXPORT CUresult cuStreamQuery(CUstream hStream);
PANAMAX_CUDA_EXPORT CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags);
PANAMAX_CUDA_EXPORT CUresult cuEventCreate(CUevent* phEvent, unsigned int Flags);
PANAMAX_CUDA_EXPORT CUresult cuEventDestroy_v2(CUevent hEvent);
PANAMAX_CUDA_EXPORT CUresult cuEventRecord(CUevent hEvent, CUstream hStream);
PANAMAX_CUDA_EXPORT CUresult cuEventSynchronize(CUevent hEvent);
PANAMAX_CUDA_EXPORT CUresult cuEventQuery(CUevent hEvent);
PANAMAX_CUDA_EXPORT CUresult cuEventElapsedTime_v2(float* pMilliseconds, CUevent hStart, CUevent hEnd);
PANAMAX_CUDA_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize);
PANAMAX_CUDA_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr);
PANAMAX_CUDA_EXPORT CUresult cuMemGetInfo_v2(size_t* free, size_t* total);
PANAMAX_CUDA_EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr* pbase, size_t* psize, CUdeviceptr dptr);
PANAMAX_CUDA_EXPORT CUresult cuMemHostAlloc(void** pp, size_t bytesize, unsigned int Flags);
PANAMAX_CUDA_EXPORT CUresult cuMemFreeHost(void* p);
PANAMAX_CUDA_EXPORT CUresult cuMemHostRegister_v2(void* p, size_t bytesize, unsigned int Flags);
PANAMAX_CUDA_EXPORT CUresult cuMemHostUnregister(void* p);
PANAMAX_CUDA_EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount);
PANAMAX_CUDA_EXPORT CUresult cuMemcpyDtoH_v2(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount);
PANAMAX_CUDA_EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount);
PANAMAX_CUDA_EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount,
                                                  CUstream hStream);
PANAMAX_CUDA_EXPORT CUresult cuMemcpyDtoHAsync_v2(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                                                  CUstream hStream);
PANAMAX_CUDA_EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                                                  CUstream hStream);
PANAMAX_CUDA_EXPORT CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N);
PANAMAX_CUDA_EXPORT CUresult cuIpcGetMemHandle(CUipcMemHandle* pHandle, CUdeviceptr dptr);
PANAMAX_CUDA_EXPORT CUresult cuIpcOpenMemHandle_v2(CUdeviceptr* pdptr, CUipcMemHandle handle, unsigned int Flags);
PANAMAX_CUDA_EXPORT CUresult cuIpcCloseMemHandle(CUdeviceptr dptr);
PANAMAX_CUDA_EXPORT CUresult cuModuleLoadData(CUmodule* module, const void* image);
PANAMAX_CUDA_EXPORT CUresult cuModuleUnload(CUmodule hmod);
PANAMAX_CUDA_EXPORT CUresult cuModuleGetFunction(CUfunction* hfunc, CUmodule hmod, const char* name);
PANAMAX_CUDA_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                            unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                                            unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                                            void** kernelParams, void** extra);

// Not part of cuda.h: the NCCL emulation links against this to make sure that the libcuda.so.1 it
// gets is the emulation, not a real driver.
PANAMAX_CUDA_EXPORT int panamax_cuda_emulation(void);

#endif
