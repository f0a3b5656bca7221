package dev.panamax.collectives.schedule;

import java.util.ArrayList;
import java.util.List;

/** Collects the stages and scratch buffers of a schedule under construction. */
public final class ScheduleBuilder {
    private final Problem problem;
    private final String algorithm;
    private final List<Stage> stages = new ArrayList<>();
    private final List<Long> scratch = new ArrayList<>();
    private List<Step> open;
    private String openLabel;

    public ScheduleBuilder(Problem problem, String algorithm) {
        this.problem = problem;
        this.algorithm = algorithm;
    }

    public Problem problem() {
        return problem;
    }

    public int rank() {
        return problem.rank();
    }

    public int size() {
        return problem.size();
    }

    /** Declares a scratch buffer of {@code count} elements and returns its buffer id. */
    public int scratch(long count) {
        scratch.add(count);
        return Slice.scratch(scratch.size() - 1);
    }

    /** Starts a new stage (ending the open one); steps added next belong to it. */
    public ScheduleBuilder stage(String label) {
        close();
        open = new ArrayList<>();
        openLabel = label;
        return this;
    }

    public ScheduleBuilder send(int peer, Slice src) {
        return add(new Step.Send(peer, src));
    }

    public ScheduleBuilder recv(int peer, Slice dst) {
        return add(new Step.Recv(peer, dst, null));
    }

    /** {@code dst = with op incoming}. */
    public ScheduleBuilder recvReduce(int peer, Slice dst, Slice with) {
        return add(new Step.Recv(peer, dst, with));
    }

    public ScheduleBuilder copy(Slice src, Slice dst) {
        if (src.equals(dst) || src.count() == 0) {
            return this;
        }
        return add(new Step.Copy(src, dst));
    }

    public ScheduleBuilder reduce(Slice dst, Slice a, Slice b) {
        return add(new Step.Reduce(dst, a, b));
    }

    public ScheduleBuilder finish(Slice slice, int contributions) {
        return add(new Step.Finish(slice, contributions));
    }

    public ScheduleBuilder add(Step step) {
        if (open == null) {
            throw new IllegalStateException("no stage open: call stage(label) first");
        }
        if (step.isTransfer() && peerOf(step) == problem.rank()) {
            throw new IllegalArgumentException("stage '" + openLabel + "': " + step + " addresses this rank itself");
        }
        if (step.isTransfer() && (peerOf(step) < 0 || peerOf(step) >= problem.size())) {
            throw new IllegalArgumentException("stage '" + openLabel + "': " + step + " addresses no rank of "
                    + problem.size());
        }
        open.add(step);
        return this;
    }

    private static int peerOf(Step s) {
        return switch (s) {
            case Step.Send x -> x.peer();
            case Step.Recv x -> x.peer();
            default -> -1;
        };
    }

    private void close() {
        if (open != null && !open.isEmpty()) {
            stages.add(new Stage(openLabel, open));
        }
        open = null;
    }

    /** The finished schedule; {@code algorithm} may carry a detail, e.g. {@code blueconnect(3x2x2: ring,rhd,rhd)}. */
    public Schedule build() {
        close();
        long[] s = new long[scratch.size()];
        for (int i = 0; i < s.length; i++) {
            s[i] = scratch.get(i);
        }
        return new Schedule(problem, algorithm, s, stages);
    }
}
