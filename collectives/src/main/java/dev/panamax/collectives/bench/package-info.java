/** The GPU all-reduce benchmark (moving to the benchmark module). */
package dev.panamax.collectives.bench;
