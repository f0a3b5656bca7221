package dev.panamax.bench.examples;

import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.Panamax;
import dev.panamax.ml.AllReduceModel;
import dev.panamax.ml.GradientCompression;
import dev.panamax.ml.Optimizer;
import dev.panamax.ml.ShardedOptimizer;
import dev.panamax.ml.SyncPolicy;
import dev.panamax.testing.RankThreads;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Data-parallel training on 4 in-JVM ranks ends where single-process training on the same global batches does. */
class MlpExampleTest {
    static final MlpExample.Config CONFIG = new MlpExample.Config(16, 32, 2048, 64, 200, 0.5, 7);
    /** Collective timeout: short, so that a bug fails fast. */
    static final Duration TIMEOUT = Duration.ofSeconds(20);

    static void agree(SyncPolicy policy, AllReduceModel model) {
        double single = MlpExample.trainSingle(CONFIG);
        List<Communicator> comms = Panamax.local(4, TIMEOUT.toNanos());
        List<Double> losses;
        try {
            losses = RankThreads.onEach(comms, comm -> MlpExample.trainDistributed(comm, CONFIG, policy, model));
        } finally {
            RankThreads.closeAll(comms);
        }
        for (double d : losses) {
            assertEquals(losses.getFirst(), d, 0.0, "every rank ends with the same weights");
            assertTrue(Math.abs(d - single) <= 1e-4 * Math.abs(single),
                    policy + ": distributed " + d + ", single " + single);
        }
        // And it learned something: the initial loss is about ln 2.
        assertTrue(single < 0.6, "final loss " + single);
    }

    @Test
    void wfbpAgreesWithSingleProcess() {
        agree(SyncPolicy.WFBP, null);
    }

    /** A model under which the four tensors are fused and paired. */
    @Test
    void ascWfbpAgreesWithSingleProcess() {
        agree(SyncPolicy.ASC_WFBP, new AllReduceModel(1e-3, 1e-9, 1.0));
    }

    /** With the model calibrated on the ranks ({@link AllReduceModel#calibrate}). */
    @Test
    void mgWfbpWithCalibratedModelAgreesWithSingleProcess() {
        agree(SyncPolicy.MG_WFBP, null);
    }

    /**
     * The sharded optimizer's run (3 ranks: the buckets padded) follows one process with the same optimizer
     * step by step, the loss curve included, with both ZeRO stages; each rank keeps a third of the state.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(ShardedOptimizer.Stage.class)
    void shardedTrainingFollowsSingleProcess(ShardedOptimizer.Stage stage) {
        Optimizer adam = Optimizer.adam(0.01);
        MlpExample.Config config = new MlpExample.Config(16, 32, 2048, 63, 200, 0.5, 7);
        List<Communicator> comms = Panamax.local(3, TIMEOUT.toNanos());
        List<MlpExample.ShardedRun> runs;
        try {
            runs = RankThreads.onEach(comms, comm -> MlpExample.trainSharded(comm, config, adam, stage, 40));
        } finally {
            RankThreads.closeAll(comms);
        }
        List<Communicator> one = Panamax.local(1, TIMEOUT.toNanos());
        MlpExample.ShardedRun reference;
        try {
            reference = MlpExample.trainSharded(one.getFirst(), config, adam, stage, 40);
        } finally {
            RankThreads.closeAll(one);
        }
        assertEquals(5, reference.losses().size());
        for (MlpExample.ShardedRun r : runs) {
            for (int k = 0; k < r.losses().size(); k++) {
                assertEquals(reference.losses().get(k), r.losses().get(k), 1e-9 * reference.losses().get(k),
                        "loss at step " + (k + 1) * 40);
            }
            assertEquals(reference.unshardedStateBytes(), r.unshardedStateBytes());
            assertTrue(r.stateBytesPerRank() * 3 <= r.unshardedStateBytes() + 3 * 4 * 2 * 8,
                    r.stateBytesPerRank() + " of " + r.unshardedStateBytes());
        }
        assertTrue(reference.finalLoss() < 0.6, "Adam learned: " + reference.finalLoss());
    }

    /**
     * Gradients all-reduced as bfloat16 train the model nearly as the uncompressed run does: every rank ends alike,
     * the curves stay within 2% of each other, and they are not the same (the compression happened).
     */
    @Test
    void bf16CompressedTrainingFollowsTheUncompressedCurve() {
        double single = MlpExample.trainSingle(CONFIG);
        List<Communicator> comms = Panamax.local(4, TIMEOUT.toNanos());
        List<MlpExample.Curve> compressed;
        List<MlpExample.Curve> plain;
        try {
            compressed = RankThreads.onEach(comms, comm -> MlpExample.trainCompressed(comm, CONFIG,
                    GradientCompression.bf16(), 40));
            plain = RankThreads.onEach(comms, comm -> MlpExample.trainCompressed(comm, CONFIG,
                    GradientCompression.none(), 40));
        } finally {
            RankThreads.closeAll(comms);
        }
        MlpExample.Curve bf16 = compressed.getFirst();
        MlpExample.Curve reference = plain.getFirst();
        for (int r = 1; r < 4; r++) {
            assertEquals(bf16.losses(), compressed.get(r).losses(), "every rank ends with the same weights");
        }
        assertTrue(Math.abs(reference.finalLoss() - single) <= 1e-4 * single, reference + " vs single " + single);
        assertEquals(5, bf16.losses().size());
        for (int k = 0; k < bf16.losses().size(); k++) {
            double want = reference.losses().get(k);
            assertTrue(Math.abs(bf16.losses().get(k) - want) <= 0.02 * want,
                    "step " + (k + 1) * 40 + ": bf16 " + bf16.losses().get(k) + ", float64 " + want);
        }
        assertTrue(bf16.finalLoss() != reference.finalLoss(), "bf16 changed the sums");
        assertTrue(bf16.finalLoss() < 0.6, "and it learned: " + bf16.finalLoss());
    }

