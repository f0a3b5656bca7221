package dev.panamax.bindings;

import dev.panamax.bindings.verbs.support.VerbsGid;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.PaddingLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Compiles a small C program with gcc against the headers the bindings were generated from, prints
 * {@code sizeof} and {@code offsetof} of every generated struct and field, and compares them with the
 * generated layouts. Skips (with the reason) only when gcc or a header is missing.
 */
class LayoutCheckTest {

    /** Generated struct/union class (simple name) -> the C type it describes, per package. */
    private static final Map<String, String> VERBS = new LinkedHashMap<>();
    private static final Map<String, String> CUDA = new LinkedHashMap<>();
    private static final Map<String, String> NCCL = new LinkedHashMap<>();

    static {
        for (String s : List.of("ibv_device", "_ibv_device_ops", "ibv_context", "ibv_context_ops", "verbs_context",
                "ibv_device_attr", "ibv_port_attr", "ibv_pd", "ibv_mr", "ibv_cq", "ibv_comp_channel", "ibv_qp",
                "ibv_qp_init_attr", "ibv_qp_cap", "ibv_qp_attr", "ibv_ah_attr", "ibv_global_route", "ibv_send_wr",
                "ibv_mw_bind_info", "ibv_recv_wr", "ibv_sge", "ibv_wc", "__pthread_mutex_s", "__pthread_cond_s",
                "__pthread_internal_list")) {
            VERBS.put(s, "struct " + s);
        }
        VERBS.put("ibv_gid", "union ibv_gid");
        VERBS.put("pthread_mutex_t", "pthread_mutex_t");
        VERBS.put("pthread_cond_t", "pthread_cond_t");
        VERBS.put("__pthread_list_t", "__pthread_list_t");
        VERBS.put("__atomic_wide_counter", "__atomic_wide_counter");

        CUDA.put("CUipcMemHandle_st", "struct CUipcMemHandle_st");
        CUDA.put("CUipcMemHandle", "CUipcMemHandle");
        CUDA.put("CUipcMemHandle_v1", "CUipcMemHandle_v1");

        NCCL.put("ncclConfig_v21700", "struct ncclConfig_v21700");
        NCCL.put("ncclConfig_t", "ncclConfig_t");
        NCCL.put("ncclUniqueId", "ncclUniqueId");
    }

    private static final Path MODULE = Path.of("").toAbsolutePath();
    private static final Path GENERATED = MODULE.resolve("src/main/java/dev/panamax/bindings");

    @Test
    void verbsLayoutsMatchGcc() throws Exception {
        Path include = Path.of(System.getenv().getOrDefault("VERBS_INCLUDE", "/usr/include"));
        assumeTrue(Files.isRegularFile(include.resolve("infiniband/verbs.h")),
                "infiniband/verbs.h not found under " + include + " (install libibverbs-dev)");
        check("verbs", VERBS, "#include <infiniband/verbs.h>", List.of("-I" + include));
    }

    /** The layouts written by hand in dev.panamax.bindings.verbs.support. */
    @Test
    void verbsSupportLayoutsMatchGcc() throws Exception {
        Path include = Path.of(System.getenv().getOrDefault("VERBS_INCLUDE", "/usr/include"));
        assumeTrue(Files.isRegularFile(include.resolve("infiniband/verbs.h")),
                "infiniband/verbs.h not found under " + include + " (install libibverbs-dev)");
        compare("verbs.support", Map.of("ibv_gid_entry", "struct ibv_gid_entry"),
                Map.of("ibv_gid_entry", VerbsGid.layout()), "#include <infiniband/verbs.h>", List.of("-I" + include));
    }

    @Test
    void cudaLayoutsMatchGcc() throws Exception {
        Path include = cudaInclude();
        assumeTrue(include != null,
                "cuda.h not found (set CUDA_INCLUDE or CUDA_HOME; looked in /usr/local/cuda/include)");
        check("cuda", CUDA, "#include <cuda.h>", List.of("-I" + include));
    }

    @Test
    void ncclLayoutsMatchGcc() throws Exception {
        Path include = MODULE.resolve("src/main/native/nccl");
        assumeTrue(Files.isRegularFile(include.resolve("nccl.h")), "nccl.h not found in " + include);
        check("nccl", NCCL, "#include <nccl.h>", List.of("-I" + include));
    }

    static Path cudaInclude() {
        List<String> candidates = new ArrayList<>();
        if (System.getenv("CUDA_INCLUDE") != null) candidates.add(System.getenv("CUDA_INCLUDE"));
        if (System.getenv("CUDA_HOME") != null) candidates.add(System.getenv("CUDA_HOME") + "/include");
        candidates.add("/usr/local/cuda/include");
        for (String c : candidates) {
            if (Files.isRegularFile(Path.of(c, "cuda.h"))) return Path.of(c);
        }
        return null;
    }

    private record Entry(String key, String cType, String member, long offset, long size) {
    }

