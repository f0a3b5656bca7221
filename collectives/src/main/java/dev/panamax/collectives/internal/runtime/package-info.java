/**
 * The communicator implementation: {@link dev.panamax.collectives.internal.runtime.CommunicatorImpl}
 * checks a call ({@code ArgumentChecks}), finds its schedule ({@code PlanCache}) and runs it
 * ({@code ScheduleExecutor}, waiting in the {@code ProgressLoop} with the timeout and the
 * failure checks), under the lock its split family shares ({@code CommunicatorFamily}).
 */
package dev.panamax.collectives.internal.runtime;
