package dev.panamax.memory.internal;

/**
 * Runs a sequence of close actions, every one of them even when some fail, and rethrows the first failure
 * with the others suppressed.
 */
public final class Closer {
    private RuntimeException first;

    /** Runs {@code action}, remembering its failure. */
    public void run(Runnable action) {
        try {
            action.run();
        } catch (RuntimeException e) {
            if (first == null) {
                first = e;
            } else {
                first.addSuppressed(e);
            }
        }
    }

    /** Throws the first failure, if any. */
    public void rethrow() {
        if (first != null) {
            throw first;
        }
    }
}
