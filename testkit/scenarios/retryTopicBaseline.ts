import { setMaxListeners } from 'node:events';
import { isRateLimited } from '../../src/dsl/rateLimited.js';
import { sleep, type Clock } from '../../src/ports/clock.js';
import type { FakeModel } from '../fakeModel.js';
import { VirtualClock } from '../virtualClock.js';
import { decisionProblems, type Dispute } from './disputes.js';
import type { VariantResult } from './variantResult.js';
import { workedExampleFixture, workedExampleLowerBoundMs, type WorkedExampleEvent, type WorkedExampleSettings } from './workedExampleSettings.js';
import type { TimelineMark } from './workedExampleTimeline.js';

type BaselineEvent = WorkedExampleEvent;

/**
 * The other usual mistake, for comparison: a hand-written worker (not orderly's engine) that, on a
 * 429, sends the event to a retry topic and moves on. As with the common non-blocking retry topics
 * (`<topic>-retry-0`, `-retry-1`, ...), each retry topic waits longer than the one before, 1 s
 * doubling up to 16 s, so an event refused twice falls behind a later event of its key refused
 * once. It runs the same fake model on the same virtual clock, with the same in-flight window.
 */
export async function runRetryTopicBaseline(
  model: FakeModel<Dispute, unknown>,
  settings: WorkedExampleSettings,
  events: readonly WorkedExampleEvent[],
  onOutcome: (mark: TimelineMark) => void = () => {},
): Promise<VariantResult> {
  const clock = new VirtualClock();
  const worker = new RetryTopicWorker(clock.view('baseline'), model, settings, events, onOutcome);
  worker.start();
  for (;;) {
    await new Promise<void>((resolve) => setImmediate(resolve));
    if (!clock.fireNext()) break;
  }
  const stats = model.stats();
  return {
    variant: settings.variant,
    events: events.length,
    held: 0,
    modelCalls: stats.accepted,
    rateLimitedResponses: stats.refused,
    wastedModelCalls: 0,
    endMs: worker.endMs,
    lowerBoundMs: workedExampleLowerBoundMs(settings),
    redelivered: 0,
    redeliveredAlreadyApplied: 0,
    doubleEffects: 0,
    orderViolations: worker.orderViolations,
    parked: worker.parked,
  };
}

class RetryTopicWorker {
  endMs = 0;
  orderViolations = 0;
  parked = 0;
  private readonly applied = new Set<string>();

  constructor(
    private readonly clock: Clock,
    private readonly model: FakeModel<Dispute, unknown>,
    private readonly settings: WorkedExampleSettings,
    private readonly events: readonly BaselineEvent[],
    private readonly onOutcome: (mark: TimelineMark) => void,
  ) {}

  start(): void {
    const events = this.events;
    for (let p = 0; p < this.settings.partitions; p++) {
      this.consumePartition(events.filter((e) => e.partition === p));
    }
  }

  /** Up to maxInFlight events at once, one per key, in order; a diverted event frees its place at once. */
  private consumePartition(events: BaselineEvent[]): void {
    const busyKeys = new Set<string>();
    let next = 0;
    const pump = () => {
      while (next < events.length && busyKeys.size < this.settings.maxInFlight && !busyKeys.has(events[next]!.key)) {
        const event = events[next++]!;
        busyKeys.add(event.key);
        void this.process(event).then(() => {
          busyKeys.delete(event.key);
          pump();
        });
      }
    };
    pump();
  }

  /** Resolves when the event is applied, parked or diverted to the retry topic. */
  private async process(event: BaselineEvent, retries = 0): Promise<void> {
    const f = { ...this.settings, topic: workedExampleFixture.topic };
    for (let attempt = 1; attempt <= f.attempts; attempt++) {
      let decision: unknown;
      try {
        decision = await this.model.decide(event.dispute, {
          key: event.key,
          effectId: `${f.topic}/${event.partition}/${event.offset}`,
          attempt,
          record: { topic: f.topic, partition: event.partition, offset: event.offset, timestampMs: 0, headers: {} },
          previousErrors: [],
          decisions: {},
          clock: this.clock,
          // The baseline has no status topic: its updates go nowhere.
          status: () => Promise.resolve(),
          reportTokens: () => undefined,
          signal: NEVER_ABORTED,
          // The baseline journals nothing: a step runs each time.
          step: (name, fn) => Promise.resolve(fn({ effectId: `${f.topic}/${event.partition}/${event.offset}`, step: name, signal: NEVER_ABORTED })),
        });
      } catch (error) {
        if (!isRateLimited(error)) throw error;
        // The next retry topic: its consumer calls again after that topic's delay.
        this.clock.setTimer(retryTopicDelayMs(retries), () => void this.process(event, retries + 1));
        return;
      }
      if (decisionProblems(decision).length === 0) return this.apply(event);
      if (attempt < f.attempts) {
        this.outcome(event, 'RETRY', attempt);
        await sleep(this.clock, f.retryDelayMs);
      }
    }
    this.outcome(event, 'PARKED', f.attempts);
    this.parked += 1;
    this.endMs = Math.max(this.endMs, this.clock.now());
  }

  /** Applies an event; it violates per-key order if an earlier event of its key is not applied yet. */
  private apply(event: BaselineEvent): void {
    const earlier = this.events.filter((e) => e.partition === event.partition && e.key === event.key && e.offset < event.offset);
    if (earlier.some((e) => !this.applied.has(e.dispute.disputeId))) this.orderViolations += 1;
    this.applied.add(event.dispute.disputeId);
    this.outcome(event, 'APPLIED');
    this.endMs = Math.max(this.endMs, this.clock.now());
  }

  /** Tells the timeline what happened to an event, in the engine's words. */
  private outcome(event: BaselineEvent, outcome: 'RETRY' | 'PARKED' | 'APPLIED', attempt?: number): void {
    const { partition, offset, key } = event;
    this.onOutcome({ kind: 'outcome', partition, offset, key, atMs: this.clock.now(), outcome, ...(attempt !== undefined ? { attempt } : {}) });
  }
}

/** The delay of the `retries`-th retry topic: 1 s, doubling, at most 16 s. */
function retryTopicDelayMs(retries: number): number {
  return Math.min(1_000 * 2 ** retries, 16_000);
}

// The baseline never gives a call up. Every call in flight listens to this one signal (the fake
// model honours it), so it may have many listeners at once: not a leak.
const NEVER_ABORTED = new AbortController().signal;
setMaxListeners(0, NEVER_ABORTED);
