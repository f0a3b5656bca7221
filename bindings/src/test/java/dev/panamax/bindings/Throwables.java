package dev.panamax.bindings;

import java.io.PrintWriter;
import java.io.StringWriter;

final class Throwables {
    private Throwables() {
    }

    /** The messages of a throwable and all its causes. */
    static String chain(Throwable t) {
        StringWriter w = new StringWriter();
        t.printStackTrace(new PrintWriter(w));
        return w.toString();
    }
}
