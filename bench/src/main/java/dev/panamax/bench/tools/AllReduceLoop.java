package dev.panamax.bench.tools;

import dev.panamax.collectives.Agreement;
import dev.panamax.collectives.CollectiveException;
import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.LaunchConfig;
import dev.panamax.collectives.Panamax;
import dev.panamax.collectives.PeerFailedException;
import dev.panamax.collectives.TransportKind;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import javax.management.ObjectName;

/**
 * A rank of a job launched by {@code scripts/panamax-run}, for the reliability scripts.
 * <pre>
 *   AllReduceLoop loop TRANSPORT            all-reduces of random sizes (4 B .. 4 MiB) until one fails
 *   AllReduceLoop soak TRANSPORT SMALL LARGE SMALL small (8 B .. 4 KiB) and LARGE large (16 .. 64 MiB)
 *                                           all-reduces mixed with other collectives, sampling resources
 *   AllReduceLoop shrink TRANSPORT          all-reduces until one fails, then shrinks to the survivors
 *                                           (again while more ranks fail) and checks the result
 * </pre>
 * The timeout comes from {@code PANAMAX_TIMEOUT_SECONDS}. {@code loop} prints "READY" once connected,
 * and on failure "PEER_FAILED rank epoch-ms message" (exit 3) or "FAILED epoch-ms message" (exit 4).
 * {@code soak} prints "SAMPLE phase rss-kib nmt-committed-kib fds memfds shm-entries rss-anon-kib
 * rss-shmem-kib" at start,
 * middle and end, then "OK seconds". {@code shrink} prints "SHRUNK done-epoch-ms failed-epoch-ms size N
 * rank R members M,M,... shrinks K" (members: the job ranks of the final communicator, gathered from
 * every member; exit 0) once an all-reduce on the shrunk communicator gave the right sums on every
 * member (they agree on it), "RETRY message" when a shrink or the check failed because one more rank
 * went, and "FAILED ..." (exit 4) when it gives up.
 */
public final class AllReduceLoop {
    public static void main(String[] args) throws Exception {
        String mode = args[0];
        TransportKind kind = TransportKind.parse(args[1]);
        try (Communicator c = Panamax.builder().config(LaunchConfig.fromEnvironment()).transport(kind).connect()) {
            System.out.println("READY rank " + c.rank() + " pid " + ProcessHandle.current().pid() + " of " + c.size()
                    + " over " + (c.size() > 1 ? c.transportTo((c.rank() + 1) % c.size()) : "self"));
            System.out.flush();
            if (mode.equals("loop")) {
                loop(c);
            } else if (mode.equals("shrink")) {
                shrink(c);
            } else {
                soak(c, Long.parseLong(args[2]), Long.parseLong(args[3]));
            }
        } catch (PeerFailedException e) {
            System.out.println("PEER_FAILED " + e.peer() + " " + System.currentTimeMillis() + " " + e.getMessage());
            System.out.flush();
            System.exit(3);
        } catch (RuntimeException e) {
            System.out.println("FAILED " + System.currentTimeMillis() + " " + e);
            System.out.flush();
            System.exit(4);
        }
    }

    private static void loop(Communicator c) {
        MemorySegment buf = c.allocate(4L << 20);
        // The same seed on every rank: the ranks must agree on each call's size.
        SplittableRandom random = new SplittableRandom(42);
        for (long i = 0; ; i++) {
            long count = 1L << random.nextInt(21); // 1 .. 1 Mi floats
            c.allReduce(buf, count, DataType.FLOAT32, ReduceOp.SUM);
        }
    }

    private static void shrink(Communicator c) {
        int jobRank = c.rank();
        long failedAt;
        try {
            loop(c);
            return;
        } catch (CollectiveException e) {
            failedAt = System.currentTimeMillis();
        }
        Communicator current = c;
        for (int shrinks = 1; ; shrinks++) {
            try {
                Communicator next = current.shrink();
                if (current != c) {
                    current.close();
                }
                current = next;
            } catch (CollectiveException e) {
                retryOrGiveUp(shrinks, e);
                continue;
            }
            String members = null;
            try {
                members = check(current, jobRank);
            } catch (CollectiveException e) {
                System.out.println("RETRY the check failed: " + e.getMessage());
            }
            // The check counts only if it passed on every rank: a barrier can end on one rank and fail on
            // another, an agreement cannot. Otherwise all shrink again, together.
            Agreement passed = current.agree(members != null ? 1 : 0);
            if (passed.flags() == 1 && passed.unanimous()) {
                System.out.println("SHRUNK " + System.currentTimeMillis() + " " + failedAt + " size " + current.size()
                        + " rank " + current.rank() + " members " + members + " shrinks " + shrinks);
                System.out.flush();
                current.close();
                return;
            }
            retryOrGiveUp(shrinks, new CollectiveException("the check failed on a rank or a rank was lost: "
                    + passed));
        }
    }

    private static void retryOrGiveUp(int shrinks, CollectiveException e) {
        if (shrinks == 5) {
            throw e;
        }
        System.out.println("RETRY " + e.getMessage());
        System.out.flush();
    }

