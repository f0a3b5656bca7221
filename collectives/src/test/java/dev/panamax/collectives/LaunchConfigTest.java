package dev.panamax.collectives;

import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class LaunchConfigTest {
    private static LaunchConfig of(Map<String, String> env) {
        return LaunchConfig.from(env, name -> null);
    }

    @Test
    void panamaxVariables() {
        LaunchConfig c = of(Map.of("PANAMAX_RANK", "2", "PANAMAX_WORLD_SIZE", "4", "PANAMAX_LOCAL_RANK", "0",
                "PANAMAX_MASTER_ADDR", "10.1.2.3", "PANAMAX_MASTER_PORT", "1234"));
        assertEquals(new LaunchConfig(2, 4, 0, "10.1.2.3", 1234), c);
    }

    @Test
    void torchrunVariables() {
        LaunchConfig c = of(Map.of("RANK", "1", "WORLD_SIZE", "2", "LOCAL_RANK", "1", "MASTER_ADDR", "host",
                "MASTER_PORT", "29501"));
        assertEquals(new LaunchConfig(1, 2, 1, "host", 29501), c);
    }

    @Test
    void openMpiAndSlurmVariables() {
        assertEquals(new LaunchConfig(3, 8, 1, "127.0.0.1", LaunchConfig.DEFAULT_MASTER_PORT),
                of(Map.of("OMPI_COMM_WORLD_RANK", "3", "OMPI_COMM_WORLD_SIZE", "8", "OMPI_COMM_WORLD_LOCAL_RANK",
                        "1")));
        assertEquals(new LaunchConfig(5, 6, 2, "127.0.0.1", LaunchConfig.DEFAULT_MASTER_PORT),
                of(Map.of("SLURM_PROCID", "5", "SLURM_NTASKS", "6", "SLURM_LOCALID", "2")));
    }

    @Test
    void panamaxWinsOverOthersAndPropertiesOverEnvironment() {
        Map<String, String> env = Map.of("PANAMAX_RANK", "0", "RANK", "1", "PANAMAX_WORLD_SIZE", "2", "WORLD_SIZE",
                "2");
        assertEquals(0, of(env).rank());
        assertEquals(1, LaunchConfig.from(env, n -> n.equals("PANAMAX_RANK") ? "1" : null).rank());
    }

    @Test
    void missingOrBadValuesAreNamed() {
        IllegalStateException missing = assertThrows(IllegalStateException.class, () -> of(Map.of()));
        assertTrue(missing.getMessage().contains("PANAMAX_RANK"));
        IllegalArgumentException bad = assertThrows(IllegalArgumentException.class,
                () -> of(Map.of("PANAMAX_RANK", "x", "PANAMAX_WORLD_SIZE", "2")));
        assertTrue(bad.getMessage().contains("PANAMAX_RANK is not an integer"));
        IllegalArgumentException range = assertThrows(IllegalArgumentException.class,
                () -> of(Map.of("PANAMAX_RANK", "2", "PANAMAX_WORLD_SIZE", "2")));
        assertTrue(range.getMessage().contains("outside [0, 2)"));
    }
}
