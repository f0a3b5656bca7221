package dev.panamax.verbs;

import dev.panamax.bindings.verbs.ibv_wc;
import dev.panamax.bindings.verbs.verbs_h;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Objects;

/**
 * A reusable array of {@code struct ibv_wc} that {@link CompletionQueue#poll} fills, read through index
 * accessors (a flyweight: nothing is allocated per completion). Valid until the next poll into it.
 */
public final class WorkCompletions {
    /** {@code IBV_WC_SEND}: a send completed. */
    public static final int OPCODE_SEND = verbs_h.IBV_WC_SEND();
    /** {@code IBV_WC_RDMA_WRITE}: an RDMA write (with or without immediate) completed at the sender. */
    public static final int OPCODE_RDMA_WRITE = verbs_h.IBV_WC_RDMA_WRITE();
    /** {@code IBV_WC_RDMA_READ}: an RDMA read completed. */
    public static final int OPCODE_RDMA_READ = verbs_h.IBV_WC_RDMA_READ();
    /** {@code IBV_WC_RECV}: a receive consumed a send. */
    public static final int OPCODE_RECV = verbs_h.IBV_WC_RECV();
    /** {@code IBV_WC_RECV_RDMA_WITH_IMM}: a receive consumed by an RDMA write with immediate. */
    public static final int OPCODE_RECV_RDMA_WITH_IMM = verbs_h.IBV_WC_RECV_RDMA_WITH_IMM();

    private static final long SIZE = ibv_wc.sizeof();
    private static final long WR_ID = ibv_wc.wr_id$offset();
    private static final long STATUS = ibv_wc.status$offset();
    private static final long OPCODE = ibv_wc.opcode$offset();
    private static final long VENDOR_ERR = ibv_wc.vendor_err$offset();
    private static final long BYTE_LEN = ibv_wc.byte_len$offset();
    private static final long IMM_DATA = ibv_wc.imm_data$offset();
    private static final long QP_NUM = ibv_wc.qp_num$offset();
    private static final long WC_FLAGS = ibv_wc.wc_flags$offset();
    /** imm_data is {@code __be32}: network byte order. */
    private static final ValueLayout.OfInt BIG_ENDIAN_INT = ValueLayout.JAVA_INT.withOrder(ByteOrder.BIG_ENDIAN);
    private static final int WITH_IMM = verbs_h.IBV_WC_WITH_IMM();
    private static final int SUCCESS = verbs_h.IBV_WC_SUCCESS();

    private final MemorySegment array;
    private final int capacity;
    private int count;

    private WorkCompletions(MemorySegment array, int capacity) {
        this.array = array;
        this.capacity = capacity;
    }

    /** An array of {@code capacity} completions in {@code arena}. */
    public static WorkCompletions allocate(Arena arena, int capacity) {
        if (capacity < 1) {
            throw new IllegalArgumentException("capacity must be >= 1: " + capacity);
        }
        return new WorkCompletions(arena.allocate(ibv_wc.layout(), capacity), capacity);
    }

    /** How many completions the last poll can return at most. */
    public int capacity() {
        return capacity;
    }

    /** How many completions the last poll returned. */
    public int count() {
        return count;
    }

    /** The id the work request was posted with. */
    public long wrId(int i) {
        return array.get(ValueLayout.JAVA_LONG, offset(i) + WR_ID);
    }

    /** The status, {@code enum ibv_wc_status}: 0 is success. */
    public int status(int i) {
        return array.get(ValueLayout.JAVA_INT, offset(i) + STATUS);
    }

    /** Whether the work request succeeded. */
    public boolean isSuccess(int i) {
        return status(i) == SUCCESS;
    }

    /** The status in words, {@code ibv_wc_status_str}: for example {@code remote access error}. */
    public String statusString(int i) {
        return describeStatus(status(i));
    }

    /** {@code ibv_wc_status_str(status)}: a status in words. */
    public static String describeStatus(int status) {
        return verbs_h.ibv_wc_status_str(status).reinterpret(256).getString(0);
    }

    /**
     * The completion's opcode, {@code enum ibv_wc_opcode} ({@link #OPCODE_SEND}, {@link #OPCODE_RECV}, ...);
     * undefined when the status is not success.
     */
    public int opcode(int i) {
        return array.get(ValueLayout.JAVA_INT, offset(i) + OPCODE);
    }

    /** The vendor error of a failed completion. */
    public int vendorError(int i) {
        return array.get(ValueLayout.JAVA_INT, offset(i) + VENDOR_ERR);
    }

    /** The bytes received (receives) or read (RDMA reads). */
    public long byteLength(int i) {
        return Integer.toUnsignedLong(array.get(ValueLayout.JAVA_INT, offset(i) + BYTE_LEN));
    }

    /** Whether the completion carries immediate data. */
    public boolean hasImmediate(int i) {
        return (array.get(ValueLayout.JAVA_INT, offset(i) + WC_FLAGS) & WITH_IMM) != 0;
    }

    /** The immediate data as the sender gave it to {@link SendRequest#immediate(int)}. */
    public int immediate(int i) {
        return array.get(BIG_ENDIAN_INT, offset(i) + IMM_DATA);
    }

    /** The local queue pair number. */
    public int qpNumber(int i) {
        return array.get(ValueLayout.JAVA_INT, offset(i) + QP_NUM);
    }

    /**
     * Throws when completion {@code i} failed.
     *
     * @throws WorkCompletionException naming {@code ibv_wc_status_str} of the status, the wr_id and queue pair
     */
    public void requireSuccess(int i) {
        int status = status(i);
        if (status != SUCCESS) {
            throw new WorkCompletionException(status, describeStatus(status), wrId(i), qpNumber(i), vendorError(i));
        }
    }

    /** {@link #requireSuccess(int)} for every completion of the last poll. */
    public void requireAllSuccess() {
        for (int i = 0; i < count; i++) {
            requireSuccess(i);
        }
    }

    /** An {@code enum ibv_wc_opcode} value in words, for messages: {@code RDMA_WRITE}, {@code RECV}, ... */
    public static String opcodeName(int opcode) {
        if (opcode == OPCODE_SEND) return "SEND";
        if (opcode == OPCODE_RDMA_WRITE) return "RDMA_WRITE";
        if (opcode == OPCODE_RDMA_READ) return "RDMA_READ";
        if (opcode == OPCODE_RECV) return "RECV";
        if (opcode == OPCODE_RECV_RDMA_WITH_IMM) return "RECV_RDMA_WITH_IMM";
        return "opcode " + opcode;
    }

    MemorySegment array() {
        return array;
    }

    void setCount(int n) {
        count = n;
    }

    private long offset(int i) {
        return Objects.checkIndex(i, count) * SIZE;
    }
}
