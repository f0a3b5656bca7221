package dev.panamax.djl;

import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.Panamax;

import java.util.stream.Collectors;
import java.util.stream.IntStream;

/**
 * One rank of a data-parallel DJL job in the tests ({@link SmallTraining}; DJL's PyTorch engine allows one
 * gradient collector per JVM, so ranks are processes): prints {@code STEP s} after each step (after sleeping
 * {@code pauseMillis}, so that a test can act mid-training), then {@code LOSSES}, {@code PARAMETERS} (as the
 * float bits in hex, exact), {@code STATS} and {@code OK}; or {@code FAILED <exception>} and exit status 3.
 *
 * <p>Arguments: {@code globalBatch steps pauseMillis [copies|elastic]} ({@code copies}: every gradient through a
 * copy buffer; {@code elastic}: the elastic mode, which prints {@code RECOVERY step from to} per recovery).
 */
public final class DjlRankProcess {
    private DjlRankProcess() {
    }

    public static void main(String[] args) {
        int globalBatch = Integer.parseInt(args[0]);
        int steps = Integer.parseInt(args[1]);
        long pauseMillis = Long.parseLong(args[2]);
        boolean copies = args.length > 3 && args[3].equals("copies");
        boolean elastic = args.length > 3 && args[3].equals("elastic");
        try (Communicator comm = Panamax.fromEnvironment()) {
            SmallTraining.Outcome o = SmallTraining.train(comm, globalBatch, steps, 100 + comm.rank(), step -> {
                sleep(pauseMillis);
                System.out.println("STEP " + step);
            }, copies, elastic);
            for (DataParallelTraining.Recovery r : o.recoveries()) {
                System.out.println("RECOVERY " + r.step() + " " + r.fromSize() + " " + r.toSize());
            }
            System.out.println("LOSSES " + IntStream.range(0, steps).mapToObj(i -> Float.toString(o.localLosses()[i]))
                    .collect(Collectors.joining(",")));
            float[] p = o.parameters();
            System.out.println("PARAMETERS " + IntStream.range(0, p.length)
                    .mapToObj(i -> Integer.toHexString(Float.floatToRawIntBits(p[i])))
                    .collect(Collectors.joining(",")));
            DataParallelTraining.Stats s = o.stats();
            System.out.println("STATS " + s.zeroCopyGradients() + " " + s.copiedGradients() + " " + s.copiedBytes()
                    + " " + s.steps());
            System.out.println("OK");
        } catch (RuntimeException e) {
            System.out.println("FAILED " + e);
            System.out.flush();
            System.exit(3);
        }
    }

    /** {@code LOSSES} or {@code PARAMETERS} back into floats. */
    static float[] parse(String line, boolean bits) {
        String[] parts = line.substring(line.indexOf(' ') + 1).split(",");
        float[] out = new float[parts.length];
        for (int i = 0; i < parts.length; i++) {
            out[i] = bits ? Float.intBitsToFloat(Integer.parseUnsignedInt(parts[i], 16)) : Float.parseFloat(parts[i]);
        }
        return out;
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
