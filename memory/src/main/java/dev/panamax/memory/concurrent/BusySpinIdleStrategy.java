package dev.panamax.memory.concurrent;

/** Spins with {@link Thread#onSpinWait()}; stateless. */
public final class BusySpinIdleStrategy implements IdleStrategy {
    public static final BusySpinIdleStrategy INSTANCE = new BusySpinIdleStrategy();

    private BusySpinIdleStrategy() {
    }

    @Override
    public void idle(int workCount) {
        if (workCount == 0) {
            Thread.onSpinWait();
        }
    }

    @Override
    public void reset() {
    }

    @Override
    public String toString() {
        return "busySpin";
    }
}
