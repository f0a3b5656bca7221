/*
 * The cost of CUDA driver calls made from C, the peer of CudaBench's "driver call cost" table (which makes the
 * same calls through FFM): cuCtxGetCurrent and cuStreamQuery on an idle stream (best of 5 runs of CALLS calls),
 * and cuLaunchKernel of panamax_reduce_sum_f32 on one element, one block of 256 threads (best of 5 runs of
 * CALLS / 20 launches, each run ended by cuStreamSynchronize), all in ns per call.
 *   cc -O2 -o driver_calls driver_calls.c -ldl && ./driver_calls reduce.ptx [CALLS]
 * libcuda.so.1 is opened with dlopen, so no CUDA headers or stub libraries are needed to build it; the
 * prototypes below are those of cuda.h (CUDA 13), with handles as opaque pointers and CUresult as int.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int (*cuInit_t)(unsigned int flags);
typedef int (*cuDeviceGet_t)(int *device, int ordinal);
typedef int (*cuDevicePrimaryCtxRetain_t)(void **ctx, int device);
typedef int (*cuCtxSetCurrent_t)(void *ctx);
typedef int (*cuCtxGetCurrent_t)(void **ctx);
typedef int (*cuStreamCreate_t)(void **stream, unsigned int flags);
typedef int (*cuStreamQuery_t)(void *stream);
typedef int (*cuStreamSynchronize_t)(void *stream);
typedef int (*cuModuleLoadData_t)(void **module, const void *image);
typedef int (*cuModuleGetFunction_t)(void **function, void *module, const char *name);
typedef int (*cuMemAlloc_t)(unsigned long long *dptr, size_t bytes);
typedef int (*cuMemsetD8_t)(unsigned long long dptr, unsigned char value, size_t n);
typedef int (*cuLaunchKernel_t)(void *f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                                unsigned int by, unsigned int bz, unsigned int sharedBytes, void *stream,
                                void **params, void **extra);

static void *lib;

static void *sym(const char *name) {
    void *p = dlsym(lib, name);
    if (!p) {
        fprintf(stderr, "driver_calls: dlsym(%s): %s\n", name, dlerror());
        exit(1);
    }
    return p;
}

static void check(int rc, const char *call) {
    if (rc != 0) {
        fprintf(stderr, "driver_calls: %s failed with CUresult %d\n", call, rc);
        exit(1);
    }
}

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

/*
 * Prints the best of 5 runs of the statement after N (it makes the N calls), each run timed as a whole, in ns per
 * call (as CudaBench's best()). Variadic, so that the statement may hold commas.
 */
#define REPORT_BEST_OF_5(LABEL, N, ...)                                 \
    do {                                                                \
        double best_ = 1e300;                                           \
        for (int r_ = 0; r_ < 5; r_++) {                                \
            double t0_ = now_ns();                                      \
            __VA_ARGS__;                                                \
            double t_ = (now_ns() - t0_) / (N);                         \
            best_ = t_ < best_ ? t_ : best_;                            \
        }                                                               \
        printf("  %-40s %8.1f\n", (LABEL), best_);                      \
    } while (0)

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        exit(1);
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = calloc(1, n + 1); /* cuModuleLoadData needs the trailing NUL */
    if (fread(buf, 1, n, f) != (size_t) n) {
        perror(path);
        exit(1);
    }
    fclose(f);
    return buf;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: driver_calls reduce.ptx [calls]\n");
        return 2;
    }
    long calls = argc > 2 ? atol(argv[2]) : 2000000;
    long launches = calls / 20 > 0 ? calls / 20 : 1;
    lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (!lib) {
        fprintf(stderr, "driver_calls: dlopen(libcuda.so.1): %s\n", dlerror());
        return 1;
    }
    cuInit_t cuInit = (cuInit_t) sym("cuInit");
    cuDeviceGet_t cuDeviceGet = (cuDeviceGet_t) sym("cuDeviceGet");
    cuDevicePrimaryCtxRetain_t cuDevicePrimaryCtxRetain = (cuDevicePrimaryCtxRetain_t) sym("cuDevicePrimaryCtxRetain");
    cuCtxSetCurrent_t cuCtxSetCurrent = (cuCtxSetCurrent_t) sym("cuCtxSetCurrent");
    cuCtxGetCurrent_t cuCtxGetCurrent = (cuCtxGetCurrent_t) sym("cuCtxGetCurrent");
    cuStreamCreate_t cuStreamCreate = (cuStreamCreate_t) sym("cuStreamCreate");
    cuStreamQuery_t cuStreamQuery = (cuStreamQuery_t) sym("cuStreamQuery");
    cuStreamSynchronize_t cuStreamSynchronize = (cuStreamSynchronize_t) sym("cuStreamSynchronize");
    cuModuleLoadData_t cuModuleLoadData = (cuModuleLoadData_t) sym("cuModuleLoadData");
    cuModuleGetFunction_t cuModuleGetFunction = (cuModuleGetFunction_t) sym("cuModuleGetFunction");
    cuMemAlloc_t cuMemAlloc = (cuMemAlloc_t) sym("cuMemAlloc_v2");
    cuMemsetD8_t cuMemsetD8 = (cuMemsetD8_t) sym("cuMemsetD8_v2");
    cuLaunchKernel_t cuLaunchKernel = (cuLaunchKernel_t) sym("cuLaunchKernel");

    int dev;
    void *ctx, *stream, *module, *function, *out;
    check(cuInit(0), "cuInit");
    check(cuDeviceGet(&dev, 0), "cuDeviceGet");
    check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
    check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
    check(cuStreamCreate(&stream, 1), "cuStreamCreate(CU_STREAM_NON_BLOCKING)"); /* as CudaContext.createStream */

    printf("driver call cost from C (ns/call, best of 5 runs of %ld calls, %ld launches):\n", calls, launches);
    REPORT_BEST_OF_5("cuCtxGetCurrent", calls, {
        for (long i = 0; i < calls; i++) {
            check(cuCtxGetCurrent(&out), "cuCtxGetCurrent");
        }
    });
    REPORT_BEST_OF_5("cuStreamQuery (idle stream)", calls, {
        for (long i = 0; i < calls; i++) {
            check(cuStreamQuery(stream), "cuStreamQuery (idle stream)");
        }
    });
    /* The kernel is loaded after the query loops, in the order CudaBench makes its calls. */
    char *ptx = read_file(argv[1]);
    check(cuModuleLoadData(&module, ptx), "cuModuleLoadData");
    check(cuModuleGetFunction(&function, module, "panamax_reduce_sum_f32"), "cuModuleGetFunction");
    unsigned long long inout, in;
    check(cuMemAlloc(&inout, 16), "cuMemAlloc");
    check(cuMemAlloc(&in, 16), "cuMemAlloc");
    check(cuMemsetD8(inout, 0, 16), "cuMemsetD8");
    check(cuMemsetD8(in, 0, 16), "cuMemsetD8");
    unsigned long long count = 1;
    void *params[] = {&inout, &in, &count};
    REPORT_BEST_OF_5("cuLaunchKernel (1 element)", launches, {
        for (long i = 0; i < launches; i++) {
            check(cuLaunchKernel(function, 1, 1, 1, 256, 1, 1, 0, stream, params, NULL), "cuLaunchKernel");
        }
        check(cuStreamSynchronize(stream), "cuStreamSynchronize");
    });
    return 0;
}
