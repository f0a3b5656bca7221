/** The in-JVM transport (threads as ranks): mailboxes per pair of ranks, messages by reference. */
package dev.panamax.collectives.internal.transport.local;
