package dev.panamax.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.panamax.bench.perf.PerfCollective;
import dev.panamax.bench.perf.Row;
import dev.panamax.memory.DataType;

import java.io.File;
import java.io.IOException;
import java.util.Locale;

/**
 * Prints algbw and busbw (GB/s, nccl-tests definitions) for the {@link CollectiveBenchmark} results
 * in a JMH {@code -rf json} file:
 * {@code java -cp bench/target/panamax-bench.jar dev.panamax.bench.BandwidthReport jmh-result.json}.
 */
public final class BandwidthReport {
    private BandwidthReport() {
    }

    public static void main(String[] args) throws IOException {
        if (args.length != 1) {
            System.err.println("usage: BandwidthReport JMH_RESULT.json");
            System.exit(2);
        }
        JsonNode results = new ObjectMapper().readTree(new File(args[0]));
        System.out.printf(Locale.ROOT, "%-14s %-9s %5s %-8s %-6s %12s %12s %10s %8s %8s%n",
                "collective", "transport", "ranks", "type", "op", "size(B)", "count", "time(us)", "algbw", "busbw");
        for (JsonNode r : results) {
            if (!r.path("benchmark").asText().endsWith("CollectiveBenchmark.collective")) {
                continue;
            }
            JsonNode p = r.path("params");
            PerfCollective c = PerfCollective.parse(p.path("collective").asText());
            int ranks = p.path("ranks").asInt();
            DataType type = DataType.parse(p.path("type").asText());
            long count = c.count(p.path("bytes").asLong(), type.byteSize(), ranks);
            long size = c.sizeBytes(count, type.byteSize(), ranks);
            double us = toMicros(r.path("primaryMetric").path("score").asDouble(),
                    r.path("primaryMetric").path("scoreUnit").asText());
            double algBw = Row.algBw(size, us);
            System.out.printf(Locale.ROOT, "%-14s %-9s %5d %-8s %-6s %12d %12d %10.2f %8.2f %8.2f%n", c.cliName(),
                    p.path("transport").asText(),
                    ranks, type.canonicalName(), c.reduces() ? p.path("op").asText() : "none", size, count, us, algBw,
                            algBw * c.busBwFactor(ranks));
        }
    }

    private static double toMicros(double score, String unit) {
        return switch (unit) {
            case "ns/op" -> score / 1e3;
            case "us/op" -> score;
            case "ms/op" -> score * 1e3;
            case "s/op" -> score * 1e6;
            default -> throw new IllegalArgumentException("expected an average-time score, got unit " + unit);
        };
    }
}
