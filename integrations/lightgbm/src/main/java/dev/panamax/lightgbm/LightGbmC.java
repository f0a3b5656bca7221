package dev.panamax.lightgbm;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_DOUBLE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.util.function.Consumer;

/**
 * Hand-written FFM bindings of the part of LightGBM's C API ({@code include/LightGBM/c_api.h}, v3.3.5, the
 * version that lightgbmlib 3.3.500 bundles) needed to train from in-memory data, compare models and hand the
 * network to an outside library. The C prototype is quoted above each binding. Handles are raw addresses here;
 * {@link Dataset} and {@link Booster} own them.
 *
 * <p>Every call that returns a non-zero code throws a {@link LightGbmException} naming the call, the code and
 * {@code LGBM_GetLastError()} (kept per thread by LightGBM, read on the calling thread). A call made while the
 * thread's {@link NetworkSession} holds a failure from an upcall throws that failure instead, as a
 * {@link LightGbmNetworkException}. The library loads on the first call, not before.
 */
public final class LightGbmC {
    /** {@code C_API_DTYPE_FLOAT32}. */
    public static final int DTYPE_FLOAT32 = 0;
    /** {@code C_API_DTYPE_FLOAT64}. */
    public static final int DTYPE_FLOAT64 = 1;
    /** {@code C_API_DTYPE_INT32}. */
    public static final int DTYPE_INT32 = 2;
    /** {@code C_API_DTYPE_INT64}. */
    public static final int DTYPE_INT64 = 3;
    /** {@code C_API_PREDICT_NORMAL}: with the objective's transform (probabilities for binary). */
    public static final int PREDICT_NORMAL = 0;
    /** {@code C_API_PREDICT_RAW_SCORE}. */
    public static final int PREDICT_RAW_SCORE = 1;
    /** {@code C_API_PREDICT_LEAF_INDEX}. */
    public static final int PREDICT_LEAF_INDEX = 2;
    /** {@code C_API_PREDICT_CONTRIB}. */
    public static final int PREDICT_CONTRIB = 3;
    /** {@code C_API_FEATURE_IMPORTANCE_SPLIT}. */
    public static final int FEATURE_IMPORTANCE_SPLIT = 0;
    /** {@code C_API_FEATURE_IMPORTANCE_GAIN}. */
    public static final int FEATURE_IMPORTANCE_GAIN = 1;

    private LightGbmC() {
    }

    /** The downcall handles, made (and the library loaded) on first use. */
    private static final class H {
        // LIGHTGBM_C_EXPORT const char* LGBM_GetLastError();
        static final MethodHandle GET_LAST_ERROR = NativeLibrary.downcall("LGBM_GetLastError",
                FunctionDescriptor.of(ADDRESS));

        // LIGHTGBM_C_EXPORT int LGBM_DatasetCreateFromMat(const void* data, int data_type, int32_t nrow,
        //     int32_t ncol, int is_row_major, const char* parameters, const DatasetHandle reference,
        //     DatasetHandle* out);
        static final MethodHandle DATASET_CREATE_FROM_MAT = NativeLibrary.downcall("LGBM_DatasetCreateFromMat",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS,
                        ADDRESS));

