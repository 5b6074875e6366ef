import { causedBy } from '../src/ports/log.js';
import type { IoRequest } from './crashPoints.js';

/** A staged write whose changelog records Kafka refuses for good (larger than the topic's max.message.bytes, say), as the driver simulates it. */
export class RefusedWriteError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'RefusedWriteError';
  }
}

/** True if `error`, or an error it was caused by, is a {@link RefusedWriteError}. */
export function isRefusedWrite(error: unknown): boolean {
  return causedBy(error, 'RefusedWriteError');
}

/**
 * The driver's model of a producer that Kafka refuses a record of. Without transactions, as
 * orderly's producer runs gap-less (see `producerConfig`), it `stops`: the refused acknowledgement
 * fails, and so does every later acknowledgement and produce of the same engine instance, so that
 * nothing is written after the gap. Otherwise only the refused one fails: a transactional producer
 * aborts the transaction and goes on, or (a fault, as librdkafka without
 * `enable.gapless.guarantee`) the later records are written after the gap.
 */
export class RefusedWrites {
  private armed: { remaining: number } | undefined;
  /** Instances whose producer stopped, with the refusal that stopped it. */
  private readonly stopped = new Map<string, RefusedWriteError>();

  constructor(private readonly stops: boolean) {}

  /** The `nth` acknowledgement of a staged write from now on is refused. */
  arm(nth: number): void {
    this.armed = { remaining: nth };
  }

  disarm(): void {
    this.armed = undefined;
  }

  /**
   * The error that `owner`'s request fails with instead of running, if it does. `counts`: the
   * request is the running instance's, so it counts toward the armed refusal.
   */
  verdict(owner: string, request: IoRequest, counts: boolean): Error | undefined {
    if (request.kind !== 'durable' && request.kind !== 'produce') return undefined;
    const stopped = this.stopped.get(owner);
    if (stopped) return new Error(`the producer stopped after a refused write: nothing is written after it (${stopped.message})`, { cause: stopped });
    if (request.kind !== 'durable' || !counts || !this.armed || --this.armed.remaining > 0) return undefined;
    this.armed = undefined;
    const refused = new RefusedWriteError("Kafka refused a changelog record for good (a fault of the driver, as a record above the topic's max.message.bytes)");
    if (this.stops) this.stopped.set(owner, refused);
    return refused;
  }
}
