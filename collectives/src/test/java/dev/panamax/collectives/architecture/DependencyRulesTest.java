package dev.panamax.collectives.architecture;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The dependency rules of the architecture (docs/design/architecture.md), checked on the sources:
 * the internal packages of collectives form layers whose imports point down only; the API reaches
 * internals only through its factories; no package cycles beyond those factory edges; and in
 * every module no file imports a file that imports it back.
 */
class DependencyRulesTest {
    private static final String BASE = "dev.panamax.collectives";

    /**
     * The internal packages (relative to {@link #BASE}) by layer: a package may import packages of
     * lower layers only, never one beside it or above it.
     */
    private static final Map<String, Integer> LAYERS = Map.ofEntries(
            Map.entry("internal.config", 0),
            Map.entry("internal.auth", 0),
            Map.entry("internal.transport", 1),
            Map.entry("internal.observe", 1),
            Map.entry("internal.elastic", 1),
            Map.entry("internal.transport.local", 2),
            Map.entry("internal.transport.shm", 2),
            Map.entry("internal.transport.tcp", 2),
            Map.entry("internal.transport.verbs", 2),
            Map.entry("internal.runtime", 3),
            Map.entry("internal.bootstrap", 4),
            Map.entry("internal.device", 4));

    /** The API packages, lowest first: each may import those before it ("" is the root package). */
    private static final List<String> API = List.of("", "schedule", "algorithms", "plan", "gpu");

    /**
     * The only edges from the API into internal packages: the factories (Panamax and
     * CommunicatorBuilder connect through the bootstrap, GpuCommunicator and GpuBlueConnect create
     * device backends) and the knobs (internal.config) the builder, LaunchConfig and the cost model
     * read. These are also the only package cycles allowed.
     */
    private static final Set<String> FACTORY_EDGES = Set.of(
            " -> internal.bootstrap",
            " -> internal.config",
            "plan -> internal.config",
            "gpu -> internal.device");

    private static SourceGraph collectives() {
        return SourceGraph.of(List.of(Path.of("src/main/java")));
    }

    private static String rel(String pkg) {
        return pkg.equals(BASE) ? "" : pkg.substring(BASE.length() + 1);
    }

    @Test
    void everyInternalPackageHasALayer() {
        List<String> unknown = new ArrayList<>();
        for (String pkg : collectives().packageEdges().keySet()) {
            String r = rel(pkg);
            if (!API.contains(r) && !LAYERS.containsKey(r)) {
                unknown.add(r);
            }
        }
        assertEquals(List.of(), unknown, "packages without a place in the rules: give them a layer (or make them API)");
    }

    @Test
    void internalPackagesImportOnlyLowerLayersAndTheApi() {
        SourceGraph g = collectives();
        List<String> wrong = new ArrayList<>();
        g.packageEdges().forEach((from, tos) -> {
            Integer layer = LAYERS.get(rel(from));
            if (layer == null) {
                return;
            }
            for (String to : tos) {
                if (!to.startsWith(BASE)) {
                    continue;
                }
                Integer target = LAYERS.get(rel(to));
                boolean ok = target == null ? !rel(to).equals("gpu") : target < layer;
                if (!ok) {
                    wrong.add(rel(from) + " -> " + rel(to) + " " + g.importers(from, to));
                }
            }
        });
        assertEquals(List.of(), wrong, "internal imports that do not point down");
    }

    @Test
    void theApiReachesInternalsOnlyThroughItsFactories() {
        SourceGraph g = collectives();
        List<String> wrong = new ArrayList<>();
        g.packageEdges().forEach((from, tos) -> {
            String f = rel(from);
            if (!API.contains(f)) {
                return;
            }
            for (String to : tos) {
                if (!to.startsWith(BASE)) {
                    continue;
                }
                String t = rel(to);
                boolean ok = API.contains(t) ? API.indexOf(t) < API.indexOf(f) : FACTORY_EDGES.contains(f + " -> " + t);
                if (!ok) {
                    wrong.add((f.isEmpty() ? "(root)" : f) + " -> " + t + " " + g.importers(from, to));
                }
            }
        });
        assertEquals(List.of(), wrong, "API imports beyond the documented factory edges, or upwards in the API");
    }

    @Test
    void noPackageCyclesBeyondTheFactoryEdges() {
        Set<String> allowed = new TreeSet<>();
        for (String e : FACTORY_EDGES) {
            String[] p = e.split(" -> ");
            allowed.add((p[0].isEmpty() ? BASE : BASE + "." + p[0].trim()) + " -> " + BASE + "." + p[1]);
        }
        assertEquals(List.of(), collectives().packageCycles(allowed));
    }

    /** Every module of the build: no package cycles, and no file imports a file that imports it back. */
    @Test
    void noCirclesInAnyModule() throws IOException {
        List<Path> roots = new ArrayList<>();
        // The modules at the top and those one folder down (integrations/*).
        try (Stream<Path> modules = Stream.concat(Files.list(Path.of("..")),
                Files.isDirectory(Path.of("../integrations")) ? Files.list(Path.of("../integrations"))
                        : Stream.empty())) {
            for (Path m : modules.sorted().toList()) {
                Path src = m.resolve("src/main/java");
                if (Files.isDirectory(src) && Files.exists(m.resolve("pom.xml"))) {
                    roots.add(src);
                }
            }
        }
        assertTrue(roots.size() >= 10, "found the modules: " + roots);
        SourceGraph all = SourceGraph.of(roots);
        assertEquals(List.of(), all.fileCircles(), "files that import each other");
        Set<String> allowed = new TreeSet<>();
        for (String e : FACTORY_EDGES) {
            String[] p = e.split(" -> ");
            allowed.add((p[0].isEmpty() ? BASE : BASE + "." + p[0].trim()) + " -> " + BASE + "." + p[1]);
        }
        assertEquals(List.of(), all.packageCycles(allowed), "package cycles");
    }
}
