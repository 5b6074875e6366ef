import { Counter, Gauge, Histogram, Registry, type Metric } from 'prom-client';
import type { CircuitState } from '../engine/circuitBreaker.js';
import type { EngineStatus } from '../engine/engineStatus.js';
import { Outcome, type EngineObserver } from '../engine/outcomes.js';

/** Options of {@link PrometheusExporter}. */
export interface PrometheusExporterOptions {
  /** The registry to add orderly's metrics to; several exporters may share one if their `labels` differ. @defaultValue a new registry */
  readonly registry?: Registry;
  /** Labels put on every series of this exporter, e.g. `{ worker: 'a' }`. */
  readonly labels?: Readonly<Record<string, string>>;
}

/** Buckets of the model call histogram, in seconds: provider calls take from tens of milliseconds to minutes. */
export const MODEL_CALL_BUCKETS_SECONDS: readonly number[] = [0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120];

type Labels = Record<string, string | number>;

const circuitStates: readonly CircuitState[] = ['closed', 'open', 'half-open'];

/**
 * Turns what an engine reports into Prometheus metrics (docs/metrics.md lists them): counters and
 * the model call histogram from its observer, gauges (parked keys, lag, in-flight events, the
 * budget) from its status, read at each scrape. The same on the test driver and on Kafka.
 *
 * @example
 * const exporter = new PrometheusExporter();
 * const worker = await runTopology({ ...options, observer: exporter.observer() });
 * exporter.watch(() => worker.engine.status());
 * const server = await serveMetrics(exporter, { port: 9464 });
 */
export class PrometheusExporter {
  /** The prom-client registry holding the metrics; serve it yourself with `registry.metrics()` if you like. */
  readonly registry: Registry;
  private readonly labels: Labels;
  private readonly events: Counter;
  private readonly received: Counter;
  private readonly redeliveries: Counter;
  private readonly modelCalls: Counter;
  private readonly rateLimited: Counter;
  private readonly modelCallSeconds: Histogram;
  private readonly commits: Counter;
  private readonly inFlight: Gauge;
  private readonly parkedKeys: Gauge;
  private readonly heldEvents: Gauge;
  private readonly lag: Gauge;
  private readonly committedOffset: Gauge;
  private readonly highWatermark: Gauge;
  private readonly budgetCalls: Gauge;
  private readonly budgetWindow: Gauge;
  private readonly decisions: Counter;
  private readonly shadowDisagreements: Counter;
  private readonly circuitState: Gauge;
  private readonly durableSteps: Counter;
  /** The highest offset received of each partition: a record at or below it is a redelivery. */
  private readonly highestReceived = new Map<string, number>();
  /** The series of each gauge this exporter set at its last update, to remove those gone since. */
  private gaugeSeries = new Map<Gauge, Labels[]>();
  private source: (() => EngineStatus | undefined) | undefined;

  constructor(options: PrometheusExporterOptions = {}) {
    this.registry = options.registry ?? new Registry();
    this.labels = { ...options.labels };
    const own = Object.keys(this.labels);
    const counter = (name: string, help: string, labelNames: string[] = []) =>
      this.metric(name, () => new Counter({ name, help, labelNames: [...own, ...labelNames], registers: [this.registry] }));
    const gauge = (name: string, help: string, labelNames: string[] = []) =>
      this.metric(name, () => new Gauge({ name, help, labelNames: [...own, ...labelNames], registers: [this.registry] }));
    this.events = counter(
      'orderly_events_total',
      'Outcomes reported for events, by outcome (RETRY and RATE_LIMITED are steps on the way, the others finish an event).',
      ['outcome'],
    );
    this.received = counter('orderly_records_received_total', 'Records received from the log, redeliveries included.', ['topic', 'partition']);
    this.redeliveries = counter(
      'orderly_redeliveries_total',
      'Records received again at an offset this exporter had already seen received (after a crash and restart, or a rebalance).',
      ['topic', 'partition'],
    );
    this.modelCalls = counter('orderly_model_calls_total', 'Calls of the agent step started (each answered, refused with a 429, failed or aborted).', ['step']);
    this.rateLimited = counter('orderly_rate_limited_total', 'Calls of the agent step refused with a 429 (RateLimited): backpressure, not attempts.', ['step']);
    this.modelCallSeconds = this.metric(
      'orderly_model_call_duration_seconds',
      () =>
        new Histogram({
          name: 'orderly_model_call_duration_seconds',
          help: 'How long calls of the agent step took, by how they ended: answered, rate_limited, failed, aborted.',
          labelNames: [...own, 'step', 'result'],
          buckets: [...MODEL_CALL_BUCKETS_SECONDS],
          registers: [this.registry],
        }),
    );
    this.commits = counter('orderly_commits_total', 'Offsets committed, one per partition per commit.', ['topic', 'partition']);
    this.inFlight = gauge('orderly_in_flight_events', 'Events running now across all partitions (not yet landed).');
    this.parkedKeys = gauge('orderly_parked_keys', 'Keys parked now, waiting for a person or being replayed.', ['topic', 'partition']);
    this.heldEvents = gauge('orderly_held_events', 'Events held now behind the parked events of their keys.', ['topic', 'partition']);
    this.lag = gauge('orderly_consumer_lag', "Records of the partition not yet committed: its high watermark less this worker's committed offset.", [
      'topic',
      'partition',
    ]);
    this.committedOffset = gauge('orderly_committed_offset', 'The offset this worker last committed (the next one to read).', ['topic', 'partition']);
    this.highWatermark = gauge('orderly_high_watermark', "The partition's high watermark as the consumer last heard it.", ['topic', 'partition']);
    this.budgetCalls = gauge(
      'orderly_rate_budget_calls',
      'Calls of the agent step allowed per window: its declared limit, or the budget learned from 429s (label source).',
      ['step', 'source'],
    );
    this.budgetWindow = gauge('orderly_rate_budget_window_seconds', 'The window of that budget, in seconds; absent while a learned window is not known yet.', [
      'step',
      'source',
    ]);
    this.decisions = counter(
      'orderly_decisions_total',
      'Decisions of the agent steps taken by the events that went through them, by step and by who made them: agent, rule (a route, or the handler a shadow applies), fallback, person.',
      ['step', 'by'],
    );
    this.shadowDisagreements = counter(
      'orderly_shadow_disagreements_total',
      "Events whose shadowed agent step decided otherwise than the handler whose decision was applied (a crash's re-run counts again).",
      ['step'],
    );
    this.circuitState = gauge(
      'orderly_circuit_state',
      "A fallback's circuit for its agent step: 1 for the state it is in (closed, open, half-open), 0 for the others.",
      ['step', 'state'],
    );
    this.durableSteps = counter(
      'orderly_durable_steps_total',
      "Durable steps (ctx.step) of the agent steps' calls, by agent step, durable step name and result: ran (the function ran and its result was journaled) or replayed (its result came from the run journal).",
      ['step', 'name', 'result'],
    );
    // Every outcome shows, at 0 until it happens, so that rate() and absent() work from the first scrape.
    for (const outcome of Object.values(Outcome)) this.events.inc({ ...this.labels, outcome }, 0);
  }

