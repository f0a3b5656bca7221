package dev.panamax.collectives.internal.transport.verbs;

import dev.panamax.memory.concurrent.AdaptiveBackoffIdleStrategy;
import dev.panamax.memory.concurrent.WakeSignal;
import dev.panamax.verbs.CompletionChannel;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.locks.LockSupport;

/**
 * What a wait on a communicator's verbs links sleeps on: their completion queues share one completion channel, so
 * a wait that outlasted its spin and yields sleeps in the kernel until the adapter signals a completion on any of
 * them (an advertisement, an eager message, the last write of a message, a send's acknowledgement), instead of
 * waking every few microseconds to poll. Arming asks every link's queue for one event; a completion that came
 * before the ask is found by the poll that follows the arm.
 *
 * <p>Two things move without a completion, so they are not waited for here: a sender out of eager credit waits for
 * the receiver's plain RDMA write of its credit word (while any link waits so, a sleep only parks briefly, as a
 * wait without a signal would), and a receiver notices a sender's request for credit only when it polls (within
 * {@link AdaptiveBackoffIdleStrategy#SLEEP_NANOS}, the longest sleep). Nor does an abort on another thread signal
 * the channel: the sleeper sees it when its sleep ends, within that time too. One thread at a time sleeps: the one
 * that holds the communicator's lock.
 */
final class CompletionWakeSignal implements WakeSignal {
    private final CompletionChannel channel;
    /** The open links; a link leaves as it releases its queue, possibly on another thread. */
    private final List<VerbsLink> links = new CopyOnWriteArrayList<>();
    private boolean armed;

    CompletionWakeSignal(CompletionChannel channel) {
        this.channel = channel;
    }

    CompletionChannel channel() {
        return channel;
    }

    void add(VerbsLink link) {
        links.add(link);
    }

    void remove(VerbsLink link) {
        links.remove(link);
    }

    @Override
    public void arm() {
        for (VerbsLink link : links) {
            link.requestNotification();
        }
        armed = true;
    }

    @Override
    public boolean isArmed() {
        return armed;
    }

    @Override
    public void disarm() {
        // A requested notification cannot be withdrawn: its event, if one comes, makes a later sleep return early.
        armed = false;
    }

    @Override
    public boolean sleep(long timeoutNanos) {
        if (!armed) {
            throw new IllegalStateException("sleep without arm: a completion before the arm would be missed");
        }
        armed = false;
        for (VerbsLink link : links) {
            if (link.awaitsCredit()) {
                LockSupport.parkNanos(Math.min(timeoutNanos, AdaptiveBackoffIdleStrategy.PARK_NANOS));
                return false;
            }
        }
        return channel.await(timeoutNanos);
    }

    @Override
    public String toString() {
        return "completion wake signal on " + channel + " (" + links.size() + " links)" + (armed ? " (armed)" : "");
    }
}
