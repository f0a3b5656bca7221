package dev.panamax.collectives.internal.runtime;

import dev.panamax.collectives.CollectiveException;
import dev.panamax.collectives.RevokedException;

import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.ReentrantLock;

/**
 * What a communicator shares with those split from it: the links (through the root), the lock
 * that orders every collective on them, the first failure (after which all are unusable), and
 * the abort state.
 *
 * <p>An abort never blocks on the lock: it marks the family aborted and leaves the release of
 * memory, which a running collective may still be touching, to whichever thread next holds the
 * lock ({@link #releaseIfPending}): the aborting thread itself when it is free, else the
 * collective's thread as it leaves.
 */
final class CommunicatorFamily {
    private final ReentrantLock lock = new ReentrantLock();
    private volatile Throwable failure;
    /** Set once by an abort on any member. */
    private volatile boolean aborted;
    /** The rank (of the family's root) that revoked the family, or -1. */
    private volatile int revokedBy = -1;
    /** A revoke's closing of the links, left to whichever thread next holds {@link #lock}. */
    private final AtomicBoolean revokePending = new AtomicBoolean();
    /** An abort's release of the family, left to whichever thread next holds {@link #lock}. */
    private final AtomicBoolean releasePending = new AtomicBoolean();

    void lock() {
        lock.lock();
    }

    void unlock() {
        lock.unlock();
    }

    /** The first failure of any member, or null. */
    Throwable failure() {
        return failure;
    }

    /** Keeps {@code t} when it is the first failure. */
    synchronized void recordFailure(Throwable t) {
        if (failure == null) {
            failure = t;
        }
    }

    boolean isAborted() {
        return aborted;
    }

    /** Marks the family aborted; false when it already was (the caller then does nothing). */
    synchronized boolean markAborted(int rank) {
        if (aborted) {
            return false;
        }
        aborted = true;
        recordFailure(new CollectiveException("rank " + rank + ": the communicator was aborted"));
        return true;
    }

    /**
     * Marks the family revoked by {@code revoker} (a rank of the root) and records the failure every
     * later call reports; false when it was revoked already.
     */
    synchronized boolean markRevoked(int revoker, RevokedException error) {
        if (revokedBy >= 0) {
            return false;
        }
        revokedBy = revoker;
        recordFailure(error);
        revokePending.set(true);
        return true;
    }

    /**
     * Runs {@code closeLinks} once after a revoke, by a thread that holds the lock (only the lock's
     * holder may write on a stream link): the revoking thread when the lock is free, else the
     * collective's thread right after it unlocks; both call this, so whichever comes last does it.
     */
    void closeLinksIfRevoked(Runnable closeLinks) {
        runOnceUnderLock(revokePending, closeLinks);
    }

    /** The rank that revoked the family, or -1. */
    int revokedBy() {
        return revokedBy;
    }

    /** Leaves the release of the family to {@link #releaseIfPending}, once the abort has woken the waits and closed the
     * links. */
    void scheduleRelease() {
        releasePending.set(true);
    }

    /**
     * Runs {@code release} (closing the whole family) when an abort left it pending and this
     * thread can take the lock; a thread that holds the lock calls this after unlocking, so
     * whichever comes last does it.
     */
    void releaseIfPending(Runnable release) {
        runOnceUnderLock(releasePending, release);
    }

    /**
     * Runs {@code action} once after {@code pending} was set, on a thread that holds the lock: the
     * setting thread when the lock is free, else the lock's holder right after it unlocks (both call
     * this after their part, so whichever comes last does it).
     */
    private void runOnceUnderLock(AtomicBoolean pending, Runnable action) {
        while (pending.get() && lock.tryLock()) {
            try {
                if (pending.compareAndSet(true, false)) {
                    action.run();
                }
            } finally {
                lock.unlock();
            }
        }
    }

    /** Throws when the communicator cannot even agree or shrink: aborted or {@code closed}. */
    void ensureNotClosed(int rank, boolean closed) {
        if (aborted) {
            throw new IllegalStateException("rank " + rank + ": the communicator was aborted");
        }
        if (closed) {
            throw new IllegalStateException("rank " + rank + ": the communicator is closed");
        }
    }

    /** Throws when no collective may start: aborted, {@code closed}, or broken by an earlier failure. */
    void ensureOpen(int rank, boolean closed) {
        if (aborted) {
            throw new IllegalStateException("rank " + rank + ": the communicator was aborted");
        }
        if (closed) {
            throw new IllegalStateException("rank " + rank + ": the communicator is closed");
        }
        Throwable f = failure;
        if (f instanceof RevokedException r) {
            throw new RevokedException(r.revoker(), "rank " + rank + ": the communicator was revoked by rank "
                    + r.revoker());
        }
        if (f != null) {
            throw new IllegalStateException("rank " + rank + ": the communicator is unusable after an earlier failure: "
                    + f.getMessage(), f);
        }
    }
}
