package dev.panamax.bench.perf;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.Topology;

import java.io.IOException;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeSet;

/**
 * What rank 0 of {@code panamax-perf} writes: the nccl-tests style table (the header, a row per size as
 * soon as it is measured, the summary lines), the {@code --plot} chart, the {@code --json} document with
 * the environment and the options, and {@code --plot-from}'s chart of earlier JSON files. It reads the
 * options of its {@link PerfCommand} when it writes, so a rank count taken from the job's environment
 * counts.
 */
final class PerfReport {
    private final PerfCommand cmd;
    private final PrintStream out;
    private final PrintStream err;
    private String lastAlgorithm;

    PerfReport(PerfCommand cmd) {
        this.cmd = cmd;
        this.out = cmd.out;
        this.err = cmd.err;
    }

    /** The lines above the table: what is measured, the sweep, and the column headings. */
    void printHeader() {
        PerfConfig config = cmd.config();
        PerfCollective c = config.collective();
        StringBuilder sb = new StringBuilder("# panamax-perf ").append(c.cliName()).append(": np ").append(cmd.ranks)
                .append(", transport ").append(cmd.transport).append(", algorithm ")
                .append(String.join(",", config.algorithms()))
                .append(", type ").append(config.typeName())
                .append(", op ").append(config.redopName());
        if (c.rooted()) {
            sb.append(", root ").append(config.root());
        }
        sb.append(", buffers ").append(cmd.bufferKind());
        if (config.topology() != null) {
            sb.append(", topology ").append(Topology.parse(config.topology()));
        }
        out.println(sb);
        out.printf(Locale.ROOT,
                "#  minBytes %d maxBytes %d step: %s warmup iters: %d iters: %d validation: %d timeout: %ss%n",
                Sizes.parse(cmd.minBytes), Sizes.parse(cmd.maxBytes),
                cmd.stepBytes != null ? Sizes.parse(cmd.stepBytes) + "(bytes)"
                        : fmt(cmd.stepFactor == null ? 2 : cmd.stepFactor) + "(factor)",
                cmd.warmup, cmd.iters, cmd.check, fmt(cmd.timeoutSeconds));
        out.println("#");
        out.println(Row.header(cmd.percentiles, cmd.waits));
        out.flush();
    }

    /** One row of the table; with several algorithms, a {@code # -a NAME} line where the algorithm changes. */
    void printRow(Row row) {
        if (cmd.config().algorithms().size() > 1 && !row.algorithm().equals(lastAlgorithm)) {
            out.println("# -a " + row.algorithm());
        }
        lastAlgorithm = row.algorithm();
        out.println(row.format(cmd.percentiles, cmd.waits));
        out.flush();
    }

    /** The rows of each algorithm, in the order of {@code -a}. */
    private Map<String, List<Row>> byAlgorithm(List<Row> rows) {
        Map<String, List<Row>> m = new LinkedHashMap<>();
        for (String a : cmd.config().algorithms()) {
            m.put(a, new ArrayList<>());
        }
        for (Row r : rows) {
            m.computeIfAbsent(r.algorithm(), k -> new ArrayList<>()).add(r);
        }
        return m;
    }

    private static double avgBusBw(List<Row> rows) {
        return rows.stream().mapToDouble(Row::busBw).average().orElse(0);
    }

