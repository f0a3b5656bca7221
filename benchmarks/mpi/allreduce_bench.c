/*
 * allreduce_bench.c - MPI_Allreduce baseline in the style of nccl-tests.
 *
 * Runs MPI_Allreduce (float32, MPI_SUM, out of place: separate send and
 * receive buffers, like the nccl-tests default) for message sizes from -b to
 * -e bytes, multiplying by -f each step, and prints one row per size:
 *
 *   size count type redop time algbw busbw #wrong
 *
 *   size   bytes per rank (count * 4)
 *   time   average microseconds per iteration, the maximum over ranks
 *   algbw  size / time, GB/s with 1 GB/s = 1e9 B/s
 *   busbw  algbw * 2(n-1)/n, n = number of ranks
 *   #wrong elements (summed over all ranks) that differ from the expected
 *          value after one extra check iteration; "N/A" with -c 0
 *
 * The footer also gives each rank's CPU time / wall time over the sweep: an
 * MPI rank spin-polls while waiting, so well under 100% means the rank was
 * descheduled (other load on the host, or more ranks than CPUs).
 *
 * Inputs: rank r fills element i with (r+1) + (i%7). The expected result is
 * n(n+1)/2 + n*(i%7), computed in double; every value involved is a small
 * integer, exactly representable in float, so the comparison is exact.
 *
 * Buffers are allocated once at the largest size and written in full before
 * any timing, so first-touch page faults are not measured. Before the sweep,
 * -w warmup iterations run at the largest and at the smallest size; each size
 * then runs its own -w warmup iterations, a barrier, and -n timed iterations.
 *
 * Options (sizes take an optional K, M or G suffix, powers of 1024):
 *   -b BYTES  smallest size            (default 8)
 *   -e BYTES  largest size             (default 256M)
 *   -f N      size factor              (default 2)
 *   -n N      timed iterations         (default 20)
 *   -w N      warmup iterations        (default 5)
 *   -c 0|1    check results            (default 1)
 *   -m BYTES  scale iterations down above this size: sizes larger than BYTES
 *             run max(2, n*BYTES/size) timed and max(1, w*BYTES/size) warmup
 *             iterations (default 0 = off, every size runs -n and -w)
 *
 * Build: mpicc -O3 -o allreduce_bench allreduce_bench.c
 */
#include <mpi.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static int rank, nranks;

static double cpu_seconds(void) { /* user + system time of this process */
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

static void die(const char *msg) {
    if (rank == 0) fprintf(stderr, "allreduce_bench: %s\n", msg);
    MPI_Abort(MPI_COMM_WORLD, 2);
    exit(2);
}

static size_t parse_size(const char *s) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s) die("bad size argument");
    switch (*end) {
        case 'k': case 'K': v <<= 10; end++; break;
        case 'm': case 'M': v <<= 20; end++; break;
        case 'g': case 'G': v <<= 30; end++; break;
        default: break;
    }
    if (*end == 'B' || *end == 'b') end++;
    if (*end != '\0') die("bad size suffix (use K, M or G)");
    return (size_t)v;
}

static long parse_long(const char *s) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end != '\0') die("bad numeric argument");
    return v;
}

