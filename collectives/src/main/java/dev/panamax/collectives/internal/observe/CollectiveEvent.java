package dev.panamax.collectives.internal.observe;


import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;
import jdk.jfr.Event;

/**
 * JFR event {@code dev.panamax.Collective}: one collective (or point-to-point send or receive) of
 * one rank, from the start of its schedule to its end, committed also when it fails. Enabled by
 * default in a recording (a few per collective call, so cheap to keep on); when no recording asks
 * for it, the executor does not even allocate it ({@link Events}).
 */
@Name(CollectiveEvent.NAME)
@Label("Panamax Collective")
@Category({"Panamax"})
@Description("One collective or point-to-point transfer of one rank, committed at its end, also when it fails")
@StackTrace(false)
public final class CollectiveEvent extends Event {
    static final String NAME = "dev.panamax.Collective";

    @Label("Rank")
    @Description("The rank in the communicator")
    int rank;

    @Label("Size")
    @Description("The number of ranks in the communicator")
    int size;

    @Label("Communicator")
    @Description("The communicator's id, as in its JMX name dev.panamax:type=Communicator,rank=R,id=N")
    long communicator;

    @Label("Collective")
    @Description("allreduce, reducescatter, allgather, broadcast, reduce, alltoall, barrier, send or recv")
    String collective;

    @Label("Algorithm")
    @Description("The algorithm of the schedule, with its details (p2p for send and recv)")
    String algorithm;

    @Label("Bytes")
    @Description("count times the element size, as passed to the call")
    @DataAmount
    long bytes;

    @Label("Count")
    @Description("The element count passed to the call")
    long count;

    @Label("Type")
    @Description("The element type")
    String type;

    @Label("Peer")
    @Description("The peer of a send or recv; -1 for a collective")
    int peer;

    @Label("Failed")
    boolean failed;

    @Label("Error")
    @Description("The exception's message when it failed")
    String error;
}
