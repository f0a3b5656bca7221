package dev.panamax.spark;

import dev.panamax.testing.ChildJvm;
import dev.panamax.testing.Ports;
import dev.panamax.testing.RankProcesses;
import dev.panamax.testing.RankProcesses.Running;
import org.apache.spark.SparkConf;

import java.io.File;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/**
 * A Spark standalone cluster on this machine for the tests: a master and {@code workers} workers, each a JVM of
 * its own started from the test class path, each worker launching its executors as further JVMs. Spark's worker
 * builds an executor's class path from {@code $SPARK_HOME/jars}, so a temporary {@code SPARK_HOME} holds links to
 * the jars of this class path; its directories (the modules' classes) reach the executors through
 * {@code spark.executor.extraClassPath}. Worker w runs its executors with {@code PANAMAX_NODE=worker-w}, so that
 * Panamax treats the workers as separate hosts (TCP between them, shared memory within one). {@link #close}
 * stops every process it started, executors included, and removes the directory.
 */
final class LocalStandaloneCluster implements AutoCloseable {
    /** The JVM options of the cluster's processes and executors: Spark's opens, Panamax's native access. */
    static final String JVM_OPTIONS = System.getProperty("panamax.spark.jvmOptions", "");
    static final Duration START_TIMEOUT = Duration.ofSeconds(90);

    private final Path home;
    private final List<Running> processes = new ArrayList<>();
    private final int masterPort;
    private final String extraClassPath;
    private final int workers;
    private final int coresPerWorker;

    LocalStandaloneCluster(int workers, int coresPerWorker) throws IOException, InterruptedException {
        this.workers = workers;
        this.coresPerWorker = coresPerWorker;
        home = Files.createTempDirectory("panamax-spark-home");
        Path jars = Files.createDirectories(home.resolve("jars"));
        List<String> directories = new ArrayList<>();
        for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            Path p = Path.of(entry);
            if (Files.isDirectory(p)) {
                directories.add(p.toAbsolutePath().toString());
            } else if (entry.endsWith(".jar") && Files.exists(p)) {
                Path link = jars.resolve(p.getFileName());
                if (!Files.exists(link)) {
                    Files.createSymbolicLink(link, p.toAbsolutePath());
                }
            }
        }
        extraClassPath = String.join(File.pathSeparator, directories);
        masterPort = Ports.freePort();
        try {
            Running master = start("master", List.of("org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                    "--port", Integer.toString(masterPort), "--webui-port", Integer.toString(Ports.freePort())), null);
            awaitPort(master, masterPort);
            for (int w = 0; w < workers; w++) {
                Running worker = start("worker-" + w, List.of("org.apache.spark.deploy.worker.Worker", "--host",
                        "127.0.0.1", "--cores", Integer.toString(coresPerWorker), "--memory", "2g", "--webui-port",
                        Integer.toString(Ports.freePort()), "--work-dir", home.resolve("work-" + w).toString(),
                        masterUrl()), "worker-" + w);
                if (!worker.process().isAlive()) {
                    throw new IllegalStateException("a Spark worker did not start:\n" + logs());
                }
            }
        } catch (IOException | InterruptedException | RuntimeException | Error e) {
            close();
            throw e;
        }
    }

    /** {@code spark://127.0.0.1:port}. */
    String masterUrl() {
        return "spark://127.0.0.1:" + masterPort;
    }

    /**
     * An application's configuration for this cluster: one executor per worker taking all its cores (so a barrier
     * stage of {@code workers * coresPerWorker} tasks fits), the class path and JVM options of the tests, the
     * driver on 127.0.0.1, no UI.
     */
    SparkConf sparkConf(String appName) {
        return new SparkConf()
                .setMaster(masterUrl())
                .setAppName(appName)
                .set("spark.ui.enabled", "false")
                .set("spark.driver.host", "127.0.0.1")
                .set("spark.driver.bindAddress", "127.0.0.1")
                .set("spark.executor.cores", Integer.toString(coresPerWorker))
                .set("spark.cores.max", Integer.toString(workers * coresPerWorker))
                .set("spark.executor.memory", "1g")
                .set("spark.executor.extraClassPath", extraClassPath)
                .set("spark.executor.extraJavaOptions", JVM_OPTIONS);
    }

    /** Everything the processes printed so far, for failure messages. */
    String logs() {
        StringBuilder b = new StringBuilder();
        for (Running r : processes) {
            b.append("--- pid ").append(r.process().pid()).append('\n');
            r.lines().forEach(l -> b.append(l).append('\n'));
        }
        // The executors' output, in the workers' work directories: app-*/<executor id>/stderr.
        try (Stream<Path> files = Files.walk(home)) {
            for (Path f : files.filter(f -> f.getFileName().toString().equals("stderr")).toList()) {
                b.append("--- ").append(home.relativize(f)).append('\n').append(Files.readString(f));
            }
        } catch (IOException e) {
            b.append("(executor logs unreadable: ").append(e).append(")\n");
        }
        return b.toString();
    }

    private Running start(String name, List<String> args, String node) throws IOException {
        List<String> command = new ArrayList<>();
        command.add(ChildJvm.javaLauncher());
        for (String o : JVM_OPTIONS.trim().split("\\s+")) {
            if (!o.isEmpty()) {
                command.add(o);
            }
        }
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.addAll(args);
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
        pb.environment().put("SPARK_HOME", home.toString());
        pb.environment().put("SPARK_LOCAL_IP", "127.0.0.1");
        // Spark's launcher asks a source build for its Scala version; a distribution's jars say it here.
        pb.environment().put("SPARK_SCALA_VERSION", "2.13");
        pb.environment().remove("PANAMAX_NODE");
        if (node != null) {
            pb.environment().put("PANAMAX_NODE", node);
        }
        Running r = RankProcesses.start(pb);
        processes.add(r);
        return r;
    }

    /** Waits until {@code r} accepts connections on {@code port} (the tests log at WARN: no line says so). */
    private void awaitPort(Running r, int port) throws InterruptedException {
        long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
        while (System.nanoTime() < deadline && r.process().isAlive()) {
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress("127.0.0.1", port), 200);
                return;
            } catch (IOException notYet) {
                Thread.sleep(50);
            }
        }
        throw new IllegalStateException("the Spark master did not listen on port " + port + ":\n" + logs());
    }

    /** Stops the workers (and their executors) and the master, then removes the temporary SPARK_HOME. */
    @Override
    public void close() {
        for (Running r : processes.reversed()) {
            r.process().descendants().forEach(ProcessHandle::destroyForcibly);
            r.process().destroyForcibly();
        }
        for (Running r : processes) {
            try {
                r.process().waitFor();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        try (Stream<Path> all = Files.walk(home)) {
            all.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException ignored) {
            // a temporary directory; nothing else to do
        }
    }
}
