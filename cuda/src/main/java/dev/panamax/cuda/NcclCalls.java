package dev.panamax.cuda;

import dev.panamax.bindings.nccl.nccl_h;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

import java.lang.foreign.MemorySegment;

/** NCCL result names, error construction and the type and operator mappings. None of these loads libnccl. */
final class NcclCalls {
    /** {@code ncclResult_t} names by value, as in nccl.h. */
    private static final String[] RESULT_NAMES = {
            "ncclSuccess", "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
            "ncclInvalidArgument", "ncclInvalidUsage", "ncclRemoteError", "ncclInProgress"};

    /** Strings returned by NCCL are read up to this many bytes. */
    private static final long MAX_STRING_BYTES = 64 * 1024;

    private NcclCalls() {
    }

    /** The name of an {@code ncclResult_t}, for example {@code ncclInvalidUsage}; unknown codes keep their number. */
    static String resultName(int code) {
        return code >= 0 && code < RESULT_NAMES.length ? RESULT_NAMES[code] : "ncclResult_t " + code;
    }

    /** The {@code ncclDataType_t} of a data type. Every {@link DataType} has one. */
    static int dataType(DataType type) {
        return switch (type) {
            case FLOAT32 -> nccl_h.ncclFloat32();
            case FLOAT64 -> nccl_h.ncclFloat64();
            case INT32 -> nccl_h.ncclInt32();
            case INT64 -> nccl_h.ncclInt64();
            case INT8 -> nccl_h.ncclInt8();
            case UINT8 -> nccl_h.ncclUint8();
            case FLOAT16 -> nccl_h.ncclFloat16();
            case BFLOAT16 -> nccl_h.ncclBfloat16();
        };
    }

    /**
     * The {@code ncclRedOp_t} of an operator on a communicator of {@code ranks} ranks: {@link ReduceOp#AVG} is
     * {@code ncclAvg} (NCCL 2.10 and later), except on one rank, where the average is the sum (the value itself)
     * and {@code ncclSum} is passed. On one rank NCCL runs {@code ncclAvg} through a kernel of its own that, in
     * NCCL 2.28.9 on an H200, left the last elements of a count such as 4194309 float32 unwritten (it splits the
     * count among its blocks rounding down); {@code ncclSum} there is a plain copy.
     */
    static int redOp(ReduceOp op, int ranks) {
        return redOp(ranks == 1 && op == ReduceOp.AVG ? ReduceOp.SUM : op);
    }

    /** The {@code ncclRedOp_t} of an operator ({@link ReduceOp#AVG} is {@code ncclAvg}, NCCL 2.10 and later). */
    static int redOp(ReduceOp op) {
        return switch (op) {
            case SUM -> nccl_h.ncclSum();
            case PROD -> nccl_h.ncclProd();
            case MIN -> nccl_h.ncclMin();
            case MAX -> nccl_h.ncclMax();
            case AVG -> nccl_h.ncclAvg();
        };
    }

    /** The exception for {@code call} returning (or reporting) {@code code}, with NCCL's strings for it. */
    static NcclException error(String call, int code, MemorySegment comm) {
        return new NcclException(call, code, resultName(code), errorString(code), lastError(comm), false);
    }

    /** The exception for an operation still {@code ncclInProgress} when its time ran out. */
    static NcclException timeout(String call, MemorySegment comm) {
        int code = nccl_h.ncclInProgress();
        return new NcclException(call, code, resultName(code), errorString(code), lastError(comm), true);
    }

    /** {@code ncclGetErrorString(code)}; a placeholder when libnccl cannot say. */
    static String errorString(int code) {
        try {
            MemorySegment s = nccl_h.ncclGetErrorString(code);
            return s.address() == 0 ? "unknown error code" : s.reinterpret(MAX_STRING_BYTES).getString(0);
        } catch (LinkageError e) { // no library: the name and number still say what happened
            return "unknown error code";
        }
    }

    /** {@code ncclGetLastError(comm)} (comm may be NULL); empty when there is none or libnccl cannot say. */
    static String lastError(MemorySegment comm) {
        try {
            MemorySegment s = nccl_h.ncclGetLastError(comm == null ? MemorySegment.NULL : comm);
            return s.address() == 0 ? "" : s.reinterpret(MAX_STRING_BYTES).getString(0).strip();
        } catch (LinkageError e) {
            return "";
        }
    }
}
