package dev.panamax.collectives.algorithms;

import dev.panamax.collectives.schedule.ScheduleBuilder;
import dev.panamax.collectives.schedule.Slice;

/**
 * Building blocks shared by the algorithms: reduce-scatter and all-gather over a group of ranks
 * on a range of the receive buffer, by ring or by recursive halving/doubling, and the chunking of
 * a range. A group is a list of global ranks; {@code me} is this rank's index in it. After a
 * reduce-scatter, member {@code l} holds the reduction of the part of the range given by
 * {@link #ringOwned} or {@link #halvingOwned}; the matching all-gather spreads those parts back.
 */
public final class SchedulePatterns {
    private SchedulePatterns() {
    }

    /** First element of chunk {@code i} when {@code count} elements are cut into {@code n} near-equal chunks. */
    public static long chunkStart(long count, int n, int i) {
        long base = count / n;
        long rem = count % n;
        return i * base + Math.min(i, rem);
    }

    /** Length of chunk {@code i} (the first {@code count % n} chunks have one more element). */
    public static long chunkCount(long count, int n, int i) {
        return count / n + (i < count % n ? 1 : 0);
    }

    /** {@code {offset, count}} of member {@code me}'s part after a ring reduce-scatter of {@code [lo, lo+len)}. */
    public static long[] ringOwned(long lo, long len, int p, int me) {
        return new long[] {lo + chunkStart(len, p, me), chunkCount(len, p, me)};
    }

    /**
     * Ring reduce-scatter of {@code [lo, lo+len)} in p-1 stages: in stage s member l passes chunk
     * l-s-1 to its right and folds chunk l-s-2 from its left into its own, so that it ends with
     * chunk l complete. {@code src} holds this rank's own contributions (the send buffer in the
     * first stage of an all-reduce, the receive buffer afterwards); results land in the receive
     * buffer.
     */
    public static void ringReduceScatter(ScheduleBuilder b, String label, int[] group, int me, long lo, long len,
            int src) {
        ringReduceScatter(b, label, group, me, lo, len, src, Slice.RECV);
    }

    /** {@link #ringReduceScatter(ScheduleBuilder, String, int[], int, long, long, int)} with the partial sums and the
     * result in buffer {@code dst}. */
    public static void ringReduceScatter(ScheduleBuilder b, String label, int[] group, int me, long lo, long len,
            int src, int dst) {
        int p = group.length;
        if (p == 1) {
            b.stage(label + " copy").copy(new Slice(src, lo, len), new Slice(dst, lo, len));
            return;
        }
        int right = group[(me + 1) % p];
        int left = group[(me - 1 + p) % p];
        for (int s = 0; s < p - 1; s++) {
            int sc = Math.floorMod(me - s - 1, p);
            int rc = Math.floorMod(me - s - 2, p);
            long[] so = ringOwned(lo, len, p, sc);
            long[] ro = ringOwned(lo, len, p, rc);
            b.stage(label + " step " + (s + 1) + "/" + (p - 1))
                    .send(right, new Slice(s == 0 ? src : dst, so[0], so[1]))
                    .recvReduce(left, new Slice(dst, ro[0], ro[1]), new Slice(src, ro[0], ro[1]));
        }
    }

    /** Ring all-gather of the members' chunks of {@code [lo, lo+len)} in the receive buffer, p-1 stages. */
    public static void ringAllGather(ScheduleBuilder b, String label, int[] group, int me, long lo, long len) {
        ringAllGather(b, label, group, me, lo, len, Slice.RECV);
    }

    /** {@link #ringAllGather(ScheduleBuilder, String, int[], int, long, long)} in buffer {@code buffer}. */
    public static void ringAllGather(ScheduleBuilder b, String label, int[] group, int me, long lo, long len,
            int buffer) {
        int p = group.length;
        if (p == 1) {
            return;
        }
        int right = group[(me + 1) % p];
        int left = group[(me - 1 + p) % p];
        for (int s = 0; s < p - 1; s++) {
            long[] so = ringOwned(lo, len, p, Math.floorMod(me - s, p));
            long[] ro = ringOwned(lo, len, p, Math.floorMod(me - s - 1, p));
            b.stage(label + " step " + (s + 1) + "/" + (p - 1))
                    .send(right, new Slice(buffer, so[0], so[1]))
                    .recv(left, new Slice(buffer, ro[0], ro[1]));
        }
    }

    /** {@code {offset, count}} of member {@code me}'s part after a halving reduce-scatter (p a power of two). */
    public static long[] halvingOwned(long lo, long len, int p, int me) {
        long l = lo;
        long h = lo + len;
        for (int mask = p >> 1; mask > 0; mask >>= 1) {
            long mid = l + (h - l) / 2;
            if ((me & mask) == 0) {
                h = mid;
            } else {
                l = mid;
            }
        }
        return new long[] {l, h - l};
    }

    /**
     * Reduce-scatter by recursive halving (p a power of two): in round k member l swaps half of
     * its current range with member l ^ (p >> (k+1)) and folds the half it keeps; log2(p) rounds.
     */
    public static void halvingReduceScatter(ScheduleBuilder b, String label, int[] group, int me, long lo, long len,
            int src) {
        halvingReduceScatter(b, label, group, me, lo, len, src, Slice.RECV);
    }

