package dev.panamax.lightgbm;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.util.Arrays;

/**
 * The calling thread's membership of a distributed LightGBM job, from {@code LGBM_NetworkInit*} to
 * {@code LGBM_NetworkFree}. LightGBM keeps its network state in thread-local variables, so a session belongs to
 * the thread that opened it: that thread creates the {@link Dataset}, trains the {@link Booster} and closes the
 * session; one thread holds at most one session. Several ranks can so be several threads of one JVM.
 *
 * <p>{@link #external} hands LightGBM's reduce-scatter and all-gather to a {@link LightGbmNetwork} through two
 * FFM upcall stubs. An exception must never leave an upcall (the JVM would end), so each stub catches every
 * {@link Throwable}: the first failure is recorded, {@link LightGbmNetwork#abandon} is called (so the peers stop
 * waiting), and the stub returns normally with an output that is well formed but local (this rank's own data as
 * if every rank had sent the same), as the hooks have no way to report an error and LightGBM would otherwise go
 * on reading whatever the buffers held. Later upcalls do no communication. The Java caller then gets the failure
 * as a {@link LightGbmNetworkException}, naming the rank and the cause, when the LightGBM call that made the
 * upcall returns, and from every later LightGBM call on the thread until the session closes: the booster's state
 * is no longer the job's.
 */
public final class NetworkSession implements AutoCloseable {
    private static final ThreadLocal<NetworkSession> CURRENT = new ThreadLocal<>();

