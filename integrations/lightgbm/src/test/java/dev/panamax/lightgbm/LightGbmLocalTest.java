package dev.panamax.lightgbm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The bindings on one machine, no network: load, train, evaluate, save, predict, errors, ownership. */
class LightGbmLocalTest {
    private static final String PARAMS = "objective=binary metric=binary_logloss num_leaves=15 num_threads=1"
            + " deterministic=true force_row_wise=true verbose=-1 seed=7";

    @Test
    void trainsAndPredictsOnOneMachine() {
        BinaryData data = BinaryData.generate(42, 2000, 8);
        try (Dataset train = Dataset.fromMatrix(data.features(), data.rows(), data.cols(), PARAMS)) {
            train.setLabels(data.labels());
            try (Booster booster = Booster.create(train, PARAMS)) {
                double first = Double.NaN;
                for (int i = 0; i < 10; i++) {
                    assertFalse(booster.updateOneIteration());
                    double[] eval = booster.eval(0);
                    assertEquals(1, eval.length);
                    if (i == 0) {
                        first = eval[0];
                    }
                }
                assertTrue(booster.eval(0)[0] < first, "the training loss falls");
                String model = booster.modelString();
                assertTrue(model.startsWith("tree\n"), model.substring(0, 40));
                assertTrue(model.contains("Tree=9\n"), "ten trees");
                double[] p = booster.predict(data.features(), data.rows(), data.cols(), LightGbmC.PREDICT_NORMAL, "");
                assertEquals(data.rows(), p.length);
                assertTrue(data.accuracy(p) > 0.8, "accuracy " + data.accuracy(p));
            }
        }
    }

    @Test
    void anErrorNamesTheCallAndLightGbmsMessage() {
        BinaryData data = BinaryData.generate(1, 100, 3);
        try (Dataset train = Dataset.fromMatrix(data.features(), data.rows(), data.cols(), PARAMS)) {
            train.setLabels(data.labels());
            LightGbmException e = assertThrows(LightGbmException.class,
                    () -> Booster.create(train, "objective=no_such_objective verbose=-1"));
            assertEquals("LGBM_BoosterCreate", e.call());
            assertEquals(-1, e.code());
            assertTrue(e.getMessage().contains("no_such_objective"), e.getMessage());
        }
    }

    @Test
    void handlesAreFreedOnceAndUnusableAfterClose() {
        BinaryData data = BinaryData.generate(3, 200, 3);
        Dataset train = Dataset.fromMatrix(data.features(), data.rows(), data.cols(), PARAMS);
        train.setLabels(data.labels());
        Booster booster = Booster.create(train, PARAMS);
        booster.close();
        booster.close();
        assertThrows(IllegalStateException.class, booster::modelString);
        train.close();
        train.close();
        assertFalse(train.isOpen());
        assertThrows(IllegalStateException.class, () -> train.setLabels(data.labels()));
    }
}
