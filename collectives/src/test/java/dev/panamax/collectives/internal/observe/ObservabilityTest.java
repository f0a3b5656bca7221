package dev.panamax.collectives.internal.observe;

import dev.panamax.collectives.Collective;
import dev.panamax.collectives.CollectiveTimeoutException;
import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.Panamax;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import dev.panamax.testing.RankThreads;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import javax.management.MBeanServer;
import javax.management.ObjectName;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import java.util.logging.Level;

/** The JFR events, the per-communicator JMX bean and the stuck-rank log line. */
class ObservabilityTest {
    private static final MBeanServer SERVER = ManagementFactory.getPlatformMBeanServer();

    private static Set<ObjectName> beans() throws Exception {
        return SERVER.queryNames(new ObjectName("dev.panamax:type=Communicator,*"), null);
    }

    @Test
    void theBeanShowsTheCollectiveInFlightAndGoesAwayOnClose() throws Exception {
        Set<ObjectName> before = beans();
        List<Communicator> comms = Panamax.local(2, Duration.ofSeconds(30).toNanos());
        Set<ObjectName> mine = new HashSet<>(beans());
        mine.removeAll(before);
        assertEquals(2, mine.size(), () -> "new beans: " + mine);
        ObjectName rank0 = mine.stream().filter(n -> "0".equals(n.getKeyProperty("rank"))).findFirst().orElseThrow();
        assertEquals(0, SERVER.getAttribute(rank0, "Rank"));
        assertEquals(2, SERVER.getAttribute(rank0, "Size"));
        assertEquals("local,self", SERVER.getAttribute(rank0, "Transports"));
        assertEquals("", SERVER.getAttribute(rank0, "InFlight"));
        assertEquals(0L, SERVER.getAttribute(rank0, "IdleWaits"));
        assertEquals(0L, SERVER.getAttribute(rank0, "Parks"));

        // Split communicators get beans of their own (same rank, another id), gone when they are closed.
        Communicator[] subs = new Communicator[2];
        RankThreads.run(comms, c -> subs[c.rank()] = c.split(0, c.rank()));
        Set<ObjectName> withSplit = new HashSet<>(beans());
        withSplit.removeAll(before);
        assertEquals(4, withSplit.size(), () -> "new beans: " + withSplit);
        RankThreads.closeAll(List.of(subs));
        Set<ObjectName> afterSplit = new HashSet<>(beans());
        afterSplit.removeAll(before);
        assertEquals(mine, afterSplit);

        comms.get(0).setAlgorithm(Collective.ALL_REDUCE, "ring");
        try (Arena a = Arena.ofShared()) {
            MemorySegment s = a.allocate(4096, 64);
            // Rank 1 never calls: rank 0 waits on it.
            CompletableFuture<Void> stuck = CompletableFuture.runAsync(() -> comms.get(0).allReduce(s, 1024,
                    DataType.FLOAT32, ReduceOp.SUM));
            String inFlight = "";
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (System.nanoTime() < deadline && !inFlight.contains("waiting")) {
                Thread.sleep(50);
                inFlight = (String) SERVER.getAttribute(rank0, "InFlight");
            }
            String seen = inFlight;
            assertTrue(seen.startsWith("allreduce(ring) step 1/"), seen);
            assertTrue(seen.contains("from rank 1"), seen);
            assertTrue(seen.matches(".*waiting \\d+\\.\\d s for: .*"), seen);
            // Past the spin and the 2 ms of yields, the wait parks.
            assertTrue((Long) SERVER.getAttribute(rank0, "Yields") > 0);
            assertTrue((Long) SERVER.getAttribute(rank0, "Parks") > 0);
            RankThreads.closeAll(comms);
            assertThrows(Exception.class, stuck::join);
        } finally {
            RankThreads.closeAll(comms);
        }
        Set<ObjectName> left = new HashSet<>(beans());
        left.retainAll(withSplit);
        assertTrue(left.isEmpty(), () -> "still registered after close: " + left);
    }