    // typedef void(*ReduceScatterFunction)(char* input, comm_size_t input_size, int type_size,
    //     const comm_size_t* block_start, const comm_size_t* block_len, int num_block, char* output,
    //     comm_size_t output_size, const ReduceFunction& reducer);
    private static final FunctionDescriptor REDUCE_SCATTER = FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT, JAVA_INT,
            ADDRESS, ADDRESS, JAVA_INT, ADDRESS, JAVA_INT, ADDRESS);
    // typedef void(*AllgatherFunction)(char* input, comm_size_t input_size, const comm_size_t* block_start,
    //     const comm_size_t* block_len, int num_block, char* output, comm_size_t output_size);
    private static final FunctionDescriptor ALLGATHER = FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT, ADDRESS,
            ADDRESS, JAVA_INT, ADDRESS, JAVA_INT);
    private static final MethodHandle REDUCE_SCATTER_TARGET;
    private static final MethodHandle ALLGATHER_TARGET;

    static {
        try {
            MethodHandles.Lookup lookup = MethodHandles.lookup();
            REDUCE_SCATTER_TARGET = lookup.findVirtual(NetworkSession.class, "reduceScatterUpcall",
                    REDUCE_SCATTER.toMethodType());
            ALLGATHER_TARGET = lookup.findVirtual(NetworkSession.class, "allGatherUpcall", ALLGATHER.toMethodType());
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final Thread owner;
    private final int rank;
    private final LightGbmNetwork network;
    private final Arena stubs;
    private volatile Throwable failure;
    private volatile String failedCollective;
    private volatile String failedDuring;
    private int reduceScatterCalls;
    private int allGatherCalls;
    private boolean closed;

    private NetworkSession(int rank, LightGbmNetwork network, Arena stubs) {
        this.owner = Thread.currentThread();
        this.rank = rank;
        this.network = network;
        this.stubs = stubs;
    }

    /**
     * Joins this thread to LightGBM's own socket network ({@code LGBM_NetworkInit}): {@code machines} lists
     * every rank as {@code ip:port} separated by commas, and this rank is the entry with a local address and
     * {@code localListenPort}. Blocks until all are connected or {@code listenTimeOutMinutes} pass.
     */
    public static NetworkSession sockets(String machines, int localListenPort, int listenTimeOutMinutes,
            int numMachines) {
        requireNone();
        LightGbmC.networkInit(machines, localListenPort, listenTimeOutMinutes, numMachines);
        NetworkSession session = new NetworkSession(-1, null, null);
        CURRENT.set(session);
        return session;
    }

    /**
     * Joins this thread, as {@code network.rank()} of {@code network.size()}, to a job whose reduce-scatter and
     * all-gather {@code network} performs ({@code LGBM_NetworkInitWithFunctions}).
     */
    public static NetworkSession external(LightGbmNetwork network) {
        requireNone();
        int size = network.size();
        int rank = network.rank();
        if (size < 1 || rank < 0 || rank >= size) {
            throw new IllegalArgumentException("rank " + rank + " of " + size);
        }
        Arena arena = Arena.ofShared();
        try {
            NetworkSession session = new NetworkSession(rank, network, arena);
            Linker linker = Linker.nativeLinker();
            MemorySegment reduceScatter = linker.upcallStub(REDUCE_SCATTER_TARGET.bindTo(session), REDUCE_SCATTER,
                    arena);
            MemorySegment allGather = linker.upcallStub(ALLGATHER_TARGET.bindTo(session), ALLGATHER, arena);
            LightGbmC.networkInitWithFunctions(size, rank, reduceScatter, allGather);
            CURRENT.set(session);
            return session;
        } catch (RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }

    /** This rank in an {@link #external} session; -1 in a {@link #sockets} one (LightGBM finds it). */
    public int rank() {
        return rank;
    }

    /** The first failure of an upcall, or null. */
    public Throwable failure() {
        return failure;
    }

    /** How many reduce-scatters and all-gathers LightGBM has called back so far: {@code {reduceScatters, allGathers}}.
     * */
    public int[] upcalls() {
        return new int[] {reduceScatterCalls, allGatherCalls};
    }

    /**
     * Leaves the network ({@code LGBM_NetworkFree}) and frees the upcall stubs; on the thread that opened the
     * session only. Later calls do nothing. A recorded failure is not thrown again here.
     */
    @Override
    public void close() {
        if (Thread.currentThread() != owner) {
            throw new IllegalStateException("LightGBM's network state is per thread: close the session on "
                    + owner.getName() + ", which opened it");
        }
        if (closed) {
            return;
        }
        closed = true;
        CURRENT.remove();
        try {
            LightGbmC.networkFree();
        } finally {
            if (stubs != null) {
                stubs.close();
            }
        }
    }

    /**
     * After a LightGBM call on this thread: throws the session's recorded upcall failure, if any, with
     * {@code callError} (the call's own error, or null) suppressed.
     */
    static void throwIfFailed(String call, LightGbmException callError) {
        NetworkSession session = CURRENT.get();
        if (session == null) {
            return;
        }
        Throwable cause = session.failure;
        if (cause == null) {
            return;
        }
        LightGbmNetworkException e = new LightGbmNetworkException(session.rank, session.failedCollective,
                session.failedDuring + " (reported after " + call + ")", cause);
        if (callError != null) {
            e.addSuppressed(callError);
        }
        throw e;
    }

    private static void requireNone() {
        NetworkSession open = CURRENT.get();
        if (open != null && !open.closed) {
            throw new IllegalStateException("this thread is already in a LightGBM network session");
        }
    }

    /** The ReduceScatterFunction upcall. Never throws. */
    @SuppressWarnings("unused")
    private void reduceScatterUpcall(MemorySegment input, int inputSize, int typeSize, MemorySegment blockStart,
            MemorySegment blockLen, int numBlock, MemorySegment output, int outputSize, MemorySegment reducer) {
        try {
            reduceScatterCalls++;
            int[] start = ints(blockStart, numBlock);
            int[] len = ints(blockLen, numBlock);
            MemorySegment in = input.reinterpret(inputSize);
            MemorySegment out = output.reinterpret(outputSize);
            if (failure == null) {
                try (NativeReducer nativeReducer = new NativeReducer(reducer)) {
                    checkBlocks(numBlock, start, len, inputSize);
                    if (len[rank] > outputSize) {
                        throw new IllegalArgumentException("output of " + outputSize + " bytes for a block of "
                                + len[rank]);
                    }
                    network.reduceScatter(in, typeSize, start, len, out, nativeReducer);
                    return;
                } catch (Throwable t) {
                    fail("reduce-scatter", t);
                }
            }
            // This rank's own block, unreduced: the data as if every rank had sent the same.
            int mine = Math.min(len[rank], outputSize);
            MemorySegment.copy(in, start[rank], out, 0, mine);
        } catch (Throwable t) {
            fail("reduce-scatter", t);
        }
    }

    /** The AllgatherFunction upcall. Never throws. */
    @SuppressWarnings("unused")
    private void allGatherUpcall(MemorySegment input, int inputSize, MemorySegment blockStart,
            MemorySegment blockLen, int numBlock, MemorySegment output, int outputSize) {
        try {
            allGatherCalls++;
            int[] start = ints(blockStart, numBlock);
            int[] len = ints(blockLen, numBlock);
            MemorySegment in = input.reinterpret(inputSize);
            MemorySegment out = output.reinterpret(outputSize);
            if (failure == null) {
                try {
                    checkBlocks(numBlock, start, len, outputSize);
                    if (inputSize != len[rank]) {
                        throw new IllegalArgumentException("input of " + inputSize + " bytes for a block of "
                                + len[rank]);
                    }
                    network.allGather(in, start, len, out);
                    return;
                } catch (Throwable t) {
                    fail("all-gather", t);
                }
            }
            // Every block of this rank's size gets this rank's data, the others zeros: well formed, but local.
            byte[] own = in.toArray(JAVA_BYTE);
            for (int r = 0; r < numBlock; r++) {
                MemorySegment block = out.asSlice(start[r], len[r]);
                if (len[r] == own.length) {
                    MemorySegment.copy(own, 0, block, JAVA_BYTE, 0, own.length);
                } else {
                    block.fill((byte) 0);
                }
            }
        } catch (Throwable t) {
            fail("all-gather", t);
        }
    }

    /** Records the first failure and abandons the network; never throws. */
    private void fail(String collective, Throwable t) {
        try {
            if (failure != null) {
                if (failure != t) {
                    failure.addSuppressed(t);
                }
                return;
            }
            failedCollective = collective;
            failedDuring = "upcall " + (reduceScatterCalls + allGatherCalls);
            failure = t;
            try {
                network.abandon(t);
            } catch (Throwable abandoning) {
                t.addSuppressed(abandoning);
            }
        } catch (Throwable ignored) {
            // Nothing may leave an upcall; the failure is already recorded or cannot be.
        }
    }

    private void checkBlocks(int numBlock, int[] start, int[] len, int bufferSize) {
        if (numBlock != network.size()) {
            throw new IllegalArgumentException(numBlock + " blocks for " + network.size() + " ranks");
        }
        for (int r = 0; r < numBlock; r++) {
            if (start[r] < 0 || len[r] < 0 || (long) start[r] + len[r] > bufferSize) {
                throw new IllegalArgumentException("block " + r + " " + Arrays.toString(start) + " "
                        + Arrays.toString(len) + " does not fit " + bufferSize + " bytes");
            }
        }
    }

    private static int[] ints(MemorySegment address, int count) {
        return address.reinterpret((long) count * Integer.BYTES).toArray(JAVA_INT);
    }
}
