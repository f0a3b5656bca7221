package dev.panamax.collectives.internal;

import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import dev.panamax.memory.Reductions;

import java.lang.foreign.MemorySegment;

/**
 * Ring collectives (Baidu's schedule, paper 003): reduce-scatter in n-1 steps where each rank
 * passes one chunk to its right neighbour and folds the chunk from its left one into its own,
 * then all-gather in n-1 steps passing the finished chunks round. Each rank sends and receives
 * 2(n-1)/n of the data, independent of n. Broadcast is a pipelined chain from the root, reduce
 * is the ring reduce-scatter followed by a gather of the chunks at the root, and the barrier is a
 * dissemination barrier of empty messages (ceil(log2 n) rounds).
 *
 * <p>Counts need not divide by n: chunk i has {@code count/n} elements plus one for the first
 * {@code count%n} chunks, so chunks may be empty (empty messages still flow, keeping the ranks in
 * step).
 */
final class Ring {
    /** Broadcast pipelines in pieces of this many bytes (rounded down to whole elements). */
    private static final long BROADCAST_PIECE_BYTES = 512 * 1024;
    /** Mid-size all-reduces on power-of-two groups use recursive halving and doubling up to this size. */
    static final long HALVING_DOUBLING_MAX_BYTES = 4 << 20;
    /** All-reduce uses the one-step direct exchange while (n-1) * bytes stays under this. */
    static final long DIRECT_MAX_BYTES = 32 * 1024;

    private final int rank;
    private final int size;
    private final Link[] links;
    private final Waiter waiter;
    private final Scratch scratch;
    /** Groups of 4, 8, 16...: recursive doubling and halving/doubling apply. */
    private final boolean powerOfTwoAbove2;

    Ring(int rank, int size, Link[] links, Waiter waiter, Scratch scratch) {
        this.rank = rank;
        this.size = size;
        this.links = links;
        this.waiter = waiter;
        this.scratch = scratch;
        this.powerOfTwoAbove2 = size > 2 && Integer.bitCount(size) == 1;
    }

    private Link right() {
        return links[(rank + 1) % size];
    }

    private Link left() {
        return links[(rank - 1 + size) % size];
    }

    static long chunkStart(long count, int n, int i) {
        long base = count / n;
        long rem = count % n;
        return i * base + Math.min(i, rem);
    }

    static long chunkCount(long count, int n, int i) {
        return count / n + (i < count % n ? 1 : 0);
    }

    private static MemorySegment chunk(MemorySegment s, long count, int n, int i, int elem) {
        return s.asSlice(chunkStart(count, n, i) * elem, chunkCount(count, n, i) * elem);
    }