    /**
     * PowerSGD of rank 4 with error feedback: every rank ends alike, and the model learns nearly as the
     * uncompressed run does (the curve within 3% of it at every point; it was within 0.7% when written).
     */
    @Test
    void powerSgdCompressedTrainingFollowsTheUncompressedCurve() {
        List<Communicator> comms = Panamax.local(4, TIMEOUT.toNanos());
        List<MlpExample.Curve> compressed;
        List<MlpExample.Curve> plain;
        try {
            compressed = RankThreads.onEach(comms, comm -> MlpExample.trainCompressed(comm, CONFIG,
                    MlpExample.compression("powersgd:4").get(), 40));
            plain = RankThreads.onEach(comms, comm -> MlpExample.trainCompressed(comm, CONFIG,
                    GradientCompression.none(), 40));
        } finally {
            RankThreads.closeAll(comms);
        }
        MlpExample.Curve powerSgd = compressed.getFirst();
        MlpExample.Curve reference = plain.getFirst();
        for (int r = 1; r < 4; r++) {
            assertEquals(powerSgd.losses(), compressed.get(r).losses(), "every rank ends with the same weights");
        }
        for (int k = 0; k < powerSgd.losses().size(); k++) {
            double want = reference.losses().get(k);
            assertTrue(Math.abs(powerSgd.losses().get(k) - want) <= 0.03 * want,
                    "step " + (k + 1) * 40 + ": PowerSGD " + powerSgd.losses().get(k) + ", float64 " + want);
        }
        assertTrue(powerSgd.finalLoss() != reference.finalLoss(), "PowerSGD changed the sums");
        assertTrue(powerSgd.finalLoss() < 0.6, "and it learned: " + powerSgd.finalLoss());
    }

    @Test
    void compressionNamesTheHooks() {
        assertEquals("bf16", MlpExample.compression("bf16").get().toString());
        assertEquals("bfloat16-wire", MlpExample.compression("bf16-wire").get().toString());
        assertEquals("powersgd:3", MlpExample.compression("powersgd:3").get().toString());
        for (String wrong : new String[] {"powersgd", "powersgd:0", "fp8"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> MlpExample.compression(wrong));
            assertTrue(e.getMessage().contains("--compression bf16, bf16-wire or powersgd:R"), e.getMessage());
        }
    }
}
