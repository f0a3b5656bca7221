package dev.panamax.collectives.internal.observe;

import dev.panamax.collectives.Communicator;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/** Running a body on every rank of a group of threads-as-ranks, for the tests of this package. */
final class Ranks {
    interface Body {
        void run(Communicator c) throws Exception;
    }

    static void run(List<Communicator> comms, Body body) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(comms.size());
        try {
            List<Future<?>> fs = new ArrayList<>();
            for (Communicator c : comms) {
                fs.add(pool.submit(() -> {
                    body.run(c);
                    return null;
                }));
            }
            for (Future<?> f : fs) {
                try {
                    f.get(2, TimeUnit.MINUTES);
                } catch (ExecutionException e) {
                    if (e.getCause() instanceof Exception x) {
                        throw x;
                    }
                    throw e;
                }
            }
        } finally {
            pool.shutdownNow();
        }
    }

    static void closeAll(List<Communicator> comms) {
        for (Communicator c : comms) {
            c.close();
        }
    }

    private Ranks() {
    }
}
