package dev.panamax.collectives.internal.device;

import dev.panamax.collectives.Collective;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

/**
 * Whole collectives on device buffers of one group of ranks: what {@code GpuCommunicator} delegates
 * to and what a level of {@link DeviceBlueConnect} runs. Implemented by the own device stages
 * ({@link StagesBackend}) and by NCCL ({@link NcclBackend}). Public for the API package only (this
 * package is not exported).
 *
 * @param <B> the device buffer type
 */
public interface DeviceBackend<B> extends AutoCloseable {
    /** This rank in the group. */
    int rank();

    /** The number of ranks in the group. */
    int size();

    /**
     * Runs {@code collective} with the NCCL layouts and counts ({@code count} as the host API means
     * it) and returns when this rank's part is finished on the device. {@code algorithm} ({@code ring}
     * or {@code rhd}) is for the own stages; NCCL chooses its own. {@code root} is for broadcast only.
     */
    void run(Collective collective, String algorithm, B send, B recv, long count, DataType type, ReduceOp op, int root);

    /** Releases what the group holds, once; the buffers passed in stay the caller's. */
    @Override
    void close();
}
