/** Buffers as MemorySegments, data types, reduce operations and reduction kernels. */
module dev.panamax.memory {
    requires dev.panamax.bindings;
    // Optional: the fast reduction kernels use it when the application adds it (--add-modules jdk.incubator.vector).
    requires static jdk.incubator.vector;
    exports dev.panamax.memory;
    exports dev.panamax.memory.concurrent;
    // Used by the transports in dev.panamax.collectives; not public API.
    exports dev.panamax.memory.internal to dev.panamax.collectives, dev.panamax.verbs, dev.panamax.cuda;
}
