package dev.panamax.bench;

import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.TransportKind;
import dev.panamax.collectives.LaunchConfig;
import dev.panamax.collectives.Panamax;
import dev.panamax.bench.perf.PerfCollective;
import dev.panamax.bench.perf.RankProcesses;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Time per collective operation (us/op) for each transport and size, with {@code ranks} ranks:
 * <ul>
 *   <li>{@code local}: ranks as threads of the benchmark JVM over the in-JVM transport;</li>
 *   <li>{@code shm}, {@code tcp}: ranks as processes; the benchmark JVM is rank 0 and starts ranks
 *       1..n-1 as helper JVMs ({@link CollectiveWorker}) that join through the environment.</li>
 * </ul>
 * The benchmark thread is rank 0; the other ranks run exactly the operations it issues, in
 * lockstep, through {@link LockstepCounters}. {@code bytes} is the nccl-tests size (the larger buffer;
 * per-rank count = bytes / typeSize / ranks for all-gather and reduce-scatter); the bandwidths
 * follow from the score: algbw GB/s = bytes / (us/op) / 1000, busbw = algbw * the collective's
 * factor ({@link BandwidthReport} prints both from a {@code -rf json} result file).
 *
 * <p>Run: {@code java --enable-native-access=ALL-UNNAMED --add-modules jdk.incubator.vector -jar
 * bench/target/panamax-bench.jar CollectiveBenchmark -rf json}; pick others with
 * {@code -p collective=allgather,reducescatter,broadcast,reduce -p ranks=4 -p transport=shm}.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Threads(1)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "--add-modules=jdk.incubator.vector"})
public class CollectiveBenchmark {
    private static final double TIMEOUT_SECONDS = 60;

    @Param({"allreduce"})
    public String collective;

    @Param({"local", "shm", "tcp"})
    public String transport;

    @Param({"8", "65536", "1048576", "16777216"})
    public long bytes;

    @Param({"2"})
    public int ranks;

    @Param({"float32"})
    public String type;

    @Param({"sum"})
    public String op;

    private LockstepCounters lockstep;
    private CollectiveSetup rank0;
    private final List<Communicator> comms = new ArrayList<>();
    private final List<Thread> helperThreads = new ArrayList<>();
    private final AtomicReference<Throwable> helperFailure = new AtomicReference<>();
    private RankProcesses helperProcesses;

    @Setup(Level.Trial)
    public void setUp() {
        PerfCollective c = PerfCollective.parse(collective);
        DataType t = DataType.parse(type);
        ReduceOp o = ReduceOp.parse(op);
        long timeoutNanos = (long) (TIMEOUT_SECONDS * 1e9);
        switch (transport) {
            case "local" -> {
                lockstep = LockstepCounters.inMemory();
                comms.addAll(Panamax.local(ranks, timeoutNanos));
                rank0 = new CollectiveSetup(comms.get(0), c, bytes, t, o);
                for (int r = 1; r < ranks; r++) {
                    CollectiveSetup s = new CollectiveSetup(comms.get(r), c, bytes, t, o);
                    Thread th = new Thread(() -> {
                        try {
                            lockstep.follow(s);
                        } catch (Throwable e) {
                            helperFailure.compareAndSet(null, e);
                            comms.forEach(Communicator::close); // rank 0 fails now rather than at the timeout
                        }
                    }, "rank-" + r);
                    th.setDaemon(true);
                    helperThreads.add(th);
                    th.start();
                }
            }
            case "shm", "tcp" -> {
                lockstep = LockstepCounters.createFile();
                String addr = "127.0.0.1";
                int port = RankProcesses.freePort(addr);
                List<String> jvm = new ArrayList<>(List.of("--enable-native-access=ALL-UNNAMED",
                        "--add-modules=jdk.incubator.vector",
                        "-XX:+UseSerialGC", "-Xmx256m"));
                System.getProperties().forEach((k, v) -> {
                    if (k.toString().startsWith("panamax.")) {
                        jvm.add("-D" + k + "=" + v);
                    }
                });
                List<String> cmd = RankProcesses.javaCommand(CollectiveWorker.class.getName(), jvm);
                cmd.addAll(List.of(c.cliName(), transport, Long.toString(bytes), t.canonicalName(), o.name(),
                        lockstep.file().toString(), Double.toString(TIMEOUT_SECONDS)));
                helperProcesses = RankProcesses.start(ranks, addr, port, cmd, Map.of(), System.err,
                        (rank, status) -> System.err.println("helper rank " + rank + " exited with status " + status));
                Communicator comm = Panamax.builder().config(new LaunchConfig(0, ranks, 0, addr, port))
                        .transport(TransportKind.parse(transport)).timeout(Duration.ofNanos(timeoutNanos)).connect();
                comms.add(comm);
                rank0 = new CollectiveSetup(comm, c, bytes, t, o);
            }
            default -> throw new IllegalArgumentException("unknown transport '" + transport
                    + "'; known: local, shm, tcp");
        }
    }

    @Benchmark
    public void collective() {
        lockstep.issue();
        rank0.run();
    }

    @TearDown(Level.Trial)
    public void tearDown() throws InterruptedException {
        try {
            if (lockstep != null) {
                lockstep.stop();
            }
            for (Thread t : helperThreads) {
                t.join(TimeUnit.SECONDS.toMillis((long) TIMEOUT_SECONDS));
            }
            if (helperProcesses != null) {
                int status = helperProcesses.waitFor(TimeUnit.SECONDS.toMillis((long) TIMEOUT_SECONDS));
                if (status != 0) {
                    System.err.println("helper ranks ended with status " + status);
                }
            }
        } finally {
            if (helperProcesses != null) {
                helperProcesses.close();
            }
            comms.forEach(Communicator::close);
            comms.clear();
            helperThreads.clear();
            if (lockstep != null) {
                lockstep.close();
            }
        }
        Throwable f = helperFailure.get();
        if (f != null) {
            throw new IllegalStateException("a helper rank failed: " + f, f);
        }
    }
}
