package dev.panamax.memory;

import org.junit.jupiter.api.Test;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class SharedMemoryTest {
    private static final long PID = ProcessHandle.current().pid();

    @Test
    void createAttachAndSeeWritesBothWays() {
        try (SharedMemory.Region created = SharedMemory.create("test", 8192)) {
            assertTrue(created.isOwner());
            assertEquals(8192, created.segment().byteSize());
            assertEquals(PID, created.handle().pid());
            assertEquals(-1, created.segment().mismatch(MemorySegment.ofArray(new byte[8192])), "zeroed");
            SharedMemory.Handle h = SharedMemory.Handle.decode(created.handle().encode());
            assertEquals(created.handle(), h);
            try (SharedMemory.Region attached = SharedMemory.attach(h)) {
                assertFalse(attached.isOwner());
                created.segment().set(ValueLayout.JAVA_LONG, 0, 0x1122334455667788L);
                assertEquals(0x1122334455667788L, attached.segment().get(ValueLayout.JAVA_LONG, 0));
                attached.segment().set(ValueLayout.JAVA_INT, 8188, 77);
                assertEquals(77, created.segment().get(ValueLayout.JAVA_INT, 8188));
            }
            assertEquals(77, created.segment().get(ValueLayout.JAVA_INT, 8188),
                    "the creator's mapping outlives the attached one");
        }
    }

    @Test
    void closeTwiceIsSafeAndClosedRegionsFailClearly() {
        SharedMemory.Region r = SharedMemory.create("close", 4096);
        SharedMemory.Handle h = r.handle();
        r.close();
        r.close();
        assertThrows(IllegalStateException.class, () -> r.segment().get(ValueLayout.JAVA_BYTE, 0));
        var e = assertThrows(IllegalStateException.class, () -> SharedMemory.attach(h));
        assertTrue(e.getMessage().contains(Long.toString(PID)) && e.getMessage().contains("closed"), e.getMessage());
    }

    @Test
    void badArguments() {
        assertThrows(IllegalArgumentException.class, () -> SharedMemory.create("zero", 0));
        assertThrows(IllegalArgumentException.class, () -> SharedMemory.createNamed("a/b", 4096));
        assertThrows(IllegalArgumentException.class, () -> SharedMemory.createNamed("..", 4096));
        assertThrows(IllegalArgumentException.class, () -> SharedMemory.Handle.decode("1:2"));
    }

    @Test
    void namedCreateAttachUnlinkLeavesNothing() {
        String name = "panamax-test-" + PID + "-" + System.nanoTime();
        Path path = Path.of("/dev/shm", name);
        try (SharedMemory.Region created = SharedMemory.createNamed(name, 4096)) {
            assertTrue(Files.exists(path));
            assertThrows(UncheckedIOException.class, () -> SharedMemory.createNamed(name, 4096), "exists already");
            try (SharedMemory.Region attached = SharedMemory.attachNamed(name)) {
                assertEquals(4096, attached.segment().byteSize());
                assertTrue(SharedMemory.unlink(name));
                assertFalse(Files.exists(path));
                created.segment().set(ValueLayout.JAVA_INT, 100, 5);
                assertEquals(5, attached.segment().get(ValueLayout.JAVA_INT, 100), "mappings stay valid after unlink");
                attached.segment().set(ValueLayout.JAVA_INT, 200, 6);
                assertEquals(6, created.segment().get(ValueLayout.JAVA_INT, 200));
            }
        } finally {
            SharedMemory.unlink(name);
        }
        assertFalse(SharedMemory.unlink(name), "second unlink finds nothing");
        assertFalse(Files.exists(path));
        assertThrows(UncheckedIOException.class, () -> SharedMemory.attachNamed(name));
    }

    @Test
    void childProcessAttachesAndWrites() throws Exception {
        try (SharedMemory.Region r = SharedMemory.create("child-write", 1 << 20)) {
            MemorySegment s = r.segment();
            s.set(ValueLayout.JAVA_BYTE, s.byteSize() - 1, (byte) 9);
            Process p = child("write", r.handle().encode(), "7");
            List<String> out = readAll(p);
            assertTrue(p.waitFor(60, TimeUnit.SECONDS), "child finished");
            assertEquals(0, p.exitValue(), "child output: " + out);
            assertEquals(List.of("parent-byte=9"), out);
            for (long i = 0; i < s.byteSize() - 1; i += 4093) {
                assertEquals(7, s.get(ValueLayout.JAVA_BYTE, i), "byte " + i + " written by the child");
            }
        }
    }

    @Test
    void killedChildLeavesNothingBehind() throws Exception {
        Set<String> before = panamaxShmEntries();
        try (SharedMemory.Region r = SharedMemory.create("child-kill", 4096)) {
            Process p = child("hold", r.handle().encode());
            SharedMemory.Handle childRegion;
            try (BufferedReader in = new BufferedReader(new InputStreamReader(p.getInputStream(),
                    StandardCharsets.UTF_8))) {
                String line = in.readLine();
                assertTrue(line != null && line.startsWith("ready "), "child said " + line);
                childRegion = SharedMemory.Handle.decode(line.substring(6));
                assertEquals(42, r.segment().get(ValueLayout.JAVA_BYTE, 0), "the child's write is visible");
                try (SharedMemory.Region theirs = SharedMemory.attach(childRegion)) {
                    // the child's memfd is reachable while it lives
                    theirs.segment().set(ValueLayout.JAVA_BYTE, 1, (byte) 1);
                }
                p.destroyForcibly();
                assertTrue(p.waitFor(30, TimeUnit.SECONDS));
            }
            var e = assertThrows(IllegalStateException.class, () -> SharedMemory.attach(childRegion));
            assertTrue(e.getMessage().contains("exited"), e.getMessage());
            r.segment().set(ValueLayout.JAVA_BYTE, 1, (byte) 2); // ours is still mapped and usable
            assertEquals(42, r.segment().get(ValueLayout.JAVA_BYTE, 0));
        }
        Set<String> after = panamaxShmEntries();
        after.removeAll(before);
        assertEquals(Set.of(), after, "new /dev/shm entries named panamax* after the child was killed");
    }

    /** Without --add-modules jdk.incubator.vector the plain-Java kernels run, and give the same results. */
    @Test
    void childWithoutVectorModuleFallsBack() throws Exception {
        Process p = child("kernels");
        List<String> out = readAll(p);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS));
        assertEquals(List.of("vectorized=false correct=true"), out);
    }

    private static Set<String> panamaxShmEntries() throws IOException {
        try (Stream<Path> s = Files.list(Path.of("/dev/shm"))) {
            return s.map(p -> p.getFileName().toString()).filter(n -> n.startsWith("panamax"))
                    .collect(Collectors.toSet());
        }
    }

    private static Process child(String... args) throws IOException {
        List<String> cmd = new ArrayList<>(List.of(System.getProperty("java.home") + "/bin/java",
                "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"),
                SharedMemoryChild.class.getName()));
        cmd.addAll(List.of(args));
        return new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
    }

    private static List<String> readAll(Process p) throws IOException {
        try (BufferedReader in = new BufferedReader(new InputStreamReader(p.getInputStream(),
                StandardCharsets.UTF_8))) {
            return in.lines().toList();
        }
    }
}
