package dev.panamax.memory;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/** Main class of the child JVMs that the tests start (same java, same class path). */
public final class SharedMemoryChild {
    private SharedMemoryChild() {
    }

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "write" -> { // attach the parent's region, check the parent's byte, write ours
                try (SharedMemory.Region r = SharedMemory.attach(SharedMemory.Handle.decode(args[1]))) {
                    MemorySegment s = r.segment();
                    byte fromParent = s.get(ValueLayout.JAVA_BYTE, s.byteSize() - 1);
                    s.asSlice(0, s.byteSize() - 1).fill(Byte.parseByte(args[2]));
                    System.out.println("parent-byte=" + fromParent);
                }
            }
            case "hold" -> { // attach the parent's region, create one of our own, then wait to be killed
                SharedMemory.Region r = SharedMemory.attach(SharedMemory.Handle.decode(args[1]));
                r.segment().set(ValueLayout.JAVA_BYTE, 0, (byte) 42);
                SharedMemory.Region own = SharedMemory.create("child", 1 << 16);
                System.out.println("ready " + own.handle().encode());
                System.out.flush();
                Thread.sleep(600_000);
            }
            case "kernels" -> { // which kernels run without --add-modules jdk.incubator.vector, and are they right
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment a = arena.allocate(4 * 1001), b = arena.allocate(4 * 1001);
                    for (int i = 0; i < 1001; i++) {
                        a.setAtIndex(ValueLayout.JAVA_FLOAT, i, i);
                        b.setAtIndex(ValueLayout.JAVA_FLOAT, i, 0.5f);
                    }
                    Reductions.accumulate(DataType.FLOAT32, ReduceOp.SUM, a, 0, b, 0, 1001);
                    boolean ok = true;
                    for (int i = 0; i < 1001; i++) ok &= a.getAtIndex(ValueLayout.JAVA_FLOAT, i) == i + 0.5f;
                    System.out.println("vectorized=" + Reductions.isVectorized() + " correct=" + ok);
                }
            }
            default -> throw new IllegalArgumentException(args[0]);
        }
    }
}
