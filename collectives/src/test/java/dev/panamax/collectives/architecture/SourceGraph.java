package dev.panamax.collectives.architecture;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The import graph of Java sources: which top-level class each file declares, in which package,
 * and which of the known classes it imports (static imports count for their class).
 */
final class SourceGraph {
    private static final Pattern PACKAGE = Pattern.compile("^package\\s+([\\w.]+)\\s*;", Pattern.MULTILINE);
    private static final Pattern IMPORT = Pattern.compile("^import\\s+(static\\s+)?([\\w.]+?)(\\.\\*)?\\s*;",
            Pattern.MULTILINE);

    /** Class name (fully qualified) to its package. */
    final Map<String, String> packageOf = new TreeMap<>();
    /** Class name to the known classes it imports. */
    final Map<String, Set<String>> imports = new TreeMap<>();
    /** Class name to the file it is in. */
    final Map<String, Path> fileOf = new TreeMap<>();

    /** The graph of every {@code .java} file under the given source roots (module-info excluded). */
    static SourceGraph of(List<Path> roots) {
        SourceGraph g = new SourceGraph();
        Map<String, String> texts = new TreeMap<>();
        for (Path root : roots) {
            try (Stream<Path> files = Files.walk(root)) {
                for (Path f : files.filter(p -> p.toString().endsWith(".java")).toList()) {
                    String name = f.getFileName().toString();
                    if (name.equals("module-info.java") || name.equals("package-info.java")) {
                        continue;
                    }
                    String text = Files.readString(f);
                    Matcher m = PACKAGE.matcher(text);
                    String pkg = m.find() ? m.group(1) : "";
                    String cls = (pkg.isEmpty() ? "" : pkg + ".") + name.substring(0, name.length() - ".java".length());
                    g.packageOf.put(cls, pkg);
                    g.fileOf.put(cls, f);
                    texts.put(cls, text);
                }
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        for (Map.Entry<String, String> e : texts.entrySet()) {
            Set<String> out = new TreeSet<>();
            Matcher m = IMPORT.matcher(e.getValue());
            while (m.find()) {
                String target = g.knownClassOf(m.group(2));
                if (target != null && !target.equals(e.getKey())) {
                    out.add(target);
                }
            }
            g.imports.put(e.getKey(), out);
        }
        return g;
    }

    /** The known top-level class a dotted name starts with (a nested class or static member counts for it), or null. */
    private String knownClassOf(String dotted) {
        String s = dotted;
        while (true) {
            if (packageOf.containsKey(s)) {
                return s;
            }
            int dot = s.lastIndexOf('.');
            if (dot < 0) {
                return null;
            }
            s = s.substring(0, dot);
        }
    }

    /** Package to the other packages it imports from. */
    Map<String, Set<String>> packageEdges() {
        Map<String, Set<String>> out = new TreeMap<>();
        for (Map.Entry<String, Set<String>> e : imports.entrySet()) {
            String from = packageOf.get(e.getKey());
            Set<String> to = out.computeIfAbsent(from, k -> new TreeSet<>());
            for (String t : e.getValue()) {
                String p = packageOf.get(t);
                if (!p.equals(from)) {
                    to.add(p);
                }
            }
        }
        return out;
    }

    /** The classes of {@code from} that import a class of package {@code to}, for messages. */
    List<String> importers(String from, String to) {
        List<String> out = new ArrayList<>();
        for (Map.Entry<String, Set<String>> e : imports.entrySet()) {
            if (packageOf.get(e.getKey()).equals(from)
                    && e.getValue().stream().anyMatch(t -> packageOf.get(t).equals(to))) {
                out.add(e.getKey().substring(e.getKey().lastIndexOf('.') + 1));
            }
        }
        return out;
    }

    /** Pairs of classes that import each other: "A <-> B". */
    List<String> fileCircles() {
        List<String> out = new ArrayList<>();
        for (Map.Entry<String, Set<String>> e : imports.entrySet()) {
            for (String t : e.getValue()) {
                if (e.getKey().compareTo(t) < 0 && imports.getOrDefault(t, Set.of()).contains(e.getKey())) {
                    out.add(e.getKey() + " <-> " + t);
                }
            }
        }
        return out;
    }

    /**
     * The package cycles left when the edges in {@code allowed} ("from -> to") are removed: one
     * line per strongly connected group of two or more packages.
     */
    List<String> packageCycles(Set<String> allowed) {
        Map<String, Set<String>> edges = new TreeMap<>();
        packageEdges().forEach((from, tos) -> {
            Set<String> kept = new TreeSet<>();
            for (String to : tos) {
                if (!allowed.contains(from + " -> " + to)) {
                    kept.add(to);
                }
            }
            edges.put(from, kept);
        });
        List<String> out = new ArrayList<>();
        Set<String> done = new TreeSet<>();
        for (String p : edges.keySet()) {
            if (done.contains(p)) {
                continue;
            }
            Set<String> group = new TreeSet<>();
            for (String q : edges.keySet()) {
                if (reaches(edges, p, q) && reaches(edges, q, p)) {
                    group.add(q);
                }
            }
            done.addAll(group);
            if (group.size() > 1) {
                out.add(String.join(" ~ ", group));
            }
        }
        return out;
    }

    private static boolean reaches(Map<String, Set<String>> edges, String from, String to) {
        if (from.equals(to)) {
            return true;
        }
        Set<String> seen = new TreeSet<>();
        List<String> todo = new ArrayList<>(List.of(from));
        while (!todo.isEmpty()) {
            String p = todo.removeLast();
            for (String q : edges.getOrDefault(p, Set.of())) {
                if (q.equals(to)) {
                    return true;
                }
                if (seen.add(q)) {
                    todo.add(q);
                }
            }
        }
        return false;
    }
}
