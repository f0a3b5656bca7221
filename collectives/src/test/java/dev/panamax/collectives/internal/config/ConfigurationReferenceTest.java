package dev.panamax.collectives.internal.config;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** docs/reference/configuration.md is the configuration the code reads, and nothing else. */
class ConfigurationReferenceTest {
    private static final Path ROOT = Path.of("..");
    private static final Path DOC = ROOT.resolve("docs/reference/configuration.md");
    private static final String BEGIN = "<!-- generated: Settings.markdownTable() -->\n";
    private static final String END = "<!-- end generated -->";
    private static final Pattern KNOB = Pattern.compile("PANAMAX_[A-Z0-9_]*[A-Z0-9]");
    /** Variables of the scripts themselves, not settings (the doc says so). */
    private static final Set<String> SCRIPT_VARIABLES = Set.of("PANAMAX_ROOT", "PANAMAX_BENCH_JAR");

    @Test
    void theDocQuotesTheSettingsTable() throws IOException {
        String doc = Files.readString(DOC);
        int b = doc.indexOf(BEGIN);
        int e = doc.indexOf(END);
        assertTrue(b >= 0 && e > b, "the doc marks the generated table");
        assertEquals(Settings.markdownTable(), doc.substring(b + BEGIN.length(), e),
                "docs/reference/configuration.md is out of date: paste Settings.markdownTable() between the markers");
    }

    @Test
    void everyKnobHasANameAndADefaultAndADoc() {
        Set<String> names = new TreeSet<>();
        for (Settings.Knob k : Settings.all()) {
            assertTrue(k.env() != null || k.property() != null, k.toString());
            assertTrue(k.doc() != null && !k.doc().isBlank(), k.toString());
            assertTrue(names.add(k.name()), "declared twice: " + k.name());
        }
    }

    /** Every PANAMAX_ variable the Java code or the scripts read is in the doc (C macros are not knobs). */
    @Test
    void everyVariableTheCodeOrTheScriptsReadIsDocumented() throws IOException {
        String doc = Files.readString(DOC);
        Set<String> missing = new TreeSet<>();
        List<Path> places = List.of(ROOT.resolve("scripts"), ROOT.resolve(".ci"));
        try (Stream<Path> modules = Files.list(ROOT)) {
            for (Path m : modules.toList()) {
                scan(m.resolve("src/main/java"), doc, missing);
            }
        }
        for (Path p : places) {
            scan(p, doc, missing);
        }
        missing.removeAll(SCRIPT_VARIABLES);
        missing.removeIf(v -> v.startsWith("PANAMAX_LIBRARY_")); // documented as PANAMAX_LIBRARY_<NAME>
        assertEquals(Set.of(), missing, "variables read but not in docs/reference/configuration.md");
    }

    private static void scan(Path dir, String doc, Set<String> missing) throws IOException {
        if (!Files.isDirectory(dir)) {
            return;
        }
        try (Stream<Path> files = Files.walk(dir)) {
            for (Path f : files.filter(Files::isRegularFile).toList()) {
                String name = f.getFileName().toString();
                if (name.endsWith(".class") || name.endsWith(".jar") || name.endsWith(".ptx")) {
                    continue;
                }
                Matcher m = KNOB.matcher(Files.readString(f));
                while (m.find()) {
                    if (!doc.contains(m.group())) {
                        missing.add(m.group());
                    }
                }
            }
        }
    }
}
