package dev.panamax.collectives;

import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;

/**
 * A rank as its own process for the elastic tests (args: transport, timeout seconds, mode). Modes:
 * <ul>
 * <li>{@code shrink}: all-reduces until one fails, then shrinks and prints "SHRUNK size rank members"
 *     once an all-reduce on the new communicator gave the right sums (exit 0), or "FAILED message"
 *     (exit 4);</li>
 * <li>{@code grow}: as {@code shrink}, then grows back to the job's size with processes started in
 *     mode {@code join}, broadcasts a value from rank 0 and prints "GROWN size rank members";</li>
 * <li>{@code join}: joins the job ({@link CommunicatorBuilder#join()}) and does the grown side of
 *     {@code grow}.</li>
 * </ul>
 * Every rank prints "READY rank pid" once connected (a joiner once it has joined).
 */
public final class ElasticRankProcess {
    public static void main(String[] args) {
        TransportKind kind = TransportKind.parse(args[0]);
        Duration timeout = Duration.ofMillis((long) (Double.parseDouble(args[1]) * 1000));
        String mode = args[2];
        CommunicatorBuilder b = Panamax.builder().config(LaunchConfig.fromEnvironment()).transport(kind)
                .timeout(timeout);
        try {
            if (mode.equals("join")) {
                Communicator grown = b.join();
                System.out.println("READY " + grown.rank() + " " + ProcessHandle.current().pid());
                afterGrow(grown, -1);
                return;
            }
            int worldSize = LaunchConfig.fromEnvironment().worldSize();
            Communicator c = b.connect();
            int jobRank = c.rank();
            System.out.println("READY " + c.rank() + " " + ProcessHandle.current().pid());
            System.out.flush();
            Communicator shrunk;
            try {
                MemorySegment buf = c.allocate(4L << 16);
                while (true) {
                    c.allReduce(buf, 1 << 16, DataType.FLOAT32, ReduceOp.SUM);
                }
            } catch (CollectiveException e) {
                shrunk = c.shrink();
            }
            System.out.println("SHRUNK " + shrunk.size() + " " + shrunk.rank() + " " + members(shrunk, jobRank));
            System.out.flush();
            if (mode.equals("grow")) {
                Communicator grown = shrunk.grow(worldSize - shrunk.size());
                afterGrow(grown, jobRank);
                grown.close();
            }
            shrunk.close();
            c.close();
            System.exit(0);
        } catch (RuntimeException e) {
            System.out.println("FAILED " + e);
            System.out.flush();
            System.exit(4);
        }
    }

    /** The members' job ranks (-1 for a joiner), gathered on {@code c}, after an all-reduce whose sums are checked. */
    private static String members(Communicator c, int jobRank) {
        MemorySegment mine = c.allocate(4);
        MemorySegment all = c.allocate(4L * c.size());
        mine.set(ValueLayout.JAVA_INT, 0, jobRank);
        c.allGather(mine, all, 1, DataType.INT32);
        int count = 4099;
        MemorySegment buf = c.allocate(4L * count);
        for (int i = 0; i < count; i++) {
            buf.setAtIndex(ValueLayout.JAVA_FLOAT, i, c.rank() + i % 5);
        }
        c.allReduce(buf, count, DataType.FLOAT32, ReduceOp.SUM);
        int n = c.size();
        for (int i = 0; i < count; i++) {
            float want = n * (n - 1) / 2f + n * (i % 5);
            if (buf.getAtIndex(ValueLayout.JAVA_FLOAT, i) != want) {
                throw new IllegalStateException("rank " + c.rank() + ": element " + i + " is "
                        + buf.getAtIndex(ValueLayout.JAVA_FLOAT, i) + ", not " + want);
            }
        }
        StringBuilder s = new StringBuilder();
        for (int m : all.toArray(ValueLayout.JAVA_INT)) {
            s.append(s.isEmpty() ? "" : ",").append(m);
        }
        return s.toString();
    }

    /** The handover after a grow: rank 0 broadcasts 12345; every rank checks the sums on the grown communicator. */
    private static void afterGrow(Communicator grown, int jobRank) {
        MemorySegment state = grown.allocate(8);
        if (grown.rank() == 0) {
            state.set(ValueLayout.JAVA_LONG, 0, 12345);
        }
        grown.broadcast(state, 1, DataType.INT64, 0);
        if (state.get(ValueLayout.JAVA_LONG, 0) != 12345) {
            throw new IllegalStateException("rank " + grown.rank() + " received "
                    + state.get(ValueLayout.JAVA_LONG, 0));
        }
        System.out.println("GROWN " + grown.size() + " " + grown.rank() + " " + members(grown, jobRank));
        System.out.flush();
        grown.barrier();
    }
}
