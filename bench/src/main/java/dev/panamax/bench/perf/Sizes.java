package dev.panamax.bench.perf;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Byte sizes as nccl-tests writes them ({@code 8}, {@code 64K}, {@code 1M}, {@code 2G}; K = 1024) and the size sweep.
 * */
public final class Sizes {
    private static final Pattern SIZE = Pattern.compile("(\\d+)\\s*([kmgt]?)(i?b)?");

    private Sizes() {
    }

    /** Parses {@code 8}, {@code 64K}, {@code 64KB}, {@code 64KiB}, {@code 1M}, {@code 1G}, {@code 1T} (powers of 1024).
     * */
    public static long parse(String text) {
        String s = text.trim().toLowerCase(Locale.ROOT);
        Matcher m = SIZE.matcher(s);
        if (!m.matches()) {
            throw new IllegalArgumentException("not a byte size: '" + text + "' (examples: 8, 64K, 1M, 2G)");
        }
        int shift = switch (m.group(2)) {
            case "k" -> 10;
            case "m" -> 20;
            case "g" -> 30;
            case "t" -> 40;
            default -> 0;
        };
        try {
            long v = Long.parseLong(m.group(1));
            if (v > (Long.MAX_VALUE >> shift)) {
                throw new NumberFormatException();
            }
            return v << shift;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("byte size too large: '" + text + "'");
        }
    }

    /** The shortest exact form: 8, 64K, 1M, 3000. */
    public static String format(long bytes) {
        String[] units = {"", "K", "M", "G", "T"};
        int u = 0;
        long v = bytes;
        while (v != 0 && v % 1024 == 0 && u < units.length - 1) {
            v /= 1024;
            u++;
        }
        return v + units[u];
    }

    /**
     * The sizes from {@code min} to {@code max} inclusive: multiplied by {@code factor} each step
     * when {@code factor > 1}, else increased by {@code increment} (the nccl-tests loop).
     */
    public static List<Long> sweep(long min, long max, double factor, long increment) {
        if (min < 0 || max < min) {
            throw new IllegalArgumentException("need 0 <= minbytes <= maxbytes, got " + min + " and " + max);
        }
        if (factor <= 1 && increment <= 0) {
            throw new IllegalArgumentException("need a step factor > 1 or a step increment > 0");
        }
        List<Long> out = new ArrayList<>();
        long size = min;
        while (size <= max) {
            out.add(size);
            long next;
            if (factor > 1) {
                double d = Math.ceil(size * factor);
                next = size == 0 ? 1 : (d >= Long.MAX_VALUE ? Long.MAX_VALUE : (long) d);
                if (next <= size) {
                    next = size + 1;
                }
            } else {
                next = size + increment;
            }
            if (next < size) {
                break; // overflow
            }
            size = next;
            if (out.size() > 100_000) {
                throw new IllegalArgumentException("the size sweep has more than 100000 sizes; use a larger step");
            }
        }
        return out;
    }
}
