package dev.panamax.bench.perf;

import jdk.jfr.Configuration;
import jdk.jfr.Recording;

import java.io.IOException;
import java.nio.file.Path;
import java.text.ParseException;
import java.time.Duration;
import java.util.Locale;

/**
 * {@code panamax-perf --jfr FILE}: a flight recording of this JVM with JFR's {@code default}
 * settings (GC, safepoints, JIT, thread samples: what explains a slow rank) plus the Panamax
 * events {@code dev.panamax.Collective} and {@code dev.panamax.Step}. Written when the run ends,
 * also when it fails, and at JVM exit when the rank is stopped (SIGTERM).
 */
final class JfrRecording implements AutoCloseable {
    static final String COLLECTIVE = "dev.panamax.Collective";
    static final String STEP = "dev.panamax.Step";

    private final Recording recording;
    private final Path file;

    private JfrRecording(Recording recording, Path file) {
        this.recording = recording;
        this.file = file;
    }

    /**
     * Starts recording to {@code file}; {@code stepThreshold} null leaves the Step events out,
     * otherwise only the stages that took at least that long are kept.
     */
    static JfrRecording start(Path file, Duration stepThreshold) {
        Recording r;
        try {
            r = new Recording(Configuration.getConfiguration("default"));
        } catch (IOException | ParseException e) {
            r = new Recording();
        }
        r.setName("panamax-perf");
        r.enable(COLLECTIVE).withoutStackTrace().withoutThreshold();
        if (stepThreshold != null) {
            r.enable(STEP).withoutStackTrace().withThreshold(stepThreshold);
        } else {
            r.disable(STEP);
        }
        try {
            Path abs = file.toAbsolutePath();
            r.setDestination(abs);
            r.setDumpOnExit(true);
            r.setToDisk(true);
            r.start();
            return new JfrRecording(r, abs);
        } catch (IOException | RuntimeException e) {
            r.close();
            throw new IllegalArgumentException("--jfr: cannot record to " + file + ": " + e.getMessage(), e);
        }
    }

    /** FILE.rankR.jfr ({@code run.jfr} becomes {@code run.rank0.jfr}). */
    static Path rankFile(Path file, int rank) {
        String name = file.getFileName().toString();
        String base = name.toLowerCase(Locale.ROOT).endsWith(".jfr") ? name.substring(0, name.length() - 4) : name;
        return file.resolveSibling(base + ".rank" + rank + ".jfr");
    }

    /**
     * Parses {@code --jfr-steps}: {@code off}, {@code all} (0), or a duration such as {@code 500us},
     * {@code 2ms}, {@code 1s}, {@code 100ns}; null for off.
     */
    static Duration parseThreshold(String s) {
        String t = s.trim().toLowerCase(Locale.ROOT).replace(" ", "");
        if (t.equals("off")) {
            return null;
        }
        if (t.equals("all") || t.equals("0")) {
            return Duration.ZERO;
        }
        String[][] units = {{"ns", "1"}, {"us", "1000"}, {"ms", "1000000"}, {"s", "1000000000"}};
        for (String[] u : units) {
            if (t.endsWith(u[0])) {
                String num = t.substring(0, t.length() - u[0].length());
                try {
                    double v = Double.parseDouble(num);
                    if (v >= 0 && Double.isFinite(v)) {
                        return Duration.ofNanos((long) (v * Long.parseLong(u[1])));
                    }
                } catch (NumberFormatException ignored) {
                    // fall through to the error
                }
                break;
            }
        }
        throw new IllegalArgumentException("--jfr-steps takes off, all or a duration (500us, 2ms, 1s), not '" + s
                + "'");
    }

    Path file() {
        return file;
    }

    /** Stops the recording and writes the file. */
    @Override
    public void close() {
        try {
            recording.stop();
        } catch (IllegalStateException ignored) {
            // stopped already
        } finally {
            recording.close();
        }
    }
}
