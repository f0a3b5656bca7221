package dev.panamax.bench.perf;

import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.VectorGraphicsEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.markers.SeriesMarkers;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * {@code --plot FILE}: bus bandwidth (or time) against size, one line per series (an algorithm),
 * drawn with XChart without a display. The x axis is log2 of the size, labelled 1K, 1M, ...; for
 * time the y axis is logarithmic too. A {@code .svg} file is vector graphics, anything else PNG.
 */
public final class Plot {
    /** What the y axis shows. */
    public enum Metric {
        BUSBW, TIME;

        /** {@code busbw} or {@code time}. */
        public static Metric parse(String s) {
            return switch (s.trim().toLowerCase(Locale.ROOT)) {
                case "busbw" -> BUSBW;
                case "time" -> TIME;
                default -> throw new IllegalArgumentException("--plot-metric takes busbw or time, not '" + s + "'");
            };
        }
    }

    private Plot() {
    }

    /** Checks that {@code file} names a PNG or SVG file. */
    public static void checkFile(Path file) {
        String n = file.getFileName() == null ? "" : file.getFileName().toString().toLowerCase(Locale.ROOT);
        if (!n.endsWith(".png") && !n.endsWith(".svg")) {
            throw new IllegalArgumentException("--plot writes .png or .svg files, not '" + file + "'");
        }
    }

    /** Writes the chart of {@code series} (name to rows, in legend order) to {@code file}. */
    public static void write(Path file, Map<String, List<Row>> series, Metric metric, String title) throws IOException {
        checkFile(file);
        System.setProperty("java.awt.headless", "true");
        XYChart chart = new XYChartBuilder().width(960).height(600).title(title)
                .xAxisTitle("size (bytes)").yAxisTitle(metric == Metric.TIME ? "time (us)" : "busbw (GB/s)").build();
        chart.getStyler().setLegendPosition(Styler.LegendPosition.InsideNW);
        chart.getStyler().setMarkerSize(6);
        chart.getStyler().setYAxisLogarithmic(metric == Metric.TIME);
        chart.getStyler().setxAxisTickLabelsFormattingFunction(Plot::sizeLabel);
        chart.getStyler().setXAxisTickMarkSpacingHint(60);
        chart.getStyler().setPlotGridLinesVisible(true);
        int drawn = 0;
        for (Map.Entry<String, List<Row>> e : series.entrySet()) {
            List<Double> xs = new ArrayList<>();
            List<Double> ys = new ArrayList<>();
            for (Row r : e.getValue()) {
                double y = metric == Metric.TIME ? r.timeUs() : r.busBw();
                if (r.size() <= 0 || (metric == Metric.TIME && !(y > 0)) || !Double.isFinite(y)) {
                    continue; // no place on a log axis
                }
                xs.add(Math.log(r.size()) / Math.log(2));
                ys.add(y);
            }
            if (xs.isEmpty()) {
                continue;
            }
            XYSeries s = chart.addSeries(e.getKey(), xs, ys);
            s.setMarker(SeriesMarkers.CIRCLE);
            drawn++;
        }
        if (drawn == 0) {
            throw new IOException("nothing to plot (every size is 0 bytes)");
        }
        boolean svg = file.getFileName().toString().toLowerCase(Locale.ROOT).endsWith(".svg");
        try (OutputStream os = Files.newOutputStream(file)) {
            if (svg) {
                VectorGraphicsEncoder.saveVectorGraphic(chart, os, VectorGraphicsEncoder.VectorGraphicsFormat.SVG);
            } else {
                BitmapEncoder.saveBitmap(chart, os, BitmapEncoder.BitmapFormat.PNG);
            }
        }
    }

    /** Tick label of x = log2(size): the size (1K, 64M) at whole powers of two, nothing between them. */
    static String sizeLabel(Double x) {
        if (x == null || !Double.isFinite(x)) {
            return "";
        }
        long e = Math.round(x);
        if (Math.abs(x - e) > 1e-6 || e < 0 || e > 62) {
            return "";
        }
        return Sizes.format(1L << e);
    }
}
