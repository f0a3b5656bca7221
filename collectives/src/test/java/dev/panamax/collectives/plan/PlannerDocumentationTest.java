package dev.panamax.collectives.plan;

import dev.panamax.collectives.Collective;
import dev.panamax.collectives.Topology;
import dev.panamax.collectives.schedule.Problem;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The examples of "How the planner chooses" in docs/guide/algorithms.md are what the planner picks. */
class PlannerDocumentationTest {
    private static final Path DOC = Path.of("..", "docs", "guide", "algorithms.md");
    private static final String BEGIN = "<!-- planner-examples:begin -->";
    private static final String END = "<!-- planner-examples:end -->";

    @Test
    void everyExampleInTheDocIsThePlannersChoice() throws IOException {
        String doc = Files.readString(DOC);
        int from = doc.indexOf(BEGIN);
        int to = doc.indexOf(END);
        assertTrue(from >= 0 && to > from, DOC + " lacks the " + BEGIN + " ... " + END + " table");
        List<String> wrong = new ArrayList<>();
        int rows = 0;
        for (String line : doc.substring(from + BEGIN.length(), to).strip().split("\n")) {
            String[] cells = line.strip().replaceAll("^\\||\\|$", "").split("\\|");
            if (cells.length != 4 || cells[0].isBlank() || !Character.isDigit(cells[0].strip().charAt(0))) {
                continue; // the header and its rule
            }
            int ranks = Integer.parseInt(cells[0].strip());
            String spec = cells[1].strip();
            Topology topology = spec.equals("flat") ? Topology.flat(ranks) : Topology.parse(spec);
            assertEquals(ranks, topology.size(), line + ": the topology has " + topology.size() + " ranks");
            long bytes = bytes(cells[2].strip());
            Problem problem = new Problem(Collective.ALL_REDUCE, 0, ranks, bytes / 4, 4, 0, topology);
            String picked = Planner.choose(problem).algorithm();
            if (!picked.equals(cells[3].strip())) {
                wrong.add(line.strip() + " -> the planner picks " + picked);
            }
            rows++;
        }
        assertTrue(rows >= 10, "expected the examples table, found " + rows + " rows");
        assertEquals(List.of(), wrong, "docs/guide/algorithms.md's planner examples are out of date");
    }

    private static long bytes(String size) {
        String[] parts = size.split(" ");
        long n = Long.parseLong(parts[0]);
        return switch (parts[1]) {
            case "B" -> n;
            case "KiB" -> n << 10;
            case "MiB" -> n << 20;
            default -> throw new IllegalArgumentException("unknown unit in '" + size + "'");
        };
    }
}
