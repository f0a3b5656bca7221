/*
 * C baseline for ReductionBenchmark: the float32 sum accumulate acc[i] += src[i], compiled with
 * gcc -O3 -march=native (scripts/bench/kernel-baseline). Same shape as the JMH runs: 3 warm-up and 5
 * measured iterations of about 1 s each per size. Reports the mean time per call and
 * "buffer GB/s" = count * 4 bytes / time per call (10^9 bytes/s), the convention of docs/design/kernels.md;
 * memory traffic is 3x that (read acc, read src, write acc).
 * Usage: reduce_bench [bytes ...]   (default: 1 MiB and 256 MiB per buffer)
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

__attribute__((noinline)) static void accumulate(float *restrict acc, const float *restrict src, size_t n) {
    for (size_t i = 0; i < n; i++) acc[i] += src[i];
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* Runs the kernel for about one second; returns seconds per call. */
static double iteration(float *acc, const float *src, size_t n) {
    long calls = 0;
    double start = now(), t;
    do {
        accumulate(acc, src, n);
        calls++;
    } while ((t = now()) - start < 1.0);
    return (t - start) / calls;
}

int main(int argc, char **argv) {
    size_t sizes[16] = {1u << 20, 256u << 20};
    int nsizes = 2;
    if (argc > 1) for (nsizes = 0; nsizes < argc - 1 && nsizes < 16; nsizes++) sizes[nsizes] = strtoull(argv[nsizes + 1], 0, 0);
    for (int s = 0; s < nsizes; s++) {
        size_t bytes = sizes[s], n = bytes / sizeof(float);
        float *acc = aligned_alloc(4096, bytes), *src = aligned_alloc(4096, bytes);
        if (!acc || !src) { perror("aligned_alloc"); return 1; }
        for (size_t i = 0; i < n; i++) { acc[i] = 0.0f; src[i] = (float) (i & 1023); }
        for (int w = 0; w < 3; w++) iteration(acc, src, n);
        double sum = 0, lo = 1e30, hi = 0;
        for (int m = 0; m < 5; m++) {
            double t = iteration(acc, src, n);
            sum += t; lo = t < lo ? t : lo; hi = t > hi ? t : hi;
        }
        double mean = sum / 5;
        printf("c float32 sum accumulate bytes=%zu: %.3f us/call (min %.3f, max %.3f), %.2f buffer GB/s (checksum %g)\n",
               bytes, mean * 1e6, lo * 1e6, hi * 1e6, bytes / mean / 1e9, (double) acc[n - 1]);
        free(acc); free(src);
    }
    return 0;
}
