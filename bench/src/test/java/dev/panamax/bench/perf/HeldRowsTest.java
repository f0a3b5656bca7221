package dev.panamax.bench.perf;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

class HeldRowsTest {
    private static Row row(long count, double timeUs) {
        return Row.of(PerfCollective.ALLREDUCE, count, 4, "float32", "sum", -1, 4, timeUs, 0, 0, 0, 0, 0);
    }

    private static List<Long> counts(List<Row> rows) {
        return rows.stream().map(Row::count).toList();
    }

    @Test
    void shortRowsWaitForTheNextLongRowAndGoOutBeforeIt() {
        List<Row> printed = new ArrayList<>();
        HeldRows held = new HeldRows(printed::add, 20);
        held.add(row(2, 3.0));     // 20 calls of 3 us: 60 us in all
        held.add(row(16, 499.9));  // just under 10 ms in all
        assertEquals(List.of(), counts(printed), "both held");
        held.add(row(128, 500.0)); // 10 ms in all
        assertEquals(List.of(2L, 16L, 128L), counts(printed), "in order, with the long row");
        held.add(row(1024, 40_000));
        assertEquals(List.of(2L, 16L, 128L, 1024L), counts(printed), "a long row goes out at once");
        held.add(row(4096, 1.0));
        held.flush();
        held.flush();
        assertEquals(List.of(2L, 16L, 128L, 1024L, 4096L), counts(printed), "the rest at the end, once");
    }

    @Test
    void howLongARowTookCountsItsTimedCalls() {
        List<Row> printed = new ArrayList<>();
        new HeldRows(printed::add, 100_000).add(row(2, 0.1)); // 100 000 calls of 0.1 us: 10 ms
        assertEquals(List.of(2L), counts(printed));
        new HeldRows(printed::add, 99_999).add(row(2, 0.1));
        assertEquals(List.of(2L), counts(printed));
    }
}