    void allReduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op) {
        int n = size;
        int e = type.byteSize();
        if (count == 0) {
            return;
        }
        if (n == 1) {
            copyIfDistinct(send, recv, count * e);
            return;
        }
        if (count * e * (n - 1) <= DIRECT_MAX_BYTES) {
            if (powerOfTwoAbove2) {
                recursiveDoublingAllReduce(send, recv, count, type, op);
            } else {
                directAllReduce(send, recv, count, type, op);
            }
            return;
        }
        if (powerOfTwoAbove2 && count * e <= HALVING_DOUBLING_MAX_BYTES) {
            halvingDoublingAllReduce(send, recv, count, type, op);
            return;
        }
        waiter.begin("allreduce", 2 * (n - 1));
        reduceScatterChunks(send, recv, count, type, op);
        for (int s = 0; s < n - 1; s++) {
            waiter.step(n - 1 + s);
            int sc = Math.floorMod(rank + 1 - s, n);
            int rc = Math.floorMod(rank - s, n);
            Request tx = right().send(chunk(recv, count, n, sc, e));
            Request rx = left().recv(chunk(recv, count, n, rc, e), null, type, null);
            waiter.await(tx, rx);
        }
    }

    /**
     * Small messages: one step in which every rank sends its whole vector to every other rank,
     * then each folds the n vectors in rank order (so every rank gets the same bits). Latency is
     * one message hand-off instead of the ring's 2(n-1).
     */
    private void directAllReduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op) {
        int n = size;
        long bytes = count * type.byteSize();
        waiter.begin("allreduce(direct)", 1);
        MemorySegment inbox = scratch.get(0, bytes * n);
        MemorySegment own = inbox.asSlice(rank * bytes, bytes);
        MemorySegment.copy(send, 0, own, 0, bytes);
        Request[] reqs = requests(2 * (n - 1));
        int k = 0;
        for (int p = 0; p < n; p++) {
            if (p != rank) {
                reqs[k++] = links[p].send(own);
                reqs[k++] = links[p].recv(inbox.asSlice(p * bytes, bytes), null, type, null);
            }
        }
        waiter.awaitAll(reqs, k);
        Reductions.reduce(type, op, recv, 0, inbox, 0, inbox, bytes, count);
        for (int p = 2; p < n; p++) {
            Reductions.accumulate(type, op, recv, 0, inbox, p * bytes, count);
        }
        if (op == ReduceOp.AVG) {
            Reductions.divide(type, recv, 0, count, n);
        }
        java.util.Arrays.fill(reqs, null);
    }

    /**
     * Small messages on a power-of-two group: log2(n) rounds, in round k a rank swaps its partial
     * vector with rank ^ 2^k and folds the two (lower rank's operand first, so that every rank
     * computes the same bits). Each rank waits on one peer per round, which keeps latency low when
     * the CPUs are oversubscribed (the direct exchange needs every peer scheduled at once).
     */
    private void recursiveDoublingAllReduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op) {
        int n = size;
        long bytes = count * type.byteSize();
        int rounds = Integer.numberOfTrailingZeros(n);
        waiter.begin("allreduce(recursive doubling)", rounds);
        MemorySegment mine = scratch.get(0, 2 * bytes);
        MemorySegment theirs = mine.asSlice(bytes, bytes);
        mine = mine.asSlice(0, bytes);
        MemorySegment.copy(send, 0, mine, 0, bytes);
        for (int k = 0; k < rounds; k++) {
            waiter.step(k);
            int partner = rank ^ (1 << k);
            Request tx = links[partner].send(mine);
            Request rx = links[partner].recv(theirs, null, type, null);
            waiter.await(tx, rx);
            MemorySegment out = k == rounds - 1 ? recv : mine;
            if (partner < rank) {
                Reductions.reduce(type, op, out, 0, theirs, 0, mine, 0, count);
            } else {
                Reductions.reduce(type, op, out, 0, mine, 0, theirs, 0, count);
            }
        }
        if (op == ReduceOp.AVG) {
            Reductions.divide(type, recv, 0, count, n);
        }
    }

    /**
     * Rabenseifner's all-reduce on a power-of-two group: a reduce-scatter by recursive halving (in
     * step k a rank swaps half of its current range with rank ^ (n >> (k+1)) and folds the half it
     * keeps), then an all-gather by recursive doubling that retraces the steps. Same bytes as the
     * ring, 2 (n-1)/n of the vector per rank, in 2 log2(n) steps instead of 2 (n-1): fewer
     * hand-offs, each to one peer, which is what counts when ranks wait on each other's CPU time.
     */
    private void halvingDoublingAllReduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op) {
        int n = size;
        int e = type.byteSize();
        int rounds = Integer.numberOfTrailingZeros(n);
        waiter.begin("allreduce(halving-doubling)", 2 * rounds);
        long lo = 0;
        long hi = count;
        long[] mids = new long[rounds];
        long[] los = new long[rounds];
        long[] his = new long[rounds];
        for (int k = 0; k < rounds; k++) {
            waiter.step(k);
            int mask = n >> (k + 1);
            int partner = rank ^ mask;
            long mid = lo + (hi - lo) / 2;
            los[k] = lo;
            his[k] = hi;
            mids[k] = mid;
            boolean keepLower = (rank & mask) == 0;
            long keepLo = keepLower ? lo : mid;
            long keepHi = keepLower ? mid : hi;
            long giveLo = keepLower ? mid : lo;
            long giveHi = keepLower ? hi : mid;
            MemorySegment from = k == 0 ? send : recv;
            Request tx = links[partner].send(from.asSlice(giveLo * e, (giveHi - giveLo) * e));
            Request rx = links[partner].recv(recv.asSlice(keepLo * e, (keepHi - keepLo) * e),
                    from.asSlice(keepLo * e, (keepHi - keepLo) * e), type, op);
            waiter.await(tx, rx);
            lo = keepLo;
            hi = keepHi;
        }
        if (op == ReduceOp.AVG) {
            Reductions.divide(type, recv, lo * e, hi - lo, n);
        }
        for (int k = rounds - 1; k >= 0; k--) {
            waiter.step(2 * rounds - 1 - k);
            int mask = n >> (k + 1);
            int partner = rank ^ mask;
            // The partner owns the other half of the range this rank had before step k.
            boolean keptLower = (rank & mask) == 0;
            long otherLo = keptLower ? mids[k] : los[k];
            long otherHi = keptLower ? his[k] : mids[k];
            Request tx = links[partner].send(recv.asSlice(lo * e, (hi - lo) * e));
            Request rx = links[partner].recv(recv.asSlice(otherLo * e, (otherHi - otherLo) * e), null, type, null);
            waiter.await(tx, rx);
            lo = los[k];
            hi = his[k];
        }
    }

    private Request[] requestArray = new Request[0];

    private Request[] requests(int n) {
        if (requestArray.length < n) {
            requestArray = new Request[n];
        }
        return requestArray;
    }

    /** Ring reduce-scatter over the n chunks of {@code count}; afterwards chunk (rank+1)%n of {@code work} is complete (AVG: divided). */
    private void reduceScatterChunks(MemorySegment send, MemorySegment work, long count, DataType type, ReduceOp op) {
        int n = size;
        int e = type.byteSize();
        for (int s = 0; s < n - 1; s++) {
            waiter.step(s);
            int sc = Math.floorMod(rank - s, n);
            int rc = Math.floorMod(rank - s - 1, n);
            Request tx = right().send(chunk(s == 0 ? send : work, count, n, sc, e));
            Request rx = left().recv(chunk(work, count, n, rc, e), chunk(send, count, n, rc, e), type, op);
            waiter.await(tx, rx);
        }
        if (op == ReduceOp.AVG) {
            int owned = (rank + 1) % n;
            Reductions.divide(type, work, chunkStart(count, n, owned) * e, chunkCount(count, n, owned), n);
        }
    }

    void reduceScatter(MemorySegment send, MemorySegment recv, long recvCount, DataType type, ReduceOp op) {
        int n = size;
        long blockBytes = recvCount * type.byteSize();
        waiter.begin("reducescatter", n - 1);
        if (recvCount == 0) {
            return;
        }
        if (n == 1) {
            copyIfDistinct(send, recv, blockBytes);
            return;
        }
        MemorySegment out = recv.asSlice(0, blockBytes);
        for (int s = 0; s < n - 1; s++) {
            waiter.step(s);
            int sb = Math.floorMod(rank - s - 1, n);
            int rb = Math.floorMod(rank - s - 2, n);
            // Partial sums alternate between two scratch blocks; the last step lands in recv.
            MemorySegment from = s == 0 ? send.asSlice(sb * blockBytes, blockBytes) : scratch.get((s - 1) % 2, blockBytes);
            MemorySegment into = s == n - 2 ? out : scratch.get(s % 2, blockBytes);
            Request tx = right().send(from);
            Request rx = left().recv(into, send.asSlice(rb * blockBytes, blockBytes), type, op);
            waiter.await(tx, rx);
        }
        if (op == ReduceOp.AVG) {
            Reductions.divide(type, out, 0, recvCount, n);
        }
    }

    void allGather(MemorySegment send, MemorySegment recv, long sendCount, DataType type) {
        int n = size;
        long blockBytes = sendCount * type.byteSize();
        waiter.begin("allgather", n - 1);
        if (sendCount == 0) {
            return;
        }
        copyIfDistinct(send, recv.asSlice(rank * blockBytes, blockBytes), blockBytes);
        for (int s = 0; s < n - 1; s++) {
            waiter.step(s);
            int sb = Math.floorMod(rank - s, n);
            int rb = Math.floorMod(rank - s - 1, n);
            Request tx = right().send(recv.asSlice(sb * blockBytes, blockBytes));
            Request rx = left().recv(recv.asSlice(rb * blockBytes, blockBytes), null, type, null);
            waiter.await(tx, rx);
        }
    }

    void broadcast(MemorySegment send, MemorySegment recv, long count, DataType type, int root) {
        int n = size;
        int e = type.byteSize();
        long bytes = count * e;
        long piece = Math.max(e, BROADCAST_PIECE_BYTES / e * e);
        int pieces = (int) Math.max(1, (bytes + piece - 1) / piece);
        waiter.begin("broadcast", pieces + 1);
        if (count == 0) {
            return;
        }
        if (rank == root) {
            copyIfDistinct(send, recv, bytes);
        }
        if (n == 1) {
            return;
        }
        int pos = Math.floorMod(rank - root, n);
        Link prev = pos == 0 ? null : links[Math.floorMod(rank - 1, n)];
        Link next = pos == n - 1 ? null : links[(rank + 1) % n];
        MemorySegment data = rank == root ? send : recv;
        // Step k receives piece k and forwards piece k-1, so every hop of the chain is busy at once.
        for (int k = 0; k <= pieces; k++) {
            waiter.step(k);
            Request rx = prev != null && k < pieces ? prev.recv(piece(data, bytes, piece, k), null, type, null) : null;
            Request tx = next != null && k > 0 ? next.send(piece(data, bytes, piece, k - 1)) : null;
            waiter.awaitAll(rx, tx, null, null);
        }
    }

    private static MemorySegment piece(MemorySegment s, long bytes, long piece, int k) {
        long off = k * piece;
        return s.asSlice(off, Math.min(piece, bytes - off));
    }

    void reduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op, int root) {
        int n = size;
        int e = type.byteSize();
        waiter.begin("reduce", n);
        if (count == 0) {
            return;
        }
        if (n == 1) {
            copyIfDistinct(send, recv, count * e);
            return;
        }
        MemorySegment work = rank == root ? recv : scratch.get(2, count * e);
        reduceScatterChunks(send, work, count, type, op);
        int owned = (rank + 1) % n;
        waiter.step(n - 1);
        if (rank != root) {
            waiter.await(links[root].send(chunk(work, count, n, owned, e)));
            return;
        }
        // The root holds chunk root+1; chunk c is owned by rank c-1.
        for (int c = 0; c < n; c++) {
            int owner = Math.floorMod(c - 1, n);
            if (owner != root) {
                waiter.await(links[owner].recv(chunk(recv, count, n, c, e), null, type, null));
            }
        }
    }

    void barrier() {
        int n = size;
        int rounds = 32 - Integer.numberOfLeadingZeros(Math.max(0, n - 1));
        waiter.begin("barrier", rounds);
        for (int k = 1, s = 0; k < n; k <<= 1, s++) {
            waiter.step(s);
            Request tx = links[(rank + k) % n].send(MemorySegment.NULL);
            Request rx = links[Math.floorMod(rank - k, n)].recv(MemorySegment.NULL, null, DataType.UINT8, null);
            waiter.await(tx, rx);
        }
    }

    private static void copyIfDistinct(MemorySegment from, MemorySegment to, long bytes) {
        if (from.address() != to.address() || !from.heapBase().equals(to.heapBase())) {
            MemorySegment.copy(from, 0, to, 0, bytes);
        }
    }
}
