/**
 * What elastic communicators ({@code revoke}, {@code agree}, {@code shrink}) need below the runtime:
 * {@link dev.panamax.collectives.internal.elastic.AgreementState}, the agreement's decision rule as a
 * plain state machine, {@link dev.panamax.collectives.internal.elastic.Agreements}, a coordinator's
 * agreements and failed members (the rendezvous store's, or the shared object's of in-JVM ranks), and
 * {@link dev.panamax.collectives.internal.elastic.Membership}, how a communicator reaches it and
 * connects a new group.
 */
package dev.panamax.collectives.internal.elastic;