    /**
     * All-gathers the members' job ranks and all-reduces (job rank + 1) * (i % 7 + 1) over 4099
     * elements, exact in float32: throws unless every sum is right; returns the members.
     */
    private static String check(Communicator c, int jobRank) {
        MemorySegment mine = c.allocate(4);
        MemorySegment all = c.allocate(4L * c.size());
        mine.set(ValueLayout.JAVA_INT, 0, jobRank);
        c.allGather(mine, all, 1, DataType.INT32);
        int[] members = all.toArray(ValueLayout.JAVA_INT);
        long n = 4099;
        MemorySegment buf = c.allocate(4 * n);
        for (long i = 0; i < n; i++) {
            buf.setAtIndex(ValueLayout.JAVA_FLOAT, i, (jobRank + 1) * (i % 7 + 1));
        }
        c.allReduce(buf, n, DataType.FLOAT32, ReduceOp.SUM);
        long weight = 0;
        for (int m : members) {
            weight += m + 1;
        }
        for (long i = 0; i < n; i++) {
            float want = weight * (i % 7 + 1);
            if (buf.getAtIndex(ValueLayout.JAVA_FLOAT, i) != want) {
                throw new IllegalStateException("element " + i + " of the check is "
                        + buf.getAtIndex(ValueLayout.JAVA_FLOAT, i) + ", not " + want);
            }
        }
        c.free(buf);
        c.free(all);
        c.free(mine);
        StringBuilder b = new StringBuilder();
        for (int m : members) {
            b.append(b.isEmpty() ? "" : ",").append(m);
        }
        return b.toString();
    }

    private static void soak(Communicator c, long small, long large) throws Exception {
        long largeMax = 64L << 20;
        MemorySegment big = c.allocate(largeMax);
        MemorySegment smallBuf = c.allocate(4096L * c.size());
        MemorySegment gathered = c.allocate(4096L * c.size());
        SplittableRandom random = new SplittableRandom(7);
        long total = small + large;
        long everyLarge = large == 0 ? Long.MAX_VALUE : Math.max(1, total / large);
        long start = System.nanoTime();
        sample(c, "start");
        long done = 0;
        long largeDone = 0;
        for (long i = 0; i < total; i++) {
            if (i == total / 2) {
                sample(c, "middle");
            }
            if (i % everyLarge == everyLarge - 1 && largeDone < large) {
                long bytes = (16L << 20) + random.nextLong(48L << 20);
                long count = bytes / 4;
                big.asSlice(0, 4).set(ValueLayout.JAVA_FLOAT, 0, c.rank());
                c.allReduce(big, count, DataType.FLOAT32, ReduceOp.SUM);
                float want = c.size() * (c.size() - 1) / 2f;
                if (big.get(ValueLayout.JAVA_FLOAT, 0) != want) {
                    throw new IllegalStateException("large all-reduce " + largeDone + ": element 0 is "
                            + big.get(ValueLayout.JAVA_FLOAT, 0));
                }
                largeDone++;
                continue;
            }
            long bytes = 8L << random.nextInt(10); // 8 B .. 4 KiB
            long count = bytes / 4;
            switch ((int) (i % 10)) {
                case 7 -> c.broadcast(smallBuf, count, DataType.FLOAT32, (int) (i % c.size()));
                case 8 -> c.allGather(smallBuf.asSlice(0, bytes), gathered, count, DataType.FLOAT32);
                case 9 -> c.barrier();
                default -> {
                    smallBuf.set(ValueLayout.JAVA_INT, 0, 1);
                    c.allReduce(smallBuf, count, DataType.INT32, ReduceOp.MAX);
                }
            }
            done++;
        }
        sample(c, "end");
        System.out.printf("OK %.1f s, %d small and %d large collectives%n", (System.nanoTime() - start) / 1e9, done,
                largeDone);
    }

    /** SAMPLE phase rss-kib nmt-committed-kib fds memfds shm-entries rss-anon-kib rss-shmem-kib */
    private static void sample(Communicator c, String phase) throws Exception {
        c.barrier();
        long rss = -1;
        long anon = -1;
        long shared = -1;
        for (String l : Files.readAllLines(Path.of("/proc/self/status"))) {
            long v = l.matches("^[A-Za-z]+:.*") && l.matches(".*[0-9].*") ? Long.parseLong(l.replaceAll("[^0-9]", ""))
                    : -1;
            if (l.startsWith("VmRSS:")) {
                rss = v;
            } else if (l.startsWith("RssAnon:")) {
                anon = v;
            } else if (l.startsWith("RssShmem:")) {
                shared = v;
            }
        }
        long fds = 0;
        long memfds = 0;
        try (Stream<Path> s = Files.list(Path.of("/proc/self/fd"))) {
            for (Path p : (Iterable<Path>) s::iterator) {
                fds++;
                try {
                    if (Files.readSymbolicLink(p).toString().startsWith("/memfd:")) {
                        memfds++;
                    }
                } catch (IOException ignored) {
                    // closed while listing
                }
            }
        }
        long shm;
        try (Stream<Path> s = Files.list(Path.of("/dev/shm"))) {
            shm = s.count();
        }
        System.out.println("SAMPLE " + phase + " " + rss + " " + nmtCommittedKib() + " " + fds + " " + memfds + " "
                + shm + " " + anon + " " + shared);
        System.out.flush();
        c.barrier();
    }

    /** The committed total of Native Memory Tracking (-XX:NativeMemoryTracking=summary), or -1 when off. */
    private static long nmtCommittedKib() {
        try {
            Object out = ManagementFactory.getPlatformMBeanServer()
                    .invoke(new ObjectName("com.sun.management:type=DiagnosticCommand"),
                    "vmNativeMemory", new Object[]{new String[]{"summary"}}, new String[]{String[].class.getName()});
            for (String l : out.toString().split("\n")) {
                int k = l.indexOf("Total: reserved=");
                if (k >= 0) {
                    int c = l.indexOf("committed=");
                    String v = l.substring(c + "committed=".length()).replaceAll("[^0-9].*", "");
                    long n = Long.parseLong(v);
                    return l.contains("committed=" + v + "KB") ? n : l.contains("committed=" + v + "MB") ? n * 1024 : n
                            / 1024;
                }
            }
        } catch (Exception ignored) {
            // no NMT
        }
        return -1;
    }
}