        // LIGHTGBM_C_EXPORT int LGBM_DatasetSetField(DatasetHandle handle, const char* field_name,
        //     const void* field_data, int num_element, int type);
        static final MethodHandle DATASET_SET_FIELD = NativeLibrary.downcall("LGBM_DatasetSetField",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, JAVA_INT, JAVA_INT));

        // LIGHTGBM_C_EXPORT int LGBM_DatasetFree(DatasetHandle handle);
        static final MethodHandle DATASET_FREE = NativeLibrary.downcall("LGBM_DatasetFree",
                FunctionDescriptor.of(JAVA_INT, ADDRESS));

        // LIGHTGBM_C_EXPORT int LGBM_BoosterCreate(const DatasetHandle train_data, const char* parameters,
        //     BoosterHandle* out);
        static final MethodHandle BOOSTER_CREATE = NativeLibrary.downcall("LGBM_BoosterCreate",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));

        // LIGHTGBM_C_EXPORT int LGBM_BoosterLoadModelFromString(const char* model_str, int* out_num_iterations,
        //     BoosterHandle* out);
        static final MethodHandle BOOSTER_LOAD_MODEL_FROM_STRING = NativeLibrary.downcall(
                "LGBM_BoosterLoadModelFromString", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));

        // LIGHTGBM_C_EXPORT int LGBM_BoosterMerge(BoosterHandle handle, BoosterHandle other_handle);
        static final MethodHandle BOOSTER_MERGE = NativeLibrary.downcall("LGBM_BoosterMerge",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));

        // LIGHTGBM_C_EXPORT int LGBM_BoosterUpdateOneIter(BoosterHandle handle, int* is_finished);
        static final MethodHandle BOOSTER_UPDATE_ONE_ITER = NativeLibrary.downcall("LGBM_BoosterUpdateOneIter",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));

        // LIGHTGBM_C_EXPORT int LGBM_BoosterGetEvalCounts(BoosterHandle handle, int* out_len);
        static final MethodHandle BOOSTER_GET_EVAL_COUNTS = NativeLibrary.downcall("LGBM_BoosterGetEvalCounts",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));

        // LIGHTGBM_C_EXPORT int LGBM_BoosterGetEval(BoosterHandle handle, int data_idx, int* out_len,
        //     double* out_results);
        static final MethodHandle BOOSTER_GET_EVAL = NativeLibrary.downcall("LGBM_BoosterGetEval",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS, ADDRESS));

        // LIGHTGBM_C_EXPORT int LGBM_BoosterSaveModelToString(BoosterHandle handle, int start_iteration,
        //     int num_iteration, int feature_importance_type, int64_t buffer_len, int64_t* out_len,
        //     char* out_str);
        static final MethodHandle BOOSTER_SAVE_MODEL_TO_STRING = NativeLibrary.downcall(
                "LGBM_BoosterSaveModelToString",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_LONG, ADDRESS, ADDRESS));

        // LIGHTGBM_C_EXPORT int LGBM_BoosterCalcNumPredict(BoosterHandle handle, int num_row, int predict_type,
        //     int start_iteration, int num_iteration, int64_t* out_len);
        static final MethodHandle BOOSTER_CALC_NUM_PREDICT = NativeLibrary.downcall("LGBM_BoosterCalcNumPredict",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS));

        // LIGHTGBM_C_EXPORT int LGBM_BoosterPredictForMat(BoosterHandle handle, const void* data, int data_type,
        //     int32_t nrow, int32_t ncol, int is_row_major, int predict_type, int start_iteration,
        //     int num_iteration, const char* parameter, int64_t* out_len, double* out_result);
        static final MethodHandle BOOSTER_PREDICT_FOR_MAT = NativeLibrary.downcall("LGBM_BoosterPredictForMat",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT,
                        JAVA_INT, JAVA_INT, ADDRESS, ADDRESS, ADDRESS));

        // LIGHTGBM_C_EXPORT int LGBM_BoosterFree(BoosterHandle handle);
        static final MethodHandle BOOSTER_FREE = NativeLibrary.downcall("LGBM_BoosterFree",
                FunctionDescriptor.of(JAVA_INT, ADDRESS));

        // LIGHTGBM_C_EXPORT int LGBM_NetworkInit(const char* machines, int local_listen_port,
        //     int listen_time_out, int num_machines);
        static final MethodHandle NETWORK_INIT = NativeLibrary.downcall("LGBM_NetworkInit",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, JAVA_INT));

        // LIGHTGBM_C_EXPORT int LGBM_NetworkInitWithFunctions(int num_machines, int rank,
        //     void* reduce_scatter_ext_fun, void* allgather_ext_fun);
        static final MethodHandle NETWORK_INIT_WITH_FUNCTIONS = NativeLibrary.downcall(
                "LGBM_NetworkInitWithFunctions", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS));

        // LIGHTGBM_C_EXPORT int LGBM_NetworkFree();
        static final MethodHandle NETWORK_FREE = NativeLibrary.downcall("LGBM_NetworkFree",
                FunctionDescriptor.of(JAVA_INT));
    }

    /** {@code LGBM_GetLastError()}: the message of the last error on this thread. */
    public static String lastError() {
        try {
            MemorySegment message = (MemorySegment) H.GET_LAST_ERROR.invokeExact();
            if (message.equals(MemorySegment.NULL)) {
                return "(no message)";
            }
            return message.reinterpret(Long.MAX_VALUE).getString(0, StandardCharsets.UTF_8);
        } catch (Throwable t) {
            throw rethrown("LGBM_GetLastError", t);
        }
    }

    /**
     * {@code LGBM_DatasetCreateFromMat}: a dataset from a dense {@code nrow x ncol} matrix of {@code dataType} at
     * {@code data}; {@code reference} is a dataset whose bins to reuse, or {@link MemorySegment#NULL}. Returns the
     * new handle, which the caller must free with {@link #datasetFree}.
     */
    public static MemorySegment datasetCreateFromMat(MemorySegment data, int dataType, int nrow, int ncol,
            boolean rowMajor, String parameters, MemorySegment reference) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            int rc = (int) H.DATASET_CREATE_FROM_MAT.invokeExact(data, dataType, nrow, ncol, rowMajor ? 1 : 0,
                    arena.allocateFrom(parameters), reference, out);
            checkCode("LGBM_DatasetCreateFromMat", rc);
            return created("LGBM_DatasetCreateFromMat", out.get(ADDRESS, 0), LightGbmC::datasetFree);
        } catch (Throwable t) {
            throw rethrown("LGBM_DatasetCreateFromMat", t);
        }
    }

    /** {@code LGBM_DatasetSetField}: sets {@code field} ({@code label}, {@code weight}, ...) to the elements. */
    public static void datasetSetField(MemorySegment handle, String field, MemorySegment data, int numElement,
            int type) {
        try (Arena arena = Arena.ofConfined()) {
            int rc = (int) H.DATASET_SET_FIELD.invokeExact(handle, arena.allocateFrom(field), data, numElement, type);
            check("LGBM_DatasetSetField", rc);
        } catch (Throwable t) {
            throw rethrown("LGBM_DatasetSetField", t);
        }
    }

    /** {@code LGBM_DatasetFree}. */
    public static void datasetFree(MemorySegment handle) {
        try {
            int rc = (int) H.DATASET_FREE.invokeExact(handle);
            checkCode("LGBM_DatasetFree", rc);
        } catch (Throwable t) {
            throw rethrown("LGBM_DatasetFree", t);
        }
    }

    /** {@code LGBM_BoosterCreate}: a booster on {@code trainData}; the caller frees it with {@link #boosterFree}. */
    public static MemorySegment boosterCreate(MemorySegment trainData, String parameters) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            int rc = (int) H.BOOSTER_CREATE.invokeExact(trainData, arena.allocateFrom(parameters), out);
            checkCode("LGBM_BoosterCreate", rc);
            return created("LGBM_BoosterCreate", out.get(ADDRESS, 0), LightGbmC::boosterFree);
        } catch (Throwable t) {
            throw rethrown("LGBM_BoosterCreate", t);
        }
    }

    /**
     * {@code LGBM_BoosterLoadModelFromString}: a booster (for prediction and merging; it has no training data)
     * of the model text; the caller frees it with {@link #boosterFree}.
     */
    public static MemorySegment boosterLoadModelFromString(String model) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment iterations = arena.allocate(JAVA_INT);
            MemorySegment out = arena.allocate(ADDRESS);
            int rc = (int) H.BOOSTER_LOAD_MODEL_FROM_STRING.invokeExact(arena.allocateFrom(model), iterations, out);
            checkCode("LGBM_BoosterLoadModelFromString", rc);
            return out.get(ADDRESS, 0);
        } catch (Throwable t) {
            throw rethrown("LGBM_BoosterLoadModelFromString", t);
        }
    }

    /**
     * {@code LGBM_BoosterMerge}: puts the trees of {@code other} before those of {@code handle} (LightGBM's way to
     * continue training from a model, with the model's raw scores as the data set's init scores).
     */
    public static void boosterMerge(MemorySegment handle, MemorySegment other) {
        try {
            int rc = (int) H.BOOSTER_MERGE.invokeExact(handle, other);
            check("LGBM_BoosterMerge", rc);
        } catch (Throwable t) {
            throw rethrown("LGBM_BoosterMerge", t);
        }
    }

    /** {@code LGBM_BoosterUpdateOneIter}: one boosting iteration; true when training cannot go on. */
    public static boolean boosterUpdateOneIter(MemorySegment handle) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment finished = arena.allocate(JAVA_INT);
            int rc = (int) H.BOOSTER_UPDATE_ONE_ITER.invokeExact(handle, finished);
            check("LGBM_BoosterUpdateOneIter", rc);
            return finished.get(JAVA_INT, 0) != 0;
        } catch (Throwable t) {
            throw rethrown("LGBM_BoosterUpdateOneIter", t);
        }
    }

    /** {@code LGBM_BoosterGetEvalCounts}: how many metrics {@link #boosterGetEval} returns. */
    public static int boosterGetEvalCounts(MemorySegment handle) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment outLen = arena.allocate(JAVA_INT);
            int rc = (int) H.BOOSTER_GET_EVAL_COUNTS.invokeExact(handle, outLen);
            check("LGBM_BoosterGetEvalCounts", rc);
            return outLen.get(JAVA_INT, 0);
        } catch (Throwable t) {
            throw rethrown("LGBM_BoosterGetEvalCounts", t);
        }
    }

    /** {@code LGBM_BoosterGetEval}: the metrics on data set {@code dataIdx} (0: the training data). */
    public static double[] boosterGetEval(MemorySegment handle, int dataIdx) {
        int count = boosterGetEvalCounts(handle);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment outLen = arena.allocate(JAVA_INT);
            MemorySegment results = arena.allocate(JAVA_DOUBLE, Math.max(1, count));
            int rc = (int) H.BOOSTER_GET_EVAL.invokeExact(handle, dataIdx, outLen, results);
            check("LGBM_BoosterGetEval", rc);
            return results.asSlice(0, (long) outLen.get(JAVA_INT, 0) * Double.BYTES).toArray(JAVA_DOUBLE);
        } catch (Throwable t) {
            throw rethrown("LGBM_BoosterGetEval", t);
        }
    }

    /**
     * {@code LGBM_BoosterSaveModelToString}: the model text of iterations {@code [startIteration,
     * startIteration + numIteration)} ({@code numIteration <= 0}: all). Asks twice when the first buffer is short.
     */
    public static String boosterSaveModelToString(MemorySegment handle, int startIteration, int numIteration,
            int featureImportanceType) {
        long bufferLen = 1 << 16;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment outLen = arena.allocate(JAVA_LONG);
            while (true) {
                MemorySegment buffer = arena.allocate(bufferLen);
                int rc = (int) H.BOOSTER_SAVE_MODEL_TO_STRING.invokeExact(handle, startIteration, numIteration,
                        featureImportanceType, bufferLen, outLen, buffer);
                check("LGBM_BoosterSaveModelToString", rc);
                long needed = outLen.get(JAVA_LONG, 0);
                if (needed <= bufferLen) {
                    return buffer.getString(0, StandardCharsets.UTF_8);
                }
                bufferLen = needed;
            }
        } catch (Throwable t) {
            throw rethrown("LGBM_BoosterSaveModelToString", t);
        }
    }

    /** {@code LGBM_BoosterCalcNumPredict}: how many doubles a prediction of {@code numRow} rows writes. */
    public static long boosterCalcNumPredict(MemorySegment handle, int numRow, int predictType, int startIteration,
            int numIteration) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment outLen = arena.allocate(JAVA_LONG);
            int rc = (int) H.BOOSTER_CALC_NUM_PREDICT.invokeExact(handle, numRow, predictType, startIteration,
                    numIteration, outLen);
            check("LGBM_BoosterCalcNumPredict", rc);
            return outLen.get(JAVA_LONG, 0);
        } catch (Throwable t) {
            throw rethrown("LGBM_BoosterCalcNumPredict", t);
        }
    }

    /**
     * {@code LGBM_BoosterPredictForMat}: predicts the dense matrix at {@code data} into {@code outResult} (at least
     * {@link #boosterCalcNumPredict} doubles); returns how many it wrote.
     */
    public static long boosterPredictForMat(MemorySegment handle, MemorySegment data, int dataType, int nrow,
            int ncol, boolean rowMajor, int predictType, int startIteration, int numIteration, String parameter,
            MemorySegment outResult) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment outLen = arena.allocate(JAVA_LONG);
            int rc = (int) H.BOOSTER_PREDICT_FOR_MAT.invokeExact(handle, data, dataType, nrow, ncol,
                    rowMajor ? 1 : 0, predictType, startIteration, numIteration, arena.allocateFrom(parameter),
                    outLen, outResult);
            check("LGBM_BoosterPredictForMat", rc);
            return outLen.get(JAVA_LONG, 0);
        } catch (Throwable t) {
            throw rethrown("LGBM_BoosterPredictForMat", t);
        }
    }

    /** {@code LGBM_BoosterFree}. */
    public static void boosterFree(MemorySegment handle) {
        try {
            int rc = (int) H.BOOSTER_FREE.invokeExact(handle);
            checkCode("LGBM_BoosterFree", rc);
        } catch (Throwable t) {
            throw rethrown("LGBM_BoosterFree", t);
        }
    }

    /**
     * {@code LGBM_NetworkInit}: joins this thread to a socket network of {@code numMachines} listed as
     * {@code ip:port,ip:port,...}; this rank is the entry with a local address and {@code localListenPort}.
     * Blocks until every machine is connected or {@code listenTimeOutMinutes} pass.
     */
    public static void networkInit(String machines, int localListenPort, int listenTimeOutMinutes, int numMachines) {
        try (Arena arena = Arena.ofConfined()) {
            int rc = (int) H.NETWORK_INIT.invokeExact(arena.allocateFrom(machines), localListenPort,
                    listenTimeOutMinutes, numMachines);
            checkCode("LGBM_NetworkInit", rc);
        } catch (Throwable t) {
            throw rethrown("LGBM_NetworkInit", t);
        }
    }

    /**
     * {@code LGBM_NetworkInitWithFunctions}: this thread is {@code rank} of {@code numMachines}, and LightGBM's
     * reduce-scatter and all-gather call the two function pointers (see {@link NetworkSession}).
     */
    public static void networkInitWithFunctions(int numMachines, int rank, MemorySegment reduceScatter,
            MemorySegment allgather) {
        try {
            int rc = (int) H.NETWORK_INIT_WITH_FUNCTIONS.invokeExact(numMachines, rank, reduceScatter, allgather);
            checkCode("LGBM_NetworkInitWithFunctions", rc);
        } catch (Throwable t) {
            throw rethrown("LGBM_NetworkInitWithFunctions", t);
        }
    }

    /** {@code LGBM_NetworkFree}: this thread leaves the network (back to one machine). */
    public static void networkFree() {
        try {
            int rc = (int) H.NETWORK_FREE.invokeExact();
            checkCode("LGBM_NetworkFree", rc);
        } catch (Throwable t) {
            throw rethrown("LGBM_NetworkFree", t);
        }
    }

    /** Throws the thread's pending network failure, else a {@link LightGbmException} for a non-zero code. */
    private static void check(String call, int rc) {
        NetworkSession.throwIfFailed(call, rc == 0 ? null : new LightGbmException(call, rc, lastError()));
        checkCode(call, rc);
    }

    /**
     * A handle that {@code call} created: returned, unless an upcall failed meanwhile; then it is freed (the
     * caller never owns it) and the failure thrown.
     */
    private static MemorySegment created(String call, MemorySegment handle, Consumer<MemorySegment> free) {
        try {
            NetworkSession.throwIfFailed(call, null);
            return handle;
        } catch (RuntimeException e) {
            try {
                free.accept(handle);
            } catch (RuntimeException freeing) {
                e.addSuppressed(freeing);
            }
            throw e;
        }
    }

    private static void checkCode(String call, int rc) {
        if (rc != 0) {
            throw new LightGbmException(call, rc, lastError());
        }
    }

    private static RuntimeException rethrown(String call, Throwable t) {
        if (t instanceof RuntimeException re) {
            return re;
        }
        if (t instanceof Error e) {
            throw e;
        }
        return new IllegalStateException(call + " failed: " + t, t);
    }
}
