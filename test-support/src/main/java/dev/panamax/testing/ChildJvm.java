package dev.panamax.testing;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import static org.junit.jupiter.api.Assertions.fail;

/**
 * Runs a main class in a child JVM like this one: the same {@code java.home} and class path, native access
 * enabled. For what only a fresh JVM can show (a library missing from the start, a second process mapping
 * memory).
 */
public final class ChildJvm {
    /** The output of a finished child JVM, standard output and error together. */
    public record Result(int exitCode, String output) {
    }

    private ChildJvm() {
    }

    /** The {@code java} launcher of this JVM. */
    public static String javaLauncher() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    /**
     * The command that runs {@code main} with {@code args} in a JVM like this one:
     * {@code java --enable-native-access=ALL-UNNAMED <jvmOptions> -cp <this class path> <main> <args>}.
     */
    public static List<String> command(Class<?> main, List<String> jvmOptions, List<String> args) {
        List<String> cmd = new ArrayList<>();
        cmd.add(javaLauncher());
        cmd.add("--enable-native-access=ALL-UNNAMED");
        cmd.addAll(jvmOptions);
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(main.getName());
        cmd.addAll(args);
        return cmd;
    }

    /** {@link #run(Class, List, List, Consumer, Duration)} with this JVM's environment. */
    public static Result run(Class<?> main, List<String> jvmOptions, List<String> args, Duration timeout)
            throws IOException, InterruptedException {
        return run(main, jvmOptions, args, environment -> { }, timeout);
    }

    /**
     * Runs {@code main} in a child JVM ({@link #command}) and waits for it at most {@code timeout}; fails the
     * test, with the output so far, when it does not finish in time. The output goes through a file so that a
     * hung child cannot block the wait.
     *
     * @param environment changes the child's environment (a copy of this JVM's), for example removes a variable
     */
    public static Result run(Class<?> main, List<String> jvmOptions, List<String> args,
                             Consumer<Map<String, String>> environment, Duration timeout)
            throws IOException, InterruptedException {
        Path out = Files.createTempFile("panamax-" + main.getSimpleName(), ".log");
        try {
            ProcessBuilder pb = new ProcessBuilder(command(main, jvmOptions, args))
                    .redirectErrorStream(true)
                    .redirectOutput(out.toFile());
            environment.accept(pb.environment());
            Process p = pb.start();
            if (!p.waitFor(timeout.toNanos(), TimeUnit.NANOSECONDS)) {
                p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
                fail("child JVM " + main.getSimpleName() + " did not finish within " + timeout + ": "
                        + Files.readString(out, StandardCharsets.UTF_8));
            }
            return new Result(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8));
        } finally {
            Files.deleteIfExists(out);
        }
    }
}
