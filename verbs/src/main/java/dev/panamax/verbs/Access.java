package dev.panamax.verbs;

import dev.panamax.bindings.verbs.verbs_h;

/** Memory region access flags ({@code enum ibv_access_flags}), combined with {@code |}. */
public final class Access {
    private Access() {
    }

    /** The local device may write the region (needed to receive into it or RDMA-read into it). */
    public static final int LOCAL_WRITE = verbs_h.IBV_ACCESS_LOCAL_WRITE();
    /** Peers may RDMA-write the region. */
    public static final int REMOTE_WRITE = verbs_h.IBV_ACCESS_REMOTE_WRITE();
    /** Peers may RDMA-read the region. */
    public static final int REMOTE_READ = verbs_h.IBV_ACCESS_REMOTE_READ();
    /** Peers may run atomic operations on the region. */
    public static final int REMOTE_ATOMIC = verbs_h.IBV_ACCESS_REMOTE_ATOMIC();
    /** Memory windows may be bound to the region. */
    public static final int MW_BIND = verbs_h.IBV_ACCESS_MW_BIND();
    /** Remote addresses are offsets from the start of the region. */
    public static final int ZERO_BASED = verbs_h.IBV_ACCESS_ZERO_BASED();
    /** On-demand paging (the pages are not pinned; needs device support). */
    public static final int ON_DEMAND = verbs_h.IBV_ACCESS_ON_DEMAND();
    /** The region is backed by huge pages. */
    public static final int HUGETLB = verbs_h.IBV_ACCESS_HUGETLB();
    /** The device may reorder writes to the region (an optional flag: ignored where unsupported). */
    public static final int RELAXED_ORDERING = verbs_h.IBV_ACCESS_RELAXED_ORDERING();

    /** Local write, remote write and remote read: what a region used for RDMA in both directions needs. */
    public static final int ALL_REMOTE = LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ;

    /**
     * {@code IBV_ACCESS_OPTIONAL_RANGE} (verbs_api.h, from {@code IB_UVERBS_ACCESS_OPTIONAL_RANGE}: bits 20 to
     * 29): flags a device may ignore; registering with any of them goes through {@code ibv_reg_mr_iova2}.
     */
    static final int OPTIONAL_RANGE = ((1 << 29 << 1) - 1) & ~((1 << 20) - 1);

    /** The flags in words, for messages: {@code LOCAL_WRITE|REMOTE_READ}. */
    public static String toString(int flags) {
        StringBuilder sb = new StringBuilder();
        String[] names = {"LOCAL_WRITE", "REMOTE_WRITE", "REMOTE_READ", "REMOTE_ATOMIC", "MW_BIND", "ZERO_BASED",
                "ON_DEMAND", "HUGETLB"};
        int rest = flags;
        for (int bit = 0; bit < names.length; bit++) {
            if ((flags & (1 << bit)) != 0) {
                sb.append(sb.isEmpty() ? "" : "|").append(names[bit]);
                rest &= ~(1 << bit);
            }
        }
        if ((rest & RELAXED_ORDERING) != 0) {
            sb.append(sb.isEmpty() ? "" : "|").append("RELAXED_ORDERING");
            rest &= ~RELAXED_ORDERING;
        }
        if (rest != 0) {
            sb.append(sb.isEmpty() ? "" : "|").append("0x").append(Integer.toHexString(rest));
        }
        return sb.isEmpty() ? "0" : sb.toString();
    }
}
