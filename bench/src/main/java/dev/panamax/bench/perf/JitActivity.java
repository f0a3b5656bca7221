package dev.panamax.bench.perf;

import dev.panamax.collectives.Communicator;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

import java.io.IOException;
import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.locks.LockSupport;

/**
 * How much this JVM's JIT has worked so far, to tell when it has gone quiet. On Linux: the CPU time of its compiler
 * threads ({@code /proc/self/task/*}: threads named {@code C1 CompilerThre...}, {@code C2 CompilerThre...}), which
 * grows while a long compilation is still running. Elsewhere: the total time of the finished compilations
 * ({@link CompilationMXBean}), which does not.
 */
final class JitActivity {
    private static final Path TASKS = Path.of("/proc/self/task");
    /** The thread name as the kernel keeps it (15 characters). */
    private static final String COMPILER_THREAD = "CompilerThre";

    /** How long no rank's JIT may have worked for {@link #awaitQuiet} to return. */
    static final long QUIET_MILLIS = 200;

    private JitActivity() {
    }

    /**
     * Waits until no rank's JIT has worked for {@link #QUIET_MILLIS}, at most {@code maxNanos} ({@code
     * --jit-quiet-max}): a warm-up leaves compilations queued, and on a host with few CPUs a compiler thread still at
     * work takes a rank's CPU for a scheduler tick at a time (4 ms, in a scheduler trace of the first rows), while its
     * peers wait for that rank. Every rank of {@code comm} calls it and takes part in each round's decision, so all
     * return together; {@code scratch} holds one int64. Where the JIT is still at work when the time is up, rank 0
     * says so on {@code err}: the rows that follow may measure it (an emulated CPU compiles for minutes).
     */
    static void awaitQuiet(Communicator comm, MemorySegment scratch, long maxNanos, PrintStream err) {
        long start = System.nanoTime();
        long last = sample();
        while (true) {
            LockSupport.parkNanos(QUIET_MILLIS * 1_000_000L);
            long now = sample();
            // 0: quiet here; 1: the JIT worked since the last round; 2: out of time (the maximum across ranks decides)
            long state = System.nanoTime() - start >= maxNanos ? 2 : now != last ? 1 : 0;
            last = now;
            scratch.set(ValueLayout.JAVA_LONG, 0, state);
            comm.allReduce(scratch, 1, DataType.INT64, ReduceOp.MAX);
            long decided = scratch.get(ValueLayout.JAVA_LONG, 0);
            if (decided == 2 && comm.rank() == 0) {
                err.printf(Locale.ROOT, "panamax-perf: the JIT of a rank was still at work after %.1f s of waiting for "
                        + "it to go quiet; the rows that follow may measure its compiling (a longer --jit-quiet-max "
                        + "waits longer)%n", (System.nanoTime() - start) / 1e9);
                err.flush();
            }
            if (decided != 1) {
                return;
            }
        }
    }

    /** A count that grows while the JIT works (clock ticks or milliseconds, only compared with itself); -1: unknown. */
    static long sample() {
        long ticks = compilerThreadTicks();
        if (ticks >= 0) {
            return ticks;
        }
        CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
        return jit != null && jit.isCompilationTimeMonitoringSupported() ? jit.getTotalCompilationTime() : -1;
    }

    /**
     * The user and system clock ticks of a {@code /proc/.../stat} line: fields 14 and 15, counted after the
     * parenthesized thread name, which may hold spaces and parentheses itself.
     */
    static long cpuTicks(String stat) {
        String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        return Long.parseLong(f[11]) + Long.parseLong(f[12]); // f[0] is field 3, the state
    }

    /** The user and system clock ticks of the compiler threads; -1 where /proc is not there or not readable. */
    private static long compilerThreadTicks() {
        if (!Files.isDirectory(TASKS)) {
            return -1;
        }
        long sum = 0;
        try (DirectoryStream<Path> tasks = Files.newDirectoryStream(TASKS)) {
            for (Path task : tasks) {
                String name;
                String stat;
                try {
                    name = Files.readString(task.resolve("comm")).strip();
                    if (!name.contains(COMPILER_THREAD)) {
                        continue;
                    }
                    stat = Files.readString(task.resolve("stat"));
                } catch (IOException e) {
                    continue; // the thread ended meanwhile
                }
                sum += cpuTicks(stat);
            }
        } catch (IOException | RuntimeException e) {
            return -1;
        }
        return sum;
    }
}
