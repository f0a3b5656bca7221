package dev.panamax.bindings;

/** Run in a separate JVM by {@link NativeLibraryTest}: prints the probe result of one library. */
public final class LibraryProbeMain {
    private LibraryProbeMain() {
    }

    public static void main(String[] args) {
        NativeLibrary lib = NativeLibrary.valueOf(args[0]);
        System.out.println("available=" + lib.isAvailable());
        System.out.println("cause=" + lib.unavailabilityCause());
        if (args.length > 1) {
            try {
                System.out.println("symbol=" + (lib.lookup().findOrThrow(args[1]).address() != 0));
            } catch (UnsatisfiedLinkError e) {
                System.out.println("error=" + e.getMessage());
            }
        }
    }
}
