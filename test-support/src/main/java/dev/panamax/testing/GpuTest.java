package dev.panamax.testing;

import org.junit.jupiter.api.Tag;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Marks a test class or method that needs a GPU: JUnit's {@code @Tag("gpu")}, the tag by which the GPU runs
 * (scripts/gpu/gpu-check, scripts/gpu/cuda-emulation-tests, {@code -Dgroups=gpu}) select them. A tag only, not
 * {@code @Test}: most of these tests are whole classes, and their methods keep saying what kind of test each
 * is ({@code @Test}, {@code @ParameterizedTest}). Without the hardware the test skips or fails by the rule of
 * {@link GpuTestSupport}.
 */
@Target({ElementType.TYPE, ElementType.METHOD})
@Retention(RetentionPolicy.RUNTIME)
@Documented
@Inherited
@Tag("gpu")
public @interface GpuTest {
}