    /** {@link #halvingReduceScatter(ScheduleBuilder, String, int[], int, long, long, int)} with the partial sums and
     * the result in buffer {@code dst}. */
    public static void halvingReduceScatter(ScheduleBuilder b, String label, int[] group, int me, long lo, long len,
            int src, int dst) {
        int p = group.length;
        requirePowerOfTwo(p);
        if (p == 1) {
            b.stage(label + " copy").copy(new Slice(src, lo, len), new Slice(dst, lo, len));
            return;
        }
        long l = lo;
        long h = lo + len;
        int round = 0;
        int rounds = Integer.numberOfTrailingZeros(p);
        for (int mask = p >> 1; mask > 0; mask >>= 1, round++) {
            long mid = l + (h - l) / 2;
            boolean keepLower = (me & mask) == 0;
            long kl = keepLower ? l : mid;
            long kh = keepLower ? mid : h;
            long gl = keepLower ? mid : l;
            long gh = keepLower ? h : mid;
            int from = round == 0 ? src : dst;
            b.stage(label + " halving " + (round + 1) + "/" + rounds)
                    .send(group[me ^ mask], new Slice(from, gl, gh - gl))
                    .recvReduce(group[me ^ mask], new Slice(dst, kl, kh - kl), new Slice(from, kl, kh - kl));
            l = kl;
            h = kh;
        }
    }

    /** All-gather by recursive doubling that retraces {@link #halvingReduceScatter}; log2(p) rounds. */
    public static void doublingAllGather(ScheduleBuilder b, String label, int[] group, int me, long lo, long len) {
        doublingAllGather(b, label, group, me, lo, len, Slice.RECV);
    }

    /** {@link #doublingAllGather(ScheduleBuilder, String, int[], int, long, long)} in buffer {@code buffer}. */
    public static void doublingAllGather(ScheduleBuilder b, String label, int[] group, int me, long lo, long len,
            int buffer) {
        int p = group.length;
        requirePowerOfTwo(p);
        int rounds = Integer.numberOfTrailingZeros(p);
        long[] los = new long[rounds];
        long[] his = new long[rounds];
        long[] mids = new long[rounds];
        long l = lo;
        long h = lo + len;
        int k = 0;
        for (int mask = p >> 1; mask > 0; mask >>= 1, k++) {
            los[k] = l;
            his[k] = h;
            mids[k] = l + (h - l) / 2;
            if ((me & mask) == 0) {
                h = mids[k];
            } else {
                l = mids[k];
            }
        }
        for (k = rounds - 1; k >= 0; k--) {
            int mask = p >> (k + 1);
            boolean keptLower = (me & mask) == 0;
            long ol = keptLower ? mids[k] : los[k];
            long oh = keptLower ? his[k] : mids[k];
            b.stage(label + " doubling " + (rounds - k) + "/" + rounds)
                    .send(group[me ^ mask], new Slice(buffer, l, h - l))
                    .recv(group[me ^ mask], new Slice(buffer, ol, oh - ol));
            l = los[k];
            h = his[k];
        }
    }

    /** True when every block stays in place ({@code pos[q] == q}): the block permutations below are not needed. */
    static boolean isIdentity(int[] pos) {
        for (int q = 0; q < pos.length; q++) {
            if (pos[q] != q) {
                return false;
            }
        }
        return true;
    }

    /** One stage copying block q of {@code from} (c elements at q*c) to block {@code pos[q]} of {@code to}. */
    static void permuteBlocks(ScheduleBuilder b, String label, int[] pos, long c, int from, int to) {
        b.stage(label);
        for (int q = 0; q < pos.length; q++) {
            b.copy(new Slice(from, q * c, c), new Slice(to, pos[q] * c, c));
        }
    }

    /** The inverse of {@link #permuteBlocks}: block {@code pos[q]} of {@code from} to block q of {@code to}. */
    static void unpermuteBlocks(ScheduleBuilder b, String label, int[] pos, long c, int from, int to) {
        b.stage(label);
        for (int q = 0; q < pos.length; q++) {
            b.copy(new Slice(from, pos[q] * c, c), new Slice(to, q * c, c));
        }
    }

    /** A reduction on a single rank: its own input, copied to the receive buffer and finished. */
    static void alone(ScheduleBuilder b, long count) {
        b.stage("copy").copy(Slice.send(0, count), Slice.recv(0, count));
        b.stage("finish").finish(Slice.recv(0, count), 1);
    }

    private static void requirePowerOfTwo(int p) {
        if (!Costs.isPowerOfTwo(p)) {
            throw new IllegalArgumentException("recursive halving/doubling needs a power-of-two group, not " + p);
        }
    }

    /** The ranks 0..n-1. */
    static int[] all(int n) {
        int[] g = new int[n];
        for (int i = 0; i < n; i++) {
            g[i] = i;
        }
        return g;
    }

    /**
     * Folding for non-power-of-two groups (MPICH's approach): with p' the largest power of two
     * <= n and e = n - p', the even ranks below 2e hand their vector to the odd rank above them
     * and sit out. Returns this rank's index among the p' remaining ranks, or -1 if it sits out.
     */
    static int foldedIndex(int rank, int n) {
        int pp = Integer.highestOneBit(n);
        int extra = n - pp;
        if (rank < 2 * extra) {
            return rank % 2 == 1 ? rank / 2 : -1;
        }
        return rank - extra;
    }

    /** The real rank of folded index {@code v}. */
    static int unfolded(int v, int n) {
        int extra = n - Integer.highestOneBit(n);
        return v < extra ? 2 * v + 1 : v + extra;
    }

    /** The p' remaining ranks after folding, by folded index. */
    static int[] foldedGroup(int n) {
        int pp = Integer.highestOneBit(n);
        int[] g = new int[pp];
        for (int v = 0; v < pp; v++) {
            g[v] = unfolded(v, n);
        }
        return g;
    }
}