    /** {@code --plot-from}: the rows of earlier {@code --json} files, grouped by algorithm, drawn to {@code --plot}. */
    int plotFromJson() {
        Path plot = cmd.plot;
        List<Path> plotFrom = cmd.plotFrom;
        if (plot == null) {
            err.println("panamax-perf: --plot-from needs --plot FILE");
            return PerfMain.EXIT_USAGE;
        }
        Plot.checkFile(plot);
        Map<String, List<Row>> groups = new LinkedHashMap<>();
        List<String> what = new ArrayList<>();
        try {
            ObjectMapper mapper = new ObjectMapper().configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES,
                    false);
            for (Path f : plotFrom) {
                JsonNode doc = mapper.readTree(f.toFile());
                what.add(doc.path("collective").asText("?") + " np " + doc.path("environment").path("np").asText("?"));
                for (JsonNode r : doc.path("rows")) {
                    Row row = mapper.treeToValue(r, Row.class);
                    groups.computeIfAbsent(row.algorithm() == null || row.algorithm().isEmpty()
                            ? f.getFileName().toString() : row.algorithm(),
                            k -> new ArrayList<>()).add(row);
                }
            }
            Plot.write(plot, groups, Plot.Metric.parse(cmd.plotMetric), String.join(", ", new LinkedHashSet<>(what)));
        } catch (IOException | RuntimeException e) {
            err.println("panamax-perf: could not draw " + plot + " from " + plotFrom + ": " + PerfMain.describe(e));
            return PerfMain.EXIT_FAILED;
        }
        out.println("# plot: " + plot);
        out.flush();
        return 0;
    }

    /**
     * Rank 0 after the sweep: the summary lines, then the {@code --plot} chart and the {@code --json} file;
     * returns the exit status. {@code links}: the kinds of link rank 0 used.
     */
    int finish(List<Row> rows, TreeSet<String> links) {
        PerfConfig config = cmd.config();
        long wrong = wrongTotal(rows);
        double avg = rows.stream().mapToDouble(Row::busBw).average().orElse(0);
        if (config.check()) {
            out.printf(Locale.ROOT, "# Out of bounds values : %d %s%n", wrong, wrong == 0 ? "OK" : "FAILED");
        }
        out.printf(Locale.ROOT, "# Avg bus bandwidth : %.4f%n", avg);
        Map<String, List<Row>> groups = byAlgorithm(rows);
        if (groups.size() > 1) {
            for (Map.Entry<String, List<Row>> e : groups.entrySet()) {
                long w = wrongTotal(e.getValue());
                out.printf(Locale.ROOT, "#   %-14s avg bus bandwidth %.4f%s%n", e.getKey(), avgBusBw(e.getValue()),
                        config.check() ? ", out of bounds values " + w : "");
            }
        }
        out.println("#");
        out.flush();
        if (cmd.plot != null) {
            try {
                String title = config.collective().cliName() + ", np " + cmd.ranks + ", " + cmd.transport + ", "
                        + config.typeName()
                        + (config.topology() != null ? ", topology " + config.topology() : "");
                Plot.write(cmd.plot, groups, cmd.metric, title);
                out.println("# plot: " + cmd.plot);
                out.flush();
            } catch (IOException | RuntimeException e) {
                err.println("panamax-perf: could not draw " + cmd.plot + ": " + PerfMain.describe(e));
                return PerfMain.EXIT_FAILED;
            }
        }
        if (cmd.json != null) {
            try {
                writeJson(rows, avg, wrong, links);
            } catch (IOException e) {
                err.println("panamax-perf: could not write " + cmd.json + ": " + e.getMessage());
                return PerfMain.EXIT_FAILED;
            }
        }
        return wrong > 0 ? PerfMain.EXIT_WRONG : 0;
    }

    /** The wrong elements of all rows (a row's -1, not checked, counts 0). */
    static long wrongTotal(List<Row> rows) {
        return rows.stream().mapToLong(r -> Math.max(0, r.wrong())).sum();
    }

    /** The kinds of link from this rank to the others ({@code self} only when it is alone). */
    static TreeSet<String> links(Communicator comm) {
        TreeSet<String> kinds = new TreeSet<>();
        for (int p = 0; p < comm.size(); p++) {
            kinds.add(comm.transportTo(p));
        }
        if (comm.size() > 1) {
            kinds.remove("self");
        }
        return kinds;
    }

    private void writeJson(List<Row> rows, double avgBusBw, long wrong, TreeSet<String> links) throws IOException {
        PerfConfig config = cmd.config();
        Map<String, Object> env = new LinkedHashMap<>();
        env.put("transport", cmd.transport);
        env.put("links", links);
        env.put("np", cmd.ranks);
        env.put("type", config.typeName());
        env.put("op", config.redopName());
        if (config.collective().rooted()) {
            env.put("root", config.root());
        }
        env.put("algorithm", config.algorithms());
        if (config.topology() != null) {
            env.put("topology", config.topology());
        }
        env.put("buffers", cmd.bufferKind());
        env.put("timeoutSeconds", cmd.timeoutSeconds);
        Map<String, Object> jvm = new LinkedHashMap<>();
        jvm.put("version", System.getProperty("java.runtime.version"));
        jvm.put("vendor", System.getProperty("java.vm.vendor"));
        jvm.put("vm", System.getProperty("java.vm.name"));
        jvm.put("arguments", ManagementFactory.getRuntimeMXBean().getInputArguments());
        env.put("jvm", jvm);
        env.put("host", hostName());
        env.put("os", System.getProperty("os.name") + " " + System.getProperty("os.version") + " "
                + System.getProperty("os.arch"));
        env.put("cpus", Runtime.getRuntime().availableProcessors());

        Map<String, Object> options = new LinkedHashMap<>();
        options.put("minBytes", Sizes.parse(cmd.minBytes));
        options.put("maxBytes", Sizes.parse(cmd.maxBytes));
        if (cmd.stepBytes != null) {
            options.put("stepBytes", Sizes.parse(cmd.stepBytes));
        } else {
            options.put("stepFactor", cmd.stepFactor == null ? 2.0 : cmd.stepFactor);
        }
        options.put("iters", cmd.iters);
        options.put("warmupIters", cmd.warmup);
        options.put("check", cmd.check == 1);
        options.put("jitWarmup", cmd.jitWarmup);
        options.put("jitQuietMaxSeconds", cmd.jitQuietMaxSeconds);

        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("tool", "panamax-perf");
        doc.put("collective", config.collective().cliName());
        doc.put("timestamp", Instant.now().toString());
        doc.put("environment", env);
        doc.put("options", options);
        doc.put("busBwFactor", config.collective().busBwFactor(cmd.ranks));
        doc.put("rows", rows);
        doc.put("avgBusBw", avgBusBw);
        Map<String, Double> perAlgorithm = new LinkedHashMap<>();
        byAlgorithm(rows).forEach((a, r) -> perAlgorithm.put(a, avgBusBw(r)));
        doc.put("avgBusBwByAlgorithm", perAlgorithm);
        doc.put("wrong", config.check() ? wrong : null);
        new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValue(cmd.json.toFile(), doc);
    }

    private static String hostName() {
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (IOException e) {
            return "unknown";
        }
    }

    /** A number as the command line would give it: no ".0" on whole numbers. */
    static String fmt(double d) {
        return d == Math.rint(d) ? Long.toString((long) d) : Double.toString(d);
    }
}
