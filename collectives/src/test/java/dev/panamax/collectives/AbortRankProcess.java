package dev.panamax.collectives;

import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A rank as its own process for the abort test (args: transport, timeout seconds): every rank
 * runs all-reduces on a second thread until one fails. Rank 0 waits for "ABORT" on stdin, calls
 * {@link Communicator#abort()} and prints "ABORT_RETURNED ms" and "CALL_FAILED ms message", exit 0;
 * the others print "PEER_FAILED rank message" (exit 3) or "FAILED message" (exit 4).
 */
public final class AbortRankProcess {
    public static void main(String[] args) throws Exception {
        TransportKind kind = TransportKind.parse(args[0]);
        double timeoutSeconds = Double.parseDouble(args[1]);
        try (Communicator c = Panamax.builder().config(LaunchConfig.fromEnvironment()).transport(kind)
                .timeout(Duration.ofMillis((long) (timeoutSeconds * 1000))).connect()) {
            long count = 1 << 16;
            MemorySegment buf = c.allocate(count * 4);
            CompletableFuture<Throwable> loop = new CompletableFuture<>();
            long[] failedAt = new long[1];
            Thread.ofPlatform().start(() -> {
                try {
                    while (true) {
                        c.allReduce(buf, count, DataType.FLOAT32, ReduceOp.SUM);
                    }
                } catch (Throwable t) {
                    failedAt[0] = System.nanoTime();
                    loop.complete(t);
                }
            });
            System.out.println("READY " + c.rank());
            if (c.rank() == 0) {
                BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
                String line;
                while ((line = in.readLine()) != null && !line.equals("ABORT")) {
                    // wait for the word
                }
                long start = System.nanoTime();
                c.abort();
                long returned = System.nanoTime();
                Throwable t = loop.get(10, TimeUnit.SECONDS);
                System.out.println("ABORT_RETURNED " + (returned - start) / 1e6);
                System.out.println("CALL_FAILED " + (failedAt[0] - start) / 1e6 + " " + t);
                System.out.flush();
                System.exit(0);
            }
            Throwable t = loop.get();
            if (t instanceof PeerFailedException p) {
                System.out.println("PEER_FAILED " + p.peer() + " " + p.getMessage());
                System.out.flush();
                System.exit(3);
            }
            System.out.println("FAILED " + t);
            System.out.flush();
            System.exit(4);
        }
    }
}