static void usage(void) {
    if (rank == 0)
        fprintf(stderr,
                "usage: allreduce_bench [-b min_bytes] [-e max_bytes] [-f factor]\n"
                "                       [-n iters] [-w warmup] [-c 0|1] [-m scale_bytes]\n");
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);

    size_t min_bytes = 8, max_bytes = (size_t)256 << 20, scale_bytes = 0;
    long factor = 2, iters = 20, warmup = 5, check = 1;
    int opt;
    while ((opt = getopt(argc, argv, "b:e:f:n:w:c:m:h")) != -1) {
        switch (opt) {
            case 'b': min_bytes = parse_size(optarg); break;
            case 'e': max_bytes = parse_size(optarg); break;
            case 'f': factor = parse_long(optarg); break;
            case 'n': iters = parse_long(optarg); break;
            case 'w': warmup = parse_long(optarg); break;
            case 'c': check = parse_long(optarg); break;
            case 'm': scale_bytes = parse_size(optarg); break;
            case 'h': usage(); MPI_Finalize(); return 0;
            default: usage(); MPI_Abort(MPI_COMM_WORLD, 2); return 2;
        }
    }
    if (optind < argc) { usage(); die("unexpected argument"); }
    if (factor < 2) die("-f must be >= 2");
    if (iters < 1 || warmup < 0) die("-n must be >= 1 and -w >= 0");
    if (min_bytes < sizeof(float)) min_bytes = sizeof(float);
    if (max_bytes < min_bytes) die("-e must be >= -b");
    if (max_bytes / sizeof(float) > INT32_MAX) die("-e too large for an int count");

    const size_t max_count = max_bytes / sizeof(float);
    float *sendbuf = malloc(max_count * sizeof(float));
    float *recvbuf = malloc(max_count * sizeof(float));
    if (!sendbuf || !recvbuf) die("out of memory");
    /* Write every page of both buffers now (first touch), not while timing. */
    for (size_t i = 0; i < max_count; i++) sendbuf[i] = (float)((rank + 1) + (int)(i % 7));
    memset(recvbuf, 0, max_count * sizeof(float));

    if (rank == 0) {
        char lib[MPI_MAX_LIBRARY_VERSION_STRING];
        int len;
        MPI_Get_library_version(lib, &len);
        char *nl = strchr(lib, '\n');
        if (nl) *nl = '\0';
        char *comma = strchr(lib, ',');
        if (comma) *comma = '\0';
        printf("# allreduce_bench: %s\n", lib);
        printf("# nranks %d  minBytes %zu  maxBytes %zu  step factor %ld  iters %ld  warmup %ld"
               "  check %ld  scale above %zu  out-of-place\n",
               nranks, min_bytes, max_bytes, factor, iters, warmup, check, scale_bytes);
        if (scale_bytes)
            printf("# sizes above %zu B run max(2, %ld*%zu/size) timed and max(1, %ld*%zu/size)"
                   " warmup iterations\n", scale_bytes, iters, scale_bytes, warmup, scale_bytes);
        printf("#\n");
        printf("# %10s %12s %8s %6s %10s %8s %8s %7s\n", "size", "count", "type", "redop",
               "time", "algbw", "busbw", "#wrong");
        printf("# %10s %12s %8s %6s %10s %8s %8s %7s\n", "(B)", "(elements)", "", "", "(us)",
               "(GB/s)", "(GB/s)", "");
        fflush(stdout);
    }

    /* Global warmup, as nccl-tests does: -w iterations at the largest and at the
     * smallest size, so connection setup and first-use costs stay out of row 1. */
    for (long k = 0; k < warmup; k++)
        MPI_Allreduce(sendbuf, recvbuf, (int)(max_bytes / sizeof(float)), MPI_FLOAT, MPI_SUM,
                      MPI_COMM_WORLD);
    for (long k = 0; k < warmup; k++)
        MPI_Allreduce(sendbuf, recvbuf, (int)(min_bytes / sizeof(float)), MPI_FLOAT, MPI_SUM,
                      MPI_COMM_WORLD);

    MPI_Barrier(MPI_COMM_WORLD);
    const double sweep_wall0 = MPI_Wtime(), sweep_cpu0 = cpu_seconds();
    const double bus_factor = 2.0 * (nranks - 1) / nranks;
    double busbw_sum = 0;
    int nsizes = 0;
    long long wrong_total = 0;

    for (size_t size = min_bytes;;) {
        const size_t count = size / sizeof(float);
        const size_t bytes = count * sizeof(float);
        long it = iters, wu = warmup;
        if (scale_bytes && bytes > scale_bytes) {
            double s = (double)scale_bytes / (double)bytes;
            it = (long)(iters * s); if (it < 2) it = 2;
            wu = (long)(warmup * s); if (wu < 1 && warmup > 0) wu = 1;
        }

        for (long k = 0; k < wu; k++)
            MPI_Allreduce(sendbuf, recvbuf, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (long k = 0; k < it; k++)
            MPI_Allreduce(sendbuf, recvbuf, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        double local_us = (MPI_Wtime() - t0) * 1e6 / (double)it;
        double us;
        MPI_Allreduce(&local_us, &us, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);

        long long wrong = -1;
        if (check) {
            /* Poison the result, run one more all-reduce, compare exactly. */
            for (size_t i = 0; i < count; i++) recvbuf[i] = -1.0f;
            MPI_Allreduce(sendbuf, recvbuf, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            long long local_wrong = 0;
            const double base = (double)nranks * (nranks + 1) / 2.0;
            for (size_t i = 0; i < count; i++) {
                double expected = base + (double)nranks * (double)(i % 7);
                if ((double)recvbuf[i] != expected) local_wrong++;
            }
            MPI_Allreduce(&local_wrong, &wrong, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
            wrong_total += wrong;
        }

        double algbw = (double)bytes / (us * 1e-6) / 1e9;
        double busbw = algbw * bus_factor;
        busbw_sum += busbw;
        nsizes++;
        if (rank == 0) {
            char wrong_s[32];
            if (check) snprintf(wrong_s, sizeof wrong_s, "%lld", wrong);
            else snprintf(wrong_s, sizeof wrong_s, "N/A");
            printf("  %10zu %12zu %8s %6s %10.2f %8.3f %8.3f %7s\n", bytes, count, "float",
                   "sum", us, algbw, busbw, wrong_s);
            fflush(stdout);
        }

        if (size > max_bytes / (size_t)factor) break;
        size *= (size_t)factor;
        if (size > max_bytes) break;
    }

    /* A rank spin-polls while it waits, so on an otherwise idle host it gets
     * close to 100% of a CPU; a lower share means it was descheduled (other
     * load, or more ranks than CPUs) and the times above include that. */
    double share = (cpu_seconds() - sweep_cpu0) / (MPI_Wtime() - sweep_wall0), min_share, max_share;
    MPI_Allreduce(&share, &min_share, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&share, &max_share, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);

    if (rank == 0) {
        printf("# CPU share per rank during the sweep : min %.0f%%  max %.0f%%\n", 100 * min_share,
               100 * max_share);
        if (check) printf("# Out of bounds values : %lld %s\n", wrong_total, wrong_total ? "FAILED" : "OK");
        printf("# Avg bus bandwidth    : %g\n", nsizes ? busbw_sum / nsizes : 0.0);
        printf("#\n");
    }
    free(sendbuf);
    free(recvbuf);
    MPI_Finalize();
    return (check && wrong_total) ? 1 : 0;
}
