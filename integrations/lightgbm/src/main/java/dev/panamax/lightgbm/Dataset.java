package dev.panamax.lightgbm;

import static java.lang.foreign.ValueLayout.JAVA_DOUBLE;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A LightGBM data set ({@code DatasetHandle}), the sole owner of its handle: {@link #close} frees it exactly
 * once. In a distributed job, create it after the thread's {@link NetworkSession} is open: LightGBM finds the bin
 * boundaries of the features together with the other ranks while it builds the data set.
 */
public final class Dataset implements AutoCloseable {
    private final AtomicReference<MemorySegment> handle;
    private final int rows;

    private Dataset(MemorySegment handle, int rows) {
        this.handle = new AtomicReference<>(handle);
        this.rows = rows;
    }

    /**
     * A data set of the dense row-major {@code rows x cols} matrix {@code values} (float64), built with the
     * LightGBM {@code parameters} ({@code key=value} separated by spaces). The values are copied.
     */
    public static Dataset fromMatrix(double[] values, int rows, int cols, String parameters) {
        if ((long) rows * cols != values.length) {
            throw new IllegalArgumentException(values.length + " values are not a " + rows + " x " + cols + " matrix");
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = arena.allocateFrom(JAVA_DOUBLE, values);
            return new Dataset(LightGbmC.datasetCreateFromMat(data, LightGbmC.DTYPE_FLOAT64, rows, cols, true,
                    parameters, MemorySegment.NULL), rows);
        }
    }

    /** Sets the label of every row (LightGBM keeps labels as float32). */
    public void setLabels(float[] labels) {
        if (labels.length != rows) {
            throw new IllegalArgumentException(labels.length + " labels for " + rows + " rows");
        }
        try (Arena arena = Arena.ofConfined()) {
            LightGbmC.datasetSetField(handle(), "label", arena.allocateFrom(JAVA_FLOAT, labels), labels.length,
                    LightGbmC.DTYPE_FLOAT32);
        }
    }

    /**
     * Sets the init score of every row: the raw score training starts from instead of the label average. For
     * {@code k > 1} classes, {@code rows * k} scores grouped by class ({@code scores[c * rows + i]}).
     */
    public void setInitScores(double[] scores) {
        if (rows == 0 || scores.length % rows != 0) {
            throw new IllegalArgumentException(scores.length + " init scores for " + rows + " rows");
        }
        try (Arena arena = Arena.ofConfined()) {
            LightGbmC.datasetSetField(handle(), "init_score", arena.allocateFrom(JAVA_DOUBLE, scores), scores.length,
                    LightGbmC.DTYPE_FLOAT64);
        }
    }

    /** The number of rows on this rank. */
    public int rows() {
        return rows;
    }

    /** Whether {@link #close} has not run yet. */
    public boolean isOpen() {
        return handle.get() != null;
    }

    /** The native handle; the data set keeps owning it. */
    MemorySegment handle() {
        MemorySegment h = handle.get();
        if (h == null) {
            throw new IllegalStateException("the data set is closed");
        }
        return h;
    }

    /** Frees the native data set; later calls do nothing. Close the boosters trained on it first. */
    @Override
    public void close() {
        MemorySegment h = handle.getAndSet(null);
        if (h != null) {
            LightGbmC.datasetFree(h);
        }
    }
}
