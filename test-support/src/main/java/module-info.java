/**
 * Test helpers shared by the tests of the other modules: rank threads, reference values of the collectives,
 * the skip-or-fail rule of hardware tests with its tags, child JVMs and rank processes. Test scope only.
 */
module dev.panamax.testing {
    requires transitive dev.panamax.memory;
    requires transitive org.junit.jupiter.api;
    exports dev.panamax.testing;
}
