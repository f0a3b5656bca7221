package dev.panamax.lightgbm;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Locale;

/**
 * LightGBM's native library, loaded on first use from the {@code lightgbmlib} jar on the class path: the
 * resource is copied once to a private temporary file (deleted when the JVM exits) and opened with
 * {@link SymbolLookup#libraryLookup(Path, Arena)} in the global arena, so it stays loaded for the life of the
 * JVM. Only {@code lib_lightgbm.so} is used (its C API); the jar's JNI library {@code lib_lightgbm_swig.so} is
 * not. The library needs {@code libgomp.so.1} (OpenMP) and {@code libstdc++.so.6} from the system.
 */
final class NativeLibrary {
    /** Where the lightgbmlib jar keeps the Linux x86-64 build of the C API library. */
    static final String RESOURCE = "/com/microsoft/ml/lightgbm/linux/x86_64/lib_lightgbm.so";

    private NativeLibrary() {
    }

    /** Initialized on first access to {@link #lookup()}: nothing is copied or loaded before. */
    private static final class Holder {
        static final SymbolLookup LOOKUP = load();
    }

    /** The symbols of the loaded library. */
    static SymbolLookup lookup() {
        return Holder.LOOKUP;
    }

    /** A downcall handle to the exported function {@code name}. */
    static MethodHandle downcall(String name, FunctionDescriptor descriptor) {
        MemorySegment symbol = lookup().find(name)
                .orElseThrow(() -> new UnsatisfiedLinkError(name + " is not exported by " + RESOURCE));
        return Linker.nativeLinker().downcallHandle(symbol, descriptor);
    }

    private static SymbolLookup load() {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
        if (!os.contains("linux") || !(arch.equals("amd64") || arch.equals("x86_64"))) {
            throw new UnsupportedOperationException(
                    "LightGBM through FFM is only wired for Linux x86-64, not " + os + "/" + arch);
        }
        try (InputStream in = NativeLibrary.class.getResourceAsStream(RESOURCE)) {
            if (in == null) {
                throw new UnsatisfiedLinkError(RESOURCE + " is not on the class path (the lightgbmlib jar is missing)");
            }
            Path dir = Files.createTempDirectory("panamax-lightgbm",
                    PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
            Path file = dir.resolve("lib_lightgbm.so");
            Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
            // Deleted in reverse order of registration: the file first, then its directory.
            dir.toFile().deleteOnExit();
            file.toFile().deleteOnExit();
            return SymbolLookup.libraryLookup(file, Arena.global());
        } catch (IOException e) {
            throw new UncheckedIOException("copying " + RESOURCE + " out of the class path", e);
        }
    }
}
