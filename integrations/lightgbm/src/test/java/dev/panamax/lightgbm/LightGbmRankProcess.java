package dev.panamax.lightgbm;

import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.Panamax;

import java.util.Locale;

/**
 * One rank of {@link LightGbmProcessTest}'s jobs: trains its part of {@link PanamaxLightGbmTest#DATA} with
 * {@link PanamaxLightGbm#train} and prints {@code ITERATION i} after each iteration (after sleeping
 * {@code pauseMillis}, so that a test can act mid-training), then {@code MODEL <hash>} and {@code OK}; or
 * {@code FAILED <exception>} and exit status 3.
 *
 * <p>Arguments: {@code iterations pauseMillis [elastic]}. With {@code elastic} it trains with
 * {@link ElasticLightGbm} (its part of the job as launched, up to 2 recoveries) and prints
 * {@code RECOVERY iteration fromSize toSize lostRanks} for each recovery and {@code TREES <hash>} (of the trees,
 * without the parameters, which name the rank count) instead of {@code MODEL}.
 */
public final class LightGbmRankProcess {
    private LightGbmRankProcess() {
    }

    public static void main(String[] args) {
        int iterations = Integer.parseInt(args[0]);
        long pauseMillis = Long.parseLong(args[1]);
        boolean elastic = args.length > 2 && args[2].equals("elastic");
        try (Communicator comm = Panamax.fromEnvironment()) {
            if (elastic) {
                trainElastic(comm, iterations, pauseMillis);
                return;
            }
            String model = PanamaxLightGbm.train(comm, PanamaxLightGbmTest.PARAMS,
                    PanamaxLightGbmTest.part(comm.rank(), comm.size()), iterations, (i, nanos, booster) -> {
                        sleep(pauseMillis);
                        System.out.println("ITERATION " + i);
                    });
            System.out.println("MODEL " + Integer.toHexString(model.hashCode()));
            System.out.println("OK");
        } catch (RuntimeException e) {
            System.out.println("FAILED " + e);
            System.out.flush();
            System.exit(3);
        }
    }

    private static void trainElastic(Communicator comm, int iterations, long pauseMillis) {
        ElasticLightGbm.Result result = ElasticLightGbm.train(comm, PanamaxLightGbmTest.PARAMS,
                PanamaxLightGbmTest.part(comm.rank(), comm.size()), iterations, 2, (i, nanos, booster) -> {
                    sleep(pauseMillis);
                    System.out.println("ITERATION " + i);
                });
        try {
            for (ElasticLightGbm.Recovery r : result.recoveries()) {
                System.out.printf(Locale.ROOT, "RECOVERY %d %d %d %s %.3f s%n", r.iteration(), r.fromSize(),
                        r.toSize(), r.lostRanks(), r.seconds());
            }
            System.out.println("TREES " + Integer.toHexString(PanamaxLightGbmTest.trees(result.model()).hashCode()));
            System.out.println("OK");
        } finally {
            if (result.communicator() != comm) {
                result.communicator().close();
            }
        }
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
