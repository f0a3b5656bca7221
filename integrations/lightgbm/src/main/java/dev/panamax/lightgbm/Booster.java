package dev.panamax.lightgbm;

import static java.lang.foreign.ValueLayout.JAVA_DOUBLE;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A LightGBM booster ({@code BoosterHandle}) trained on a {@link Dataset}, the sole owner of its handle:
 * {@link #close} frees it exactly once. LightGBM keeps a pointer to the training data, so the data set must stay
 * open while the booster trains. In a distributed job every rank calls the same methods in the same order on the
 * thread of its {@link NetworkSession}: training iterations run collectives.
 */
public final class Booster implements AutoCloseable {
    private final AtomicReference<MemorySegment> handle;
    private final Dataset train;

    private Booster(MemorySegment handle, Dataset train) {
        this.handle = new AtomicReference<>(handle);
        this.train = train;
    }

    /** A booster on {@code train} with the LightGBM {@code parameters} ({@code key=value} separated by spaces). */
    public static Booster create(Dataset train, String parameters) {
        return new Booster(LightGbmC.boosterCreate(train.handle(), parameters), train);
    }

    /**
     * A booster of a saved model ({@link #modelString}), without training data: it predicts and can be
     * {@linkplain #mergeBefore merged} into a booster that trains on.
     */
    public static Booster fromModelString(String model) {
        return new Booster(LightGbmC.boosterLoadModelFromString(model), null);
    }

    /**
     * Puts the trees of {@code earlier} before this booster's own, so that this booster's model continues that
     * model; as LightGBM's own packages continue training, the training data set's init scores should then be
     * {@code earlier}'s raw scores ({@link Dataset#setInitScores}).
     */
    public void mergeBefore(Booster earlier) {
        LightGbmC.boosterMerge(handle(), earlier.handle());
    }

    /** One boosting iteration; true when LightGBM cannot improve further (no split had a positive gain). */
    public boolean updateOneIteration() {
        if (train == null) {
            throw new IllegalStateException("a booster loaded from a model has no training data");
        }
        if (!train.isOpen()) {
            throw new IllegalStateException("the training data set was closed before training ended");
        }
        return LightGbmC.boosterUpdateOneIter(handle());
    }

    /** The values of the configured metrics on data set {@code dataIdx} (0: the training data). */
    public double[] eval(int dataIdx) {
        return LightGbmC.boosterGetEval(handle(), dataIdx);
    }

    /** The whole model as LightGBM's text format. */
    public String modelString() {
        return LightGbmC.boosterSaveModelToString(handle(), 0, -1, LightGbmC.FEATURE_IMPORTANCE_SPLIT);
    }

    /** The model of the first {@code iterations} iterations (merged ones included) as LightGBM's text format. */
    public String modelString(int iterations) {
        if (iterations < 1) {
            throw new IllegalArgumentException("a model of " + iterations + " iterations");
        }
        return LightGbmC.boosterSaveModelToString(handle(), 0, iterations, LightGbmC.FEATURE_IMPORTANCE_SPLIT);
    }

    /**
     * Predictions for the dense row-major {@code rows x cols} matrix {@code values}: one value a row for
     * {@link LightGbmC#PREDICT_NORMAL} on a binary model (the probability of class 1).
     *
     * @param predictType one of {@link LightGbmC}'s {@code PREDICT_} constants
     */
    public double[] predict(double[] values, int rows, int cols, int predictType, String parameters) {
        if ((long) rows * cols != values.length) {
            throw new IllegalArgumentException(values.length + " values are not a " + rows + " x " + cols + " matrix");
        }
        MemorySegment h = handle();
        long n = LightGbmC.boosterCalcNumPredict(h, rows, predictType, 0, -1);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = arena.allocateFrom(JAVA_DOUBLE, values);
            MemorySegment out = arena.allocate(JAVA_DOUBLE, Math.max(1, n));
            long written = LightGbmC.boosterPredictForMat(h, data, LightGbmC.DTYPE_FLOAT64, rows, cols, true,
                    predictType, 0, -1, parameters, out);
            return out.asSlice(0, written * Double.BYTES).toArray(JAVA_DOUBLE);
        }
    }

    private MemorySegment handle() {
        MemorySegment h = handle.get();
        if (h == null) {
            throw new IllegalStateException("the booster is closed");
        }
        return h;
    }

    /** Frees the native booster; later calls do nothing. */
    @Override
    public void close() {
        MemorySegment h = handle.getAndSet(null);
        if (h != null) {
            LightGbmC.boosterFree(h);
        }
    }
}
