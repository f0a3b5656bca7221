package dev.panamax.cuda;

/** Run in a separate JVM by {@link MissingLibraryTest}, with libcuda pointed at a missing file. */
public final class MissingLibraryMain {
    private MissingLibraryMain() {
    }

    public static void main(String[] args) {
        System.out.println("available=" + Cuda.isAvailable());
        Throwable cause = Cuda.unavailabilityCause();
        System.out.println("cause=" + (cause == null ? "null" : cause.getClass().getSimpleName() + ": "
                + cause.getMessage()));
        try {
            System.out.println("deviceCount=" + Cuda.deviceCount());
        } catch (IllegalStateException e) {
            System.out.println("deviceCount=" + e.getMessage());
        }
        try {
            System.out.println("device=" + Cuda.device(0));
        } catch (IllegalStateException e) {
            System.out.println("device=" + e.getMessage());
        }
    }
}
