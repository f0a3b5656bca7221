/**
 * Schedules as data: the immutable plan one rank follows for one collective
 * ({@link dev.panamax.collectives.schedule.Schedule}: stages of sends, receives, reductions and
 * copies on slices of its buffers), the problem it is built for
 * ({@link dev.panamax.collectives.schedule.Problem}), the builder algorithms use, and the
 * {@link dev.panamax.collectives.schedule.Simulator} that proves a set of schedules computes its
 * collective. Depends on nothing but the root API package.
 */
package dev.panamax.collectives.schedule;
