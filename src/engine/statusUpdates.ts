import type { AgentStepNode } from '../graph/nodes.js';
import type { Topology } from '../graph/topology.js';
import type { Clock } from '../ports/clock.js';
import type { Log, OutRecord } from '../ports/log.js';
import type { Random } from '../ports/random.js';
import type { EventEnd } from './eventEnd.js';
import type { EngineEvent } from './events.js';
import { JOB_SCHEMA_VERSION, jobIdOf, jobRecord, type JobEnd } from './jobRecords.js';

/** The last call of one agent step of an event, as its response names it. */
interface CallTrail {
  readonly step: string;
  readonly call: string;
  count: number;
}

/**
 * One agent step's last call of an event and how many updates it published, as a parked event
 * keeps it: a redelivery of the event sends the response the parking made, naming the same call.
 */
export interface LastCall {
  readonly step: string;
  readonly call: string;
  readonly statusCount: number;
}

/** How an event ended, as its response says. */
export type Ending = { readonly state: 'done'; readonly result: unknown } | { readonly state: Exclude<JobEnd, 'done'>; readonly reason: string };

/** What it needs of the engine's context (named here, not imported: the context holds this class). */
interface Ports {
  readonly topology: Topology;
  readonly clock: Clock;
  readonly random: Random;
  readonly log: Log;
  readonly end: EventEnd;
}

/**
 * The status updates and responses of a topology with `.respond()`: `ctx.status` of each call of
 * each agent step, and the response that ends an event, naming the last call and how many updates
 * it published (and, with several steps, each step's last call and its count).
 */
export class StatusUpdates {
  /** Each step's last call of each event in flight on this worker, by effect id, the latest last; taken by its response. */
  private readonly calls = new Map<string, CallTrail[]>();
  /** The `status` of a topology without `.respond()`, per step: it only refuses. */
  private readonly refusals = new Map<string, (update: unknown) => Promise<void>>();

  constructor(private readonly ports: Ports) {}

  /** The `status` function of one call of decide. */
  publisher(step: AgentStepNode, event: EngineEvent, attempt: number, signal: AbortSignal): (update: unknown) => Promise<void> {
    const respond = this.ports.topology.respond;
    if (!respond) return this.refusal(step);
    const trail: CallTrail = { step: step.name, call: this.callId(attempt), count: 0 };
    // This call is now its step's last, and the event's latest.
    const trails = (this.calls.get(event.effectId) ?? []).filter((t) => t.step !== step.name);
    trails.push(trail);
    this.calls.set(event.effectId, trails);
    return async (update) => {
      // A call the engine gave up publishes nothing more: its event runs again, with a new call.
      signal.throwIfAborted();
      trail.count += 1;
      const body = {
        version: JOB_SCHEMA_VERSION,
        type: 'status',
        jobId: jobIdOf(event),
        effectId: event.effectId,
        step: step.name,
        call: trail.call,
        attempt,
        seq: trail.count,
        atMs: this.ports.clock.now(),
        update,
      } as const;
      await this.ports.end.atomically(event, () => this.ports.log.produce([jobRecord(respond.statusTopic, event, body)]));
    };
  }

  /** Each step's last call of `event` so far (none without `.respond()`), left for its response to take. */
  lastCalls(event: Pick<EngineEvent, 'effectId'>): LastCall[] | undefined {
    if (!this.ports.topology.respond) return undefined;
    return (this.calls.get(event.effectId) ?? []).map((t) => ({ step: t.step, call: t.call, statusCount: t.count }));
  }

  /**
   * The response record that ends `event`, or none when the topology has no `.respond()`. It names
   * `stored` calls when given (a parked event's, kept with it), else those made on this worker.
   */
  response(event: Omit<EngineEvent, 'value'>, ending: Ending, stored?: readonly LastCall[]): OutRecord[] {
    const respond = this.ports.topology.respond;
    if (!respond) return [];
    const trails = stored ?? this.lastCalls(event) ?? [];
    const trail = trails[trails.length - 1];
    const body = {
      version: JOB_SCHEMA_VERSION,
      type: 'response',
      jobId: jobIdOf(event),
      effectId: event.effectId,
      ...ending,
      call: trail?.call ?? null,
      statusCount: trail?.statusCount ?? 0,
      // With several steps, each one's last call: a reader waits for the updates of every one.
      ...(this.ports.topology.agentSteps.length > 1
        ? { steps: Object.fromEntries(trails.map((t) => [t.step, { call: t.call, statusCount: t.statusCount }])) }
        : {}),
      atMs: this.ports.clock.now(),
    } as const;
    const record = jobRecord(respond.topic, event, body);
    // Taken once the record is made: a result that is not JSON leaves the calls for the parking's response.
    this.calls.delete(event.effectId);
    return [record];
  }

  private refusal(step: AgentStepNode): (update: unknown) => Promise<void> {
    let refuse = this.refusals.get(step.name);
    if (!refuse) {
      const error = `agentStep '${step.name}': ctx.status() needs a status topic; declare .respond(topic) in the topology (the status topic defaults to '<source>.status')`;
      refuse = () => Promise.reject(new Error(error));
      this.refusals.set(step.name, refuse);
    }
    return refuse;
  }

  /** `<attempt>-<8 hex>`, from the Random port so the test driver repeats it. */
  private callId(attempt: number): string {
    const hex = Math.floor(this.ports.random.next() * 0x1_0000_0000)
      .toString(16)
      .padStart(8, '0');
    return `${attempt}-${hex}`;
  }
}
