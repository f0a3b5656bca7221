package dev.panamax.collectives.internal.elastic;

import dev.panamax.collectives.CollectiveException;
import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.PeerFailedException;

/**
 * How the communicators of one job agree and regroup when ranks fail: the job's rendezvous store
 * for processes, a shared object for in-JVM ranks. Members are named by a member id that does not
 * change when communicators are shrunk (a process's rank in the job as launched); a member counts as
 * failed once its process is gone or every communicator it holds from this membership is closed.
 */
public interface Membership {
    /**
     * Runs agreement {@code instance} among {@code members} (the same name and members on every
     * member), contributing {@code flags} for {@code self}; waits for the decision at most
     * {@code timeoutNanos} (members that have not contributed by then count as failed).
     *
     * @throws CollectiveException when {@code self} was counted as failed,
     *         or the coordinator cannot be reached
     */
    AgreementState.Decision agree(String instance, int[] members, int self, long flags, long timeoutNanos);

    /**
     * Connects a new communicator named {@code name} (unique in the job, the same on every member)
     * among {@code members}, whose ranks are their positions in the array; {@code self} is one of
     * them. Returns once every member has connected, or throws on every member alike: a
     * {@link PeerFailedException} whose {@code peer()} is the member id of a
     * member that failed meanwhile.
     */
    Communicator connect(String name, int[] members, int self, long timeoutNanos);

    /**
     * Opens communicator {@code name} to {@code newRanks} joining processes: returns its members,
     * {@code members} followed by the joiners' fresh member ids (the same on every member). The first
     * of {@code members} hands the joiners their tickets; the others read what it wrote.
     *
     * @throws UnsupportedOperationException where nothing can join
     */
    int[] grow(String name, int[] members, int self, int newRanks, long timeoutNanos);
}
