package dev.panamax.testing;

import org.junit.jupiter.api.Tag;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Marks a test class or method that needs an RDMA device: JUnit's {@code @Tag("rdma")}, the tag by which the
 * RDMA runs (scripts/rdma/rdma-tests, {@code -Dgroups=rdma}) select them. A tag only, not {@code @Test}, as
 * {@link GpuTest}. Without the hardware the test skips by the rule of {@link RdmaTestSupport}.
 */
@Target({ElementType.TYPE, ElementType.METHOD})
@Retention(RetentionPolicy.RUNTIME)
@Documented
@Inherited
@Tag("rdma")
public @interface RdmaTest {
}
