/** Buffers as MemorySegments, data types, reduce operations and reduction kernels; idle strategies of polling loops. */
module dev.panamax.memory {
    requires dev.panamax.bindings;
    // Optional: the fast reduction kernels use it when the application adds it (--add-modules jdk.incubator.vector).
    requires static jdk.incubator.vector;
    exports dev.panamax.memory;
    exports dev.panamax.memory.concurrent;
    // Not public API: libc calls and close helpers shared with the modules built on this one (verbs and cuda today).
    exports dev.panamax.memory.internal to dev.panamax.collectives, dev.panamax.verbs, dev.panamax.cuda;
}
