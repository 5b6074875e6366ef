import type { AgentStepNode, DurableStepContext } from '../graph/nodes.js';
import type { EngineContext } from './engineContext.js';
import type { EngineEvent } from './events.js';
import { jsonProblem } from './jsonData.js';

/**
 * The durable steps of one call of an agent step's decide (`ctx.step(name, fn)`): the nth step
 * the call asks for is the run's nth. A step the event's run journal holds under that position
 * returns its journaled result without running; any other runs, and its result is journaled
 * (durable, see {@link journal}) before the call goes on.
 */
export class DurableSteps {
  /** The position of the next step the call asks for. */
  private next = 0;
  /**
   * Set when the journal and the code disagree: the call's attempt fails with it, whatever decide
   * does with the error ctx.step threw (a decide that catches it must not go on past it).
   */
  failure: string | undefined;
  /**
   * Set when a journal write failed (the store, or the changelog under it): the engine's own
   * failure, not the step's, so it leaves the call as the engine's other write failures do.
   */
  broken: unknown;

  /** `DecideContext.step` of this call. */
  readonly step = <R>(name: string, fn: (step: DurableStepContext) => R | Promise<R>): Promise<R> => this.run(name, fn) as Promise<R>;

  constructor(
    private readonly ctx: EngineContext,
    private readonly node: AgentStepNode,
    private readonly event: EngineEvent,
    /** The call's signal: aborted when the call ends (its timeout, or the engine giving the event up). */
    private readonly signal: AbortSignal,
  ) {}

  private async run(name: string, fn: (step: DurableStepContext) => unknown): Promise<unknown> {
    const position = this.next++;
    const what = `ctx.step '${String(name)}' (durable step ${position + 1} of agentStep '${this.node.name}', event ${this.event.effectId})`;
    if (typeof name !== 'string' || name.length === 0)
      throw new TypeError(`${what}: a durable step needs a name, a non-empty string that stays the same across deploys`);
    if (typeof fn !== 'function') throw new TypeError(`${what}: its second argument must be the function to run, got ${typeof fn}`);
    this.signal.throwIfAborted();
    const journaled = this.ctx.runs.get(this.node.name, this.event, position);
    if (journaled) {
      if (journaled.name !== name) throw this.mismatch(position, journaled.name, name);
      this.report(name, position, 'replayed');
      return copy(journaled.result);
    }
    const result = await fn({ effectId: this.event.effectId, step: name, signal: this.signal });
    const problem = jsonProblem(result, 'its result');
    if (problem) {
      throw new TypeError(
        `${what}: ${problem}; a durable step's result is journaled as JSON: return strings, numbers, booleans, null, arrays and plain objects (a Date as date.toISOString(), say)`,
      );
    }
    // Ended while it ran (timed out, or given up): not journaled, so the step runs again with the event.
    this.signal.throwIfAborted();
    const json = result === undefined ? undefined : JSON.stringify(result);
    const record = json === undefined ? { name, atMs: this.ctx.clock.now() } : { name, atMs: this.ctx.clock.now(), result: JSON.parse(json) as unknown };
    await this.journal(position, record);
    this.report(name, position, 'ran');
    return json === undefined ? undefined : JSON.parse(json);
  }

  /**
   * Makes a completed step durable before the call goes on: the state writer settles once the
   * write is durable (the changelog's acknowledgement on a staged store). On a transactional log
   * an acknowledged write is only in the open transaction, which a crash aborts: the transaction
   * is committed first.
   */
  private async journal(position: number, record: { name: string; atMs: number; result?: unknown }): Promise<void> {
    try {
      await this.ctx.end.atomically(this.event, () => this.ctx.writer.write([this.ctx.runs.put(this.node.name, this.event, position, record)]));
    } catch (error) {
      this.broken ??= error;
      throw error;
    }
    if (this.ctx.end.kind === 'transactional') await this.ctx.commitNow();
  }

  private report(name: string, position: number, result: 'ran' | 'replayed'): void {
    this.ctx.observer.durableStep?.({ step: this.node.name, name, effectId: this.event.effectId, position, result, atMs: this.ctx.clock.now() });
  }

  private mismatch(position: number, journaled: string, asked: string): Error {
    this.failure =
      `agentStep '${this.node.name}': durable step ${position + 1} of event ${this.event.effectId} is '${journaled}' in its run journal but the code asks for '${asked}': ` +
      `the code changed while the event's run was under way, and a run resumes its steps by position. Keep the old steps, in their order and with their names, until the events that began under them have ended ` +
      `(new steps go after them); an event parked by this error is resolved with a decision or a discard`;
    return new Error(this.failure);
  }
}

/** A journaled result for the decide to keep: its own copy, as the first run got its own. */
function copy(result: unknown): unknown {
  return result === undefined || result === null || typeof result !== 'object' ? result : (JSON.parse(JSON.stringify(result)) as unknown);
}
