package dev.panamax.memory.concurrent;

/**
 * What a polling loop does when a poll found nothing. {@link #idle(int)} is called after each poll with the
 * amount of work it found; {@link #reset()} when work arrived. Instances keep state: one per polling thread.
 * {@link IdleStrategies} makes the implementations.
 */
public interface IdleStrategy {
    /** Called after a poll that found {@code workCount} items; idles when it is 0, resets otherwise. */
    void idle(int workCount);

    /** Idles once: a poll found no work ({@code idle(0)}). */
    default void idle() {
        idle(0);
    }

    /** Forget past idling: the next idle starts again from the cheapest step. */
    void reset();
}
