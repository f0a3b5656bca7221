package dev.panamax.collectives;

import dev.panamax.collectives.internal.bootstrap.InJvmBootstrap;

import java.util.List;

/**
 * Entry points: a communicator for this process from its environment (as launched by
 * {@code scripts/panamax-run}, torchrun, mpirun or srun), or a group of in-JVM ranks.
 */
public final class Panamax {
    private Panamax() {
    }

    /** Joins the job described by the environment and system properties ({@link LaunchConfig#fromEnvironment()}). */
    public static Communicator fromEnvironment() {
        return builder().config(LaunchConfig.fromEnvironment()).connect();
    }

    /** A builder for a communicator of one process of a multi-process job. */
    public static CommunicatorBuilder builder() {
        return new CommunicatorBuilder();
    }

    /**
     * {@code size} communicators connected through the in-JVM transport, one per rank; each is used
     * by its own thread (threads as ranks).
     */
    public static List<Communicator> local(int size) {
        return local(size, CommunicatorBuilder.DEFAULT_TIMEOUT_NANOS);
    }

    /** Like {@link #local(int)} with the given timeout for every wait. */
    public static List<Communicator> local(int size, long timeoutNanos) {
        return InJvmBootstrap.create(size, timeoutNanos);
    }
}
