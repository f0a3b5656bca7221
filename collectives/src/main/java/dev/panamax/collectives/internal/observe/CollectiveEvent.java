package dev.panamax.collectives.internal.observe;

import dev.panamax.collectives.internal.runtime.ScheduleExecutor;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/**
 * JFR event {@code dev.panamax.Collective}: one collective (or point-to-point send or receive) of
 * one rank, from the start of its schedule to its end, committed also when it fails. Enabled by
 * default in a recording (a few per collective call, so cheap to keep on); when no recording asks
 * for it, {@link ScheduleExecutor} does not even allocate it.
 */
@Name(CollectiveEvent.NAME)
@Label("Panamax Collective")
@Category({"Panamax"})
@Description("One collective or point-to-point transfer of one rank, committed at its end, also when it fails")
@StackTrace(false)
public final class CollectiveEvent extends jdk.jfr.Event {
    static final String NAME = "dev.panamax.Collective";

    @Label("Rank")
    @Description("The rank in the communicator")
    public int rank;

    @Label("Size")
    @Description("The number of ranks in the communicator")
    public int size;

    @Label("Communicator")
    @Description("The communicator's id, as in its JMX name dev.panamax:type=Communicator,rank=R,id=N")
    public long communicator;

    @Label("Collective")
    @Description("allreduce, reducescatter, allgather, broadcast, reduce, alltoall, barrier, send or recv")
    public String collective;

    @Label("Algorithm")
    @Description("The algorithm of the schedule, with its details (p2p for send and recv)")
    public String algorithm;

    @Label("Bytes")
    @Description("count times the element size, as passed to the call")
    @DataAmount
    public long bytes;

    @Label("Count")
    @Description("The element count passed to the call")
    public long count;

    @Label("Type")
    @Description("The element type")
    public String type;

    @Label("Peer")
    @Description("The peer of a send or recv; -1 for a collective")
    public int peer;

    @Label("Failed")
    public boolean failed;

    @Label("Error")
    @Description("The exception's message when it failed")
    public String error;
}
