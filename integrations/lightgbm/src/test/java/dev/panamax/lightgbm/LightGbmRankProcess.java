package dev.panamax.lightgbm;

import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.Panamax;

/**
 * One rank of {@link LightGbmProcessTest}'s jobs: trains its part of {@link PanamaxLightGbmTest#DATA} with
 * {@link PanamaxLightGbm#train} and prints {@code ITERATION i} after each iteration (after sleeping
 * {@code pauseMillis}, so that a test can act mid-training), then {@code MODEL <hash>} and {@code OK}; or
 * {@code FAILED <exception>} and exit status 3.
 *
 * <p>Arguments: {@code iterations pauseMillis}.
 */
public final class LightGbmRankProcess {
    private LightGbmRankProcess() {
    }

    public static void main(String[] args) {
        int iterations = Integer.parseInt(args[0]);
        long pauseMillis = Long.parseLong(args[1]);
        try (Communicator comm = Panamax.fromEnvironment()) {
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

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
