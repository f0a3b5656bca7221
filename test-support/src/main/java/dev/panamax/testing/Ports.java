package dev.panamax.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;

/** Local TCP ports for the tests' bootstraps. */
public final class Ports {
    private Ports() {
    }

    /**
     * A TCP port that was free a moment ago (the operating system's choice for port 0). Another process may take
     * it before the test binds it; the tests accept that small race.
     */
    public static int freePort() {
        try (ServerSocket s = new ServerSocket(0)) {
            s.setReuseAddress(true);
            return s.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
