package dev.panamax.spark;

import dev.panamax.collectives.CollectiveTimeoutException;
import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.CommunicatorBuilder;
import dev.panamax.collectives.LaunchConfig;
import dev.panamax.collectives.Panamax;
import dev.panamax.ml.shared.SharedVariable;
import org.apache.spark.BarrierTaskContext;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The tasks of one barrier stage that run in this executor JVM, as one rank of a communicator
 * over the executors: the paper's per-process all-reduce manager. The first of them to arrive
 * connects; the last to end closes the communicator and the shared variables on it.
 */
final class SharedProcessGroup {
    /** Stage id and attempt to the group of this JVM. */
    private static final Map<String, SharedProcessGroup> GROUPS = new ConcurrentHashMap<>();

    private final String stage;
    private final int tasksHere;
    private final CompletableFuture<Communicator> communicator = new CompletableFuture<>();
    // Guarded by this.
    private int members;
    private final Set<String> keys = new LinkedHashSet<>();

    private SharedProcessGroup(String stage, int tasksHere) {
        this.stage = stage;
        this.tasksHere = tasksHere;
    }

    /** Joins (or, first, creates and connects) this JVM's group for the context's stage. */
    static SharedProcessGroup join(BarrierTaskContext context, PanamaxBarrier.Rendezvous r) {
        // Processes in the order of their first partition, so partition 0's process is rank 0 and hosts the store.
        List<String> processes = new ArrayList<>(new LinkedHashSet<>(List.of(r.processes())));
        String me = PanamaxBarrier.Rendezvous.PROCESS_ID;
        int rank = processes.indexOf(me);
        int tasks = (int) List.of(r.processes()).stream().filter(me::equals).count();
        String myHost = hostOf(r, me);
        int localRank = 0;
        for (int q = 0; q < rank; q++) {
            localRank += hostOf(r, processes.get(q)).equals(myHost) ? 1 : 0;
        }
        String stage = context.stageId() + "." + context.stageAttemptNumber();
        boolean[] created = {false};
        SharedProcessGroup g = GROUPS.computeIfAbsent(stage, s -> {
            created[0] = true;
            return new SharedProcessGroup(s, tasks);
        });
        synchronized (g) {
            g.members++;
        }
        if (created[0]) {
            try {
                g.communicator.complete(Panamax.builder()
                        .config(new LaunchConfig(rank, processes.size(), localRank, r.hosts()[0], r.port()))
                        .secret(r.secret())
                        .connect());
            } catch (RuntimeException | Error e) {
                g.communicator.completeExceptionally(e);
                throw e;
            }
        }
        return g;
    }

    private static String hostOf(PanamaxBarrier.Rendezvous r, String process) {
        return r.hosts()[List.of(r.processes()).indexOf(process)];
    }

    int tasksHere() {
        return tasksHere;
    }

    /** The group's communicator, waiting while the first task of the group connects. */
    Communicator communicator() {
        try {
            return communicator.get(CommunicatorBuilder.DEFAULT_TIMEOUT_NANOS, TimeUnit.NANOSECONDS);
        } catch (ExecutionException e) {
            throw new IllegalStateException("the executor's Panamax communicator for stage " + stage
                    + " failed to connect", e.getCause());
        } catch (TimeoutException e) {
            throw new CollectiveTimeoutException("the executor's Panamax communicator for stage " + stage
                    + " did not connect in time");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for the executor's Panamax communicator", e);
        }
    }

    /** Remembers a variable so that the last task closes it. */
    synchronized void track(String key) {
        keys.add(key);
    }

    /** A task of the group has ended; the last one closes everything. */
    void leave() {
        List<String> toClose;
        synchronized (this) {
            if (--members > 0) {
                return;
            }
            toClose = new ArrayList<>(keys);
        }
        GROUPS.remove(stage, this);
        if (communicator.isCompletedExceptionally() || !communicator.isDone()) {
            return;
        }
        Communicator c = communicator.join();
        for (String key : toClose) {
            try {
                SharedVariable.lookup(c, key).close();
            } catch (NoSuchElementException alreadyClosed) {
                // closed by the application
            }
        }
        c.close();
    }
}
