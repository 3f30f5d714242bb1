package peer;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * When a consuming run ends, shared by {@code consume} and {@code lite-pull}.
 *
 * <ul>
 *   <li>{@code --count N} alone: once N deliveries succeeded.
 *   <li>{@code --idle-exit S}: once S seconds passed without a delivery, after at least one
 *       delivery (and, with --count, after N successes: the idle wait then shows duplicates).
 *   <li>{@code --duration-s S}: after S seconds (a failure if --count was given and not reached).
 *   <li>otherwise at {@code --timeout-s}, a failure.
 * </ul>
 */
final class Goal {
    final Integer count;
    final Long idleMs;
    final Long durationMs;
    final long timeoutMs;
    private final long start = System.currentTimeMillis();

    private final AtomicInteger consumed = new AtomicInteger();
    private final AtomicInteger deliveries = new AtomicInteger();
    private final AtomicLong lastDelivery = new AtomicLong();

    /** Why the run ended, and whether that is success. */
    static final class End {
        final String reason;
        final boolean ok;

        End(String reason, boolean ok) {
            this.reason = reason;
            this.ok = ok;
        }
    }

    Goal(Args a) {
        count = a.positive("count", null);
        Integer idle = a.positive("idle-exit", null);
        Integer duration = a.positive("duration-s", null);
        idleMs = idle == null ? null : idle * 1000L;
        durationMs = duration == null ? null : duration * 1000L;
        timeoutMs = a.timeoutMs();
        if (count == null && idleMs == null && durationMs == null) {
            throw new Args.UsageException("say when to stop: --count, --idle-exit or --duration-s");
        }
        if (durationMs != null && a.has("timeout-s") && timeoutMs < durationMs) {
            throw new Args.UsageException("--timeout-s is shorter than --duration-s");
        }
    }

    void delivered(boolean success) {
        deliveries.incrementAndGet();
        if (success) consumed.incrementAndGet();
        lastDelivery.set(System.currentTimeMillis());
    }

    int consumed() {
        return consumed.get();
    }

    int deliveries() {
        return deliveries.get();
    }

    /** How the run ends now, or null to keep going. */
    End check() {
        long now = System.currentTimeMillis();
        boolean countReached = count == null || consumed.get() >= count;
        if (count != null && idleMs == null && countReached) return new End("count", true);
        if (idleMs != null && deliveries.get() > 0 && countReached && now - lastDelivery.get() >= idleMs) {
            return new End("idle", true);
        }
        if (durationMs != null) {
            return now - start >= durationMs ? new End("duration", countReached) : null;
        }
        return now - start >= timeoutMs ? new End("timeout", false) : null;
    }

    /** Past this the watchdog halts the JVM: the run's end plus time for a clean shutdown. */
    long hardLimitMs() {
        return (durationMs != null ? durationMs : timeoutMs) + 30_000;
    }

    String describeMiss() {
        return "goal not reached: consumed " + consumed.get() + (count == null ? "" : " of " + count)
            + " (" + deliveries.get() + " deliveries)";
    }
}
