package dev.panamax.verbs;

/** Run in a separate JVM by {@link MissingLibraryTest}, with libibverbs pointed at a missing file. */
public final class MissingLibraryMain {
    private MissingLibraryMain() {
    }

    public static void main(String[] args) {
        System.out.println("available=" + Verbs.isAvailable());
        System.out.println("cause=" + Verbs.unavailabilityCause());
        try {
            Verbs.devices();
            System.out.println("devices=listed");
        } catch (IllegalStateException e) {
            System.out.println("devices=" + e.getMessage());
        }
        try {
            Verbs.open(null).close();
            System.out.println("open=opened");
        } catch (IllegalStateException e) {
            System.out.println("open=" + e.getMessage());
        }
    }
}