    @Test
    void eventsAreRecordedForCollectivesStagesPointToPointAndFailures(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("events.jfr");
        List<Communicator> comms = Panamax.local(2, Duration.ofSeconds(1).toNanos());
        try (Recording r = new Recording(); Arena a = Arena.ofShared()) {
            r.enable(CollectiveEvent.NAME);
            r.enable(StepEvent.NAME);
            r.start();
            MemorySegment[] bufs = {a.allocate(4096, 64), a.allocate(4096, 64)};
            for (Communicator c : comms) {
                c.setAlgorithm(Collective.ALL_REDUCE, "ring");
            }
            RankThreads.run(comms, c -> {
                for (int i = 0; i < 3; i++) {
                    c.allReduce(bufs[c.rank()], 1024, DataType.FLOAT32, ReduceOp.SUM);
                }
                if (c.rank() == 0) {
                    c.send(bufs[0], 16, DataType.INT32, 1);
                } else {
                    c.recv(bufs[1], 16, DataType.INT32, 0);
                }
            });
            // Rank 1 does not come: rank 0 times out.
            assertThrows(CollectiveTimeoutException.class, () ->
                    comms.get(0).allReduce(bufs[0], 8, DataType.FLOAT32, ReduceOp.SUM));
            r.stop();
            r.dump(file);
        } finally {
            RankThreads.closeAll(comms);
        }
        List<RecordedEvent> collectives = new ArrayList<>();
        List<RecordedEvent> steps = new ArrayList<>();
        for (RecordedEvent e : RecordingFile.readAllEvents(file)) {
            switch (e.getEventType().getName()) {
                case CollectiveEvent.NAME -> collectives.add(e);
                case StepEvent.NAME -> steps.add(e);
                default -> { }
            }
        }
        List<RecordedEvent> allreduces = collectives.stream()
                .filter(e -> e.getString("collective").equals("allreduce") && !e.getBoolean("failed")).toList();
        assertEquals(6, allreduces.size(), () -> "events: " + collectives);
        RecordedEvent one = allreduces.getFirst();
        assertEquals(2, one.getInt("size"));
        assertEquals(4096, one.getLong("bytes"));
        assertEquals(1024, one.getLong("count"));
        assertEquals("float32", one.getString("type"));
        assertTrue(one.getString("algorithm").startsWith("ring"), one::toString);
        assertTrue(one.getDuration().toNanos() > 0, one::toString);

        RecordedEvent send = collectives.stream().filter(e -> e.getString("collective").equals("send")).findFirst()
                .orElseThrow();
        assertEquals(0, send.getInt("rank"));
        assertEquals(1, send.getInt("peer"));
        assertEquals(64, send.getLong("bytes"));
        assertEquals(1, collectives.stream().filter(e -> e.getString("collective").equals("recv")).count());

        RecordedEvent failed = collectives.stream().filter(e -> e.getBoolean("failed")).findFirst().orElseThrow();
        assertEquals(0, failed.getInt("rank"));
        assertNotNull(failed.getString("error"));
        assertTrue(failed.getString("error").contains("timed out"), failed::toString);

        // Ring all-reduce on 2 ranks: a reduce-scatter and an all-gather stage with rank 1, 2048 bytes each way.
        List<RecordedEvent> rank0 = steps.stream().filter(e -> e.getInt("rank") == 0 && e.getString("collective")
                .equals("allreduce")
                && e.getLong("bytesSent") == 2048).toList();
        assertFalse(rank0.isEmpty(), () -> "steps: " + steps);
        RecordedEvent st = rank0.getFirst();
        assertEquals("1", st.getString("peers"));
        assertEquals(2048, st.getLong("bytesReceived"));
        assertNotNull(st.getString("label"));
        assertTrue(st.getInt("stages") > st.getInt("stage"), st::toString);
    }

    @Test
    void aTimeoutLogsOneWarningNamingTheStageAndPeer() {
        Logger jul = Logger.getLogger("dev.panamax.collectives");
        List<LogRecord> records = new ArrayList<>();
        Handler h = new Handler() {
            @Override
            public void publish(LogRecord record) {
                synchronized (records) {
                    records.add(record);
                }
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        jul.addHandler(h);
        List<Communicator> comms = Panamax.local(2, Duration.ofSeconds(1).toNanos());
        try (Arena a = Arena.ofConfined()) {
            MemorySegment s = a.allocate(4096, 64);
            comms.get(0).setAlgorithm(Collective.ALL_REDUCE, "ring");
            CollectiveTimeoutException e = assertThrows(CollectiveTimeoutException.class,
                    () -> comms.get(0).allReduce(s, 1024, DataType.FLOAT32, ReduceOp.SUM));
            List<LogRecord> warnings;
            synchronized (records) {
                warnings = records.stream().filter(r -> r.getLevel() == Level.WARNING).toList();
            }
            assertEquals(1, warnings.size(), () -> "records: " + records);
            String line = warnings.getFirst().getMessage();
            assertEquals(e.getMessage(), line);
            assertTrue(line.startsWith("rank 0: allreduce(ring) step 1/"), line);
            assertTrue(line.contains("from rank 1"), line);
        } finally {
            jul.removeHandler(h);
            RankThreads.closeAll(comms);
        }
    }
}