    private void check(String pkg, Map<String, String> types, String include, List<String> flags) throws Exception {
        // Every generated struct class of the package must be checked.
        Set<String> generated;
        try (Stream<Path> files = Files.list(GENERATED.resolve(pkg))) {
            generated = files.map(p -> p.getFileName().toString())
                    .filter(n -> n.endsWith(".java") && !n.startsWith(pkg + "_h") && !n.equals("package-info.java"))
                    .map(n -> n.substring(0, n.length() - ".java".length()))
                    .collect(Collectors.toCollection(TreeSet::new));
        }
        assertEquals(new TreeSet<>(types.keySet()), generated,
                "generated struct classes of dev.panamax.bindings." + pkg + " and the classes checked here differ");

        Map<String, GroupLayout> layouts = new LinkedHashMap<>();
        for (String key : types.keySet()) {
            Class<?> c = Class.forName("dev.panamax.bindings." + pkg + "." + key);
            layouts.put(key, (GroupLayout) c.getMethod("layout").invoke(null));
        }
        compare(pkg, types, layouts, include, flags);
    }

    /** Compares the given layouts (key -> layout, key -> C type) with what gcc says. */
    private void compare(String label, Map<String, String> types, Map<String, GroupLayout> layouts, String include,
            List<String> flags) throws Exception {
        String gcc = findGcc();
        assumeTrue(gcc != null, "gcc not found on PATH");
        List<Entry> entries = new ArrayList<>();
        for (var e : types.entrySet()) {
            GroupLayout layout = layouts.get(e.getKey());
            entries.add(new Entry(e.getKey(), e.getValue(), null, 0, layout.byteSize()));
            walk(e.getKey(), e.getValue(), layout, "", 0, entries);
        }

        StringBuilder src = new StringBuilder();
        src.append("#include <stdio.h>\n#include <stddef.h>\n").append(include).append("\n\nint main(void) {\n");
        for (Entry en : entries) {
            if (en.member == null) {
                src.append("    printf(\"%s %zu %zu\\n\", \"").append(en.key).append("\", (size_t)0, sizeof(")
                        .append(en.cType).append("));\n");
            } else {
                src.append("    printf(\"%s %zu %zu\\n\", \"").append(en.key).append("\", offsetof(")
                        .append(en.cType).append(", ").append(en.member).append("), sizeof(((")
                        .append(en.cType).append(" *)0)->").append(en.member).append("));\n");
            }
        }
        src.append("    return 0;\n}\n");

        Path dir = Files.createTempDirectory("panamax-layout-" + label);
        try {
            Path c = dir.resolve("layout.c");
            Files.writeString(c, src);
            List<String> cmd = new ArrayList<>(List.of(gcc, "-std=gnu11", "-w"));
            cmd.addAll(flags);
            cmd.addAll(List.of("-o", dir.resolve("layout").toString(), c.toString()));
            Result compile = run(cmd);
            assertEquals(0, compile.rc, "gcc failed:\n" + compile.out + "\nprogram:\n" + src);
            Result out = run(List.of(dir.resolve("layout").toString()));
            assertEquals(0, out.rc, out.out);

            Map<String, String> actual = new LinkedHashMap<>();
            for (String line : out.out.split("\n")) {
                if (line.isBlank()) continue;
                int sp = line.indexOf(' ');
                actual.put(line.substring(0, sp), line.substring(sp + 1));
            }
            List<String> mismatches = new ArrayList<>();
            for (Entry en : entries) {
                String expected = en.offset + " " + en.size;
                String gccSays = actual.get(en.key);
                if (!expected.equals(gccSays)) {
                    mismatches.add(en.key + ": generated offset/size " + expected + ", gcc " + gccSays);
                }
            }
            assertTrue(mismatches.isEmpty(), "layout mismatches:\n" + String.join("\n", mismatches));
            System.out.printf("layout check %s: %d structs, %d entries match gcc%n", label, types.size(),
                    entries.size());
        } finally {
            try (Stream<Path> s = Files.walk(dir)) {
                s.sorted((a, b) -> b.compareTo(a)).forEach(p -> p.toFile().delete());
            }
        }
    }

    /** Records every named member; anonymous struct/union members ($anon$...) are flattened, as in C. */
    private static void walk(String key, String cType, GroupLayout group, String cPath, long base, List<Entry> out) {
        for (MemoryLayout m : group.memberLayouts()) {
            if (m instanceof PaddingLayout) continue;
            String name = m.name().orElseThrow(() -> new AssertionError("unnamed member in " + key + ": " + m));
            long offset = base + group.byteOffset(MemoryLayout.PathElement.groupElement(name));
            if (name.startsWith("$anon$")) {
                walk(key, cType, (GroupLayout) m, cPath, offset, out);
                continue;
            }
            String path = cPath.isEmpty() ? name : cPath + "." + name;
            out.add(new Entry(key + "." + path, cType, path, offset, m.byteSize()));
            if (m instanceof GroupLayout g) {
                walk(key, cType, g, path, offset, out);
            }
        }
    }

    private static String findGcc() {
        for (String dir : System.getenv().getOrDefault("PATH", "").split(":")) {
            Path p = Path.of(dir.isEmpty() ? "." : dir, "gcc");
            if (Files.isExecutable(p)) return p.toString();
        }
        return null;
    }

    private record Result(int rc, String out) {
    }

    private static Result run(List<String> cmd) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("timed out: " + cmd);
        }
        return new Result(p.exitValue(), out);
    }
}
