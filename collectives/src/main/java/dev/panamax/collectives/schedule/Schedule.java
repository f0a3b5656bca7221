package dev.panamax.collectives.schedule;

import java.util.Arrays;
import java.util.List;
import dev.panamax.collectives.Collective;

/**
 * The immutable plan one rank follows for one collective: stages of steps on slices of its send,
 * receive and scratch buffers. Built by an algorithm (package {@code algorithms}), run by the
 * communicator's executor, checked by the {@link Simulator}, printed by
 * {@code panamax-perf --print-schedule}.
 *
 * @param algorithm     the algorithm's name, with details (a factorization, per-level choices)
 * @param scratchCounts the element count of each scratch buffer ({@code tmp0, tmp1, ...})
 */
public record Schedule(Problem problem, String algorithm, long[] scratchCounts, List<Stage> stages) {
    public Schedule {
        scratchCounts = scratchCounts.clone();
        stages = List.copyOf(stages);
    }

    @Override
    public long[] scratchCounts() {
        return scratchCounts.clone();
    }

    public int scratchBuffers() {
        return scratchCounts.length;
    }

    public long scratchCount(int k) {
        return scratchCounts[k];
    }

    /** Elements this rank sends over all stages. */
    public long elementsSent() {
        long n = 0;
        for (Stage st : stages) {
            for (Step s : st.steps()) {
                if (s instanceof Step.Send send) {
                    n += send.src().count();
                }
            }
        }
        return n;
    }

    @Override
    public String toString() {
        StringBuilder b = new StringBuilder();
        Problem p = problem;
        b.append(p.collective().label()).append(" ").append(algorithm).append(": rank ").append(p.rank()).append(" of ")
                .append(p.size()).append(", count ").append(p.count()).append(" x ").append(p.elementBytes())
                .append(" B");
        if (p.collective() == Collective.BROADCAST || p.collective() == Collective.REDUCE) {
            b.append(", root ").append(p.root());
        }
        b.append(", ").append(stages.size()).append(" stages, sends ").append(elementsSent()).append(" elements");
        if (scratchCounts.length > 0) {
            b.append(", scratch ").append(Arrays.toString(scratchCounts));
        }
        b.append('\n');
        for (int i = 0; i < stages.size(); i++) {
            Stage st = stages.get(i);
            b.append(String.format("  %3d %s%n", i, st.label()));
            for (Step s : st.steps()) {
                b.append("        ").append(s).append('\n');
            }
        }
        return b.toString();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Schedule s && s.problem.equals(problem) && s.algorithm.equals(algorithm)
                && Arrays.equals(s.scratchCounts, scratchCounts) && s.stages.equals(stages);
    }

    @Override
    public int hashCode() {
        return problem.hashCode() * 31 + stages.hashCode();
    }
}
