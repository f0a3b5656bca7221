package dev.panamax.bench;

import dev.panamax.collectives.Communicator;
import dev.panamax.bench.perf.PerfCollective;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

import java.lang.foreign.MemorySegment;

/**
 * One rank's buffers and arguments for one benchmarked collective: {@code bytes} is the nccl-tests
 * size (the larger buffer), the buffers come from the communicator's allocator and are touched.
 */
final class CollectiveSetup implements Runnable {
    final Communicator comm;
    final PerfCollective collective;
    final DataType type;
    final ReduceOp op;
    final long count;
    final MemorySegment send;
    final MemorySegment recv;

    CollectiveSetup(Communicator comm, PerfCollective collective, long bytes, DataType type, ReduceOp op) {
        this.comm = comm;
        this.collective = collective;
        this.type = type;
        this.op = op;
        int n = comm.size();
        this.count = collective.count(bytes, type.byteSize(), n);
        this.send = comm.allocate(Math.max(type.byteSize(), collective.sendBytes(count, type.byteSize(), n)));
        this.recv = comm.allocate(Math.max(type.byteSize(), collective.recvBytes(count, type.byteSize(), n)));
        send.fill((byte) 0);
        recv.fill((byte) 0);
    }

    @Override
    public void run() {
        collective.run(comm, send, recv, count, type, op, 0);
    }
}
