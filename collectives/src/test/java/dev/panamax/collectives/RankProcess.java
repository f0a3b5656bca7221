package dev.panamax.collectives;

import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.lang.foreign.Arena;

/**
 * A rank as its own process, for the multi-process tests: joins the job from the environment,
 * runs {@code iterations} checked all-reduces of {@code count} floats (args: transport, iterations,
 * count, timeout seconds, and optionally "user" for a plain Arena buffer), prints "LINKS" and the
 * transport to every rank, then "OK" or
 * "PEER_FAILED <rank>" / "FAILED <message>", and exits 0, 3 or 4.
 */
public final class RankProcess {
    public static void main(String[] args) {
        TransportKind kind = TransportKind.parse(args[0]);
        int iterations = Integer.parseInt(args[1]);
        long count = Long.parseLong(args[2]);
        double timeoutSeconds = Double.parseDouble(args[3]);
        try (Communicator c = Panamax.builder().config(LaunchConfig.fromEnvironment()).transport(kind)
                .timeout(Duration.ofMillis((long) (timeoutSeconds * 1000))).connect()) {
            System.out.println("READY " + c.rank());
            StringBuilder links = new StringBuilder("LINKS");
            for (int p = 0; p < c.size(); p++) {
                links.append(' ').append(c.transportTo(p));
            }
            System.out.println(links);
            // "user": a plain Arena buffer (staged or read by address), else the communicator's shared memory.
            boolean user = args.length > 4 && args[4].equals("user");
            MemorySegment buf = user ? Arena.ofShared().allocate(count * 4, 64) : c.allocate(count * 4);
            for (int it = 0; it < iterations; it++) {
                for (long i = 0; i < count; i++) {
                    buf.setAtIndex(ValueLayout.JAVA_FLOAT, i, c.rank() + 1);
                }
                c.allReduce(buf, count, DataType.FLOAT32, ReduceOp.SUM);
                float want = c.size() * (c.size() + 1) / 2f;
                for (long i = 0; i < count; i++) {
                    if (buf.getAtIndex(ValueLayout.JAVA_FLOAT, i) != want) {
                        System.out.println("FAILED wrong value at " + i);
                        System.exit(5);
                    }
                }
            }
            System.out.println("OK");
        } catch (PeerFailedException e) {
            System.out.println("PEER_FAILED " + e.peer() + " " + e.getMessage());
            System.exit(3);
        } catch (RuntimeException e) {
            System.out.println("FAILED " + e);
            System.exit(4);
        }
    }
}
