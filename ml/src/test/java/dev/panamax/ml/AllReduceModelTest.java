package dev.panamax.ml;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class AllReduceModelTest {
    /** Every rank fits the slowest rank's times, so all get the same model (its figures are timings: not checked here). */
    @Test
    void calibrationIsTheSameOnEveryRank() {
        List<AllReduceModel> models = LocalRanks.run(3, comm -> AllReduceModel.calibrate(comm, List.of(4096L, 65536L, 1L << 20), 1, 5));
        for (AllReduceModel m : models) {
            assertEquals(models.getFirst(), m);
        }
        AllReduceModel m = models.getFirst();
        assertTrue(m.a() >= 0 && m.b() >= 0 && Double.isFinite(m.gamma()), m.toString());
    }

    @Test
    void rejectsBadArguments() {
        assertThrows(IllegalArgumentException.class, () -> new AllReduceModel(-1, 1, 1));
        assertThrows(IllegalArgumentException.class, () -> new AllReduceModel(1, Double.NaN, 1));
        LocalRanks.run(1, comm -> {
            assertThrows(IllegalArgumentException.class, () -> AllReduceModel.calibrate(comm, List.of(4096L), 1, 1));
            assertThrows(IllegalArgumentException.class, () -> AllReduceModel.calibrate(comm, List.of(4096L, 4098L), 1, 1));
            return null;
        });
    }
}
