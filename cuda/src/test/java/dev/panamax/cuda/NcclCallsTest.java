package dev.panamax.cuda;

import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import org.junit.jupiter.api.Test;

import java.util.EnumMap;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The mapping tables against the values of nccl.h, and the error message format. None needs libnccl. */
class NcclCallsTest {

    @Test
    void everyDataTypeMapsToItsNcclDataType() {
        // ncclDataType_t in nccl.h: ncclInt8 0, ncclUint8 1, ncclInt32 2, ncclInt64 4, ncclFloat16 6,
        // ncclFloat32 7, ncclFloat64 8, ncclBfloat16 9.
        Map<DataType, Integer> expected = new EnumMap<>(Map.of(
                DataType.INT8, 0, DataType.UINT8, 1, DataType.INT32, 2, DataType.INT64, 4,
                DataType.FLOAT16, 6, DataType.FLOAT32, 7, DataType.FLOAT64, 8, DataType.BFLOAT16, 9));
        assertEquals(DataType.values().length, expected.size());
        for (DataType t : DataType.values()) {
            assertEquals(expected.get(t), NcclCalls.dataType(t), t.toString());
        }
    }

    @Test
    void everyReduceOpMapsToItsNcclRedOp() {
        // ncclRedOp_t in nccl.h: ncclSum 0, ncclProd 1, ncclMax 2, ncclMin 3, ncclAvg 4.
        Map<ReduceOp, Integer> expected = new EnumMap<>(Map.of(
                ReduceOp.SUM, 0, ReduceOp.PROD, 1, ReduceOp.MAX, 2, ReduceOp.MIN, 3, ReduceOp.AVG, 4));
        assertEquals(ReduceOp.values().length, expected.size());
        for (ReduceOp op : ReduceOp.values()) {
            assertEquals(expected.get(op), NcclCalls.redOp(op), op.toString());
        }
    }

    @Test
    void anAverageOnOneRankIsPassedAsASum() {
        // On one rank NCCL 2.28.9 runs ncclAvg through a kernel that left the tail of some counts unwritten.
        assertEquals(0, NcclCalls.redOp(ReduceOp.AVG, 1));
        assertEquals(4, NcclCalls.redOp(ReduceOp.AVG, 2));
        for (ReduceOp op : ReduceOp.values()) {
            if (op != ReduceOp.AVG) {
                assertEquals(NcclCalls.redOp(op), NcclCalls.redOp(op, 1), op.toString());
            }
        }
    }

    @Test
    void resultNamesFollowTheHeader() {
        String[] names = {"ncclSuccess", "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
                "ncclInvalidArgument", "ncclInvalidUsage", "ncclRemoteError", "ncclInProgress"};
        for (int code = 0; code < names.length; code++) {
            assertEquals(names[code], NcclCalls.resultName(code));
        }
        assertEquals("ncclResult_t 8", NcclCalls.resultName(8));
        assertEquals("ncclResult_t -1", NcclCalls.resultName(-1));
    }

    @Test
    void messagesNameTheCallTheResultAndTheLastError() {
        NcclException e = new NcclException("ncclAllReduce(count 4, float32, SUM, rank 0 of 2)", 4,
                "ncclInvalidArgument", "invalid argument", "Invalid datatype 12", false);
        assertEquals("ncclAllReduce(count 4, float32, SUM, rank 0 of 2): ncclInvalidArgument (4): invalid argument; "
                + "last error: Invalid datatype 12", e.getMessage());
        assertEquals(4, e.code());
        assertEquals("ncclInvalidArgument", e.resultName());
        assertEquals("invalid argument", e.errorString());
        assertEquals("Invalid datatype 12", e.lastError());
        assertFalse(e.isTimeout());
        NcclException quiet = new NcclException("ncclGroupEnd", 2, "ncclSystemError", "system error", "", false);
        assertEquals("ncclGroupEnd: ncclSystemError (2): system error", quiet.getMessage());
    }

    @Test
    void timeoutsCarryInProgress() {
        NcclException e = NcclCalls.timeout("ncclCommInitRankConfig(rank 0 of 2, blocking 0) did not finish within "
                + "5000 ms; the communicator was aborted", null);
        assertTrue(e.isTimeout());
        assertEquals(7, e.code());
        assertTrue(e.getMessage().startsWith("ncclCommInitRankConfig(rank 0 of 2, blocking 0) did not finish within "
                + "5000 ms; the communicator was aborted: ncclInProgress (7): "), e.getMessage());
    }
}
