package orderly.bench.peers;

import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Lines the benchmark reads on a contender's stdout: {@code first} once, when the first event is
 * processed (the measured span starts there, after start-up and the group join).
 */
public final class Signals {
  private static final AtomicBoolean FIRST = new AtomicBoolean();

  private Signals() {}

  public static void first() {
    if (FIRST.compareAndSet(false, true)) {
      System.out.println("first");
      System.out.flush();
    }
  }

  /** Waits {@code ms} of wall-clock time without spending CPU: the slow variant's stand-in for a call. */
  public static void waitMs(int ms) {
    if (ms <= 0) return;
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("peers contender: interrupted while waiting", e);
    }
  }
}
