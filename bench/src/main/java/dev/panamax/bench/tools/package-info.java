/**
 * Rank programs of the reliability scripts ({@code scripts/reliability/trials}, {@code scripts/reliability/soak}):
 * {@link dev.panamax.bench.tools.AllReduceLoop} runs collectives until one fails or a soak ends, and reports
 * what it saw in lines the scripts parse.
 */
package dev.panamax.bench.tools;