  /** The observer to give the engine (RunTopologyOptions.observer, the driver's `observer` option). */
  observer(): EngineObserver {
    const labels = this.labels;
    return {
      outcome: (event) => {
        this.events.inc({ ...labels, outcome: event.outcome });
        for (const [step, by] of Object.entries(event.decidedBy ?? {})) this.decisions.inc({ ...labels, step, by });
      },
      durableStep: (ended) => this.durableSteps.inc({ ...labels, step: ended.step, name: ended.name, result: ended.result }),
      shadowDisagreed: (disagreement) => this.shadowDisagreements.inc({ ...labels, step: disagreement.step }),
      circuit: (change) => {
        for (const state of circuitStates) this.circuitState.set({ ...labels, step: change.step, state }, state === change.state ? 1 : 0);
      },
      received: (record) => {
        const series = { ...labels, topic: record.topic, partition: record.partition };
        this.received.inc(series);
        const id = `${record.topic}/${record.partition}`;
        const highest = this.highestReceived.get(id);
        if (highest !== undefined && record.offset <= highest) this.redeliveries.inc(series);
        else this.highestReceived.set(id, record.offset);
      },
      modelCall: (call) => this.modelCalls.inc({ ...labels, step: call.step }),
      modelCallEnded: (call) => {
        if (call.result === 'rate_limited') this.rateLimited.inc({ ...labels, step: call.step });
        this.modelCallSeconds.observe({ ...labels, step: call.step, result: call.result }, call.durationMs / 1000);
      },
      committed: (commit) => this.commits.inc({ ...labels, topic: commit.topic, partition: commit.partition }),
    };
  }

  /** Reads the gauges from `source` at every scrape ({@link PrometheusExporter.metrics}); undefined: no engine yet. */
  watch(source: () => EngineStatus | undefined): void {
    this.source = source;
  }

  /** Sets the gauges from one status of the engine (series of partitions no longer in it are removed). */
  update(status: EngineStatus): void {
    const next = new Map<Gauge, Labels[]>();
    const set = (gauge: Gauge, labels: Labels, value: number) => {
      gauge.set(labels, value);
      next.set(gauge, [...(next.get(gauge) ?? []), labels]);
    };
    set(this.inFlight, { ...this.labels }, status.inFlight);
    for (const b of status.budgets) {
      const labels = { ...this.labels, step: b.step, source: b.source };
      set(this.budgetCalls, labels, b.calls);
      if (b.windowMs !== undefined) set(this.budgetWindow, labels, b.windowMs / 1000);
    }
    for (const p of status.partitions) {
      const labels = { ...this.labels, topic: p.topic, partition: p.partition };
      set(this.parkedKeys, labels, p.parkedKeys);
      set(this.heldEvents, labels, p.heldEvents);
      if (p.committedOffset !== undefined) set(this.committedOffset, labels, p.committedOffset);
      if (p.highWatermark !== undefined) set(this.highWatermark, labels, p.highWatermark);
      if (p.committedOffset !== undefined && p.highWatermark !== undefined) set(this.lag, labels, Math.max(0, p.highWatermark - p.committedOffset));
    }
    for (const [gauge, series] of this.gaugeSeries) {
      const kept = new Set((next.get(gauge) ?? []).map((l) => JSON.stringify(l)));
      for (const labels of series) if (!kept.has(JSON.stringify(labels))) gauge.remove(labels);
    }
    this.gaugeSeries = next;
  }

  /** The exposition text of the registry, the gauges read from the watched engine first. */
  async metrics(): Promise<string> {
    const status = this.source?.();
    if (status) this.update(status);
    return this.registry.metrics();
  }

  /** The content type of {@link PrometheusExporter.metrics}'s text. */
  get contentType(): string {
    return this.registry.contentType;
  }

  /** A metric already in the registry (another exporter's), or a new one. */
  private metric<T extends Metric>(name: string, create: () => T): T {
    return (this.registry.getSingleMetric(name) as T | undefined) ?? create();
  }
}
