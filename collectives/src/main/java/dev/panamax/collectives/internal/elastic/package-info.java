/**
 * What elastic communicators ({@code revoke}, {@code agree}, {@code shrink}) need below the runtime:
 * {@link dev.panamax.collectives.internal.elastic.AgreementState}, the agreement's decision rule as a
 * plain state machine (run by the rendezvous store, or by a shared object for in-JVM ranks), and
 * {@link dev.panamax.collectives.internal.elastic.Membership}, how a communicator reaches it and
 * connects a new group.
 */
package dev.panamax.collectives.internal.elastic;
