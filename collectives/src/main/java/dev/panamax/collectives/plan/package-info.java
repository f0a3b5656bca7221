/**
 * The planner behind {@code auto}: {@link dev.panamax.collectives.plan.Planner} weighs every
 * registered algorithm on every factorization of the topology by the live
 * {@link dev.panamax.collectives.plan.CostModel} (each algorithm's prediction plus a compute term)
 * and returns the fastest; {@link dev.panamax.collectives.plan.Planner#scheduleFor} shows the
 * schedule a communicator would run. {@link dev.panamax.collectives.plan.PaperFormulas} keeps the
 * papers' formulas as published, to check the model against; {@link dev.panamax.collectives.plan.LinearFit}
 * fits the a + b m and contention models to measurements.
 */
package dev.panamax.collectives.plan;
