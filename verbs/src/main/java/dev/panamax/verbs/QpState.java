package dev.panamax.verbs;

/** Queue pair states ({@code enum ibv_qp_state}), in the order of their native values. */
public enum QpState {
    RESET, INIT, RTR, RTS, SQD, SQE, ERROR, UNKNOWN;

    /** The native value, {@code IBV_QPS_*}. */
    int nativeValue() {
        return ordinal();
    }

    static QpState of(int nativeValue) {
        QpState[] all = values();
        return nativeValue >= 0 && nativeValue < all.length ? all[nativeValue] : UNKNOWN;
    }
}
