package dev.panamax.collectives.internal.observe;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Enabled;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;
import jdk.jfr.Event;

/**
 * JFR event {@code dev.panamax.Step}: one stage of a collective's schedule on one rank (its local
 * steps, then its transfers posted and awaited). Many per collective, so disabled unless a
 * recording enables it (with a threshold to keep only the slow stages, if wanted).
 */
@Name(StepEvent.NAME)
@Label("Panamax Step")
@Category({"Panamax"})
@Description("One stage of a collective's schedule on one rank: local steps, then transfers posted and awaited")
@StackTrace(false)
@Enabled(false)
public final class StepEvent extends Event {
    static final String NAME = "dev.panamax.Step";

    @Label("Rank")
    int rank;

    @Label("Communicator")
    @Description("The communicator's id, as in its JMX name")
    long communicator;

    @Label("Collective")
    String collective;

    @Label("Algorithm")
    String algorithm;

    @Label("Stage")
    @Description("The stage's index in the schedule, from 0")
    int stage;

    @Label("Stages")
    @Description("The number of stages of the schedule")
    int stages;

    @Label("Stage Label")
    String label;

    @Label("Peers")
    @Description("The communicator ranks this stage sends to and receives from, comma-separated; empty for a local "
            + "stage")
    String peers;

    @Label("Bytes Sent")
    @DataAmount
    long bytesSent;

    @Label("Bytes Received")
    @DataAmount
    long bytesReceived;
}
