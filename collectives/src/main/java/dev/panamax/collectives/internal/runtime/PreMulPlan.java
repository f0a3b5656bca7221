package dev.panamax.collectives.internal.runtime;

import dev.panamax.collectives.schedule.Schedule;
import dev.panamax.collectives.schedule.Slice;
import dev.panamax.collectives.schedule.Stage;
import dev.panamax.collectives.schedule.Step;

import java.util.ArrayList;
import java.util.List;

/**
 * A rank's schedule for a pre-multiplied sum, with which of its receives carry a peer's raw input: the peer sends a
 * slice of its own send buffer, unscaled, and this rank multiplies it by the peer's scalar as it folds or copies it
 * in. So no rank makes a scaled copy of what it sends, and a send from shared memory still goes by reference.
 *
 * @param schedule    this rank's schedule of the plain sum
 * @param rawReceives per receive step of {@code schedule}, in stage and step order: whether the matching send of the
 *                    peer reads the peer's send buffer
 */
record PreMulPlan(Schedule schedule, boolean[] rawReceives) {

    /**
     * Matches the receives of {@code all.get(rank)} with their peers' sends, in order per pair of ranks as the links
     * deliver them.
     *
     * @throws IllegalStateException when the schedules' transfers do not pair up (an algorithm's bug)
     */
    static PreMulPlan of(List<Schedule> all, int rank) {
        List<List<Boolean>> rawFrom = new ArrayList<>(all.size());
        for (int q = 0; q < all.size(); q++) {
            List<Boolean> raw = new ArrayList<>();
            if (q != rank) {
                for (Stage st : all.get(q).stages()) {
                    for (Step s : st.steps()) {
                        if (s instanceof Step.Send snd && snd.peer() == rank) {
                            raw.add(snd.src().buffer() == Slice.SEND);
                        }
                    }
                }
            }
            rawFrom.add(raw);
        }
        Schedule mine = all.get(rank);
        int[] next = new int[all.size()];
        List<Boolean> flags = new ArrayList<>();
        for (Stage st : mine.stages()) {
            for (Step s : st.steps()) {
                if (s instanceof Step.Recv rcv) {
                    List<Boolean> from = rawFrom.get(rcv.peer());
                    if (next[rcv.peer()] >= from.size()) {
                        throw new IllegalStateException(mine.algorithm() + ": rank " + rank
                                + " receives more from rank " + rcv.peer() + " than that rank sends to it");
                    }
                    flags.add(from.get(next[rcv.peer()]++));
                }
            }
        }
        for (int q = 0; q < all.size(); q++) {
            if (next[q] != rawFrom.get(q).size()) {
                throw new IllegalStateException(mine.algorithm() + ": rank " + q + " sends rank " + rank + " "
                        + rawFrom.get(q).size() + " messages, which receives " + next[q]);
            }
        }
        boolean[] raw = new boolean[flags.size()];
        for (int i = 0; i < raw.length; i++) {
            raw[i] = flags.get(i);
        }
        return new PreMulPlan(mine, raw);
    }
}
