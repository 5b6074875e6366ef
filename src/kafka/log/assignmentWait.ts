import type { Logger } from 'pino';
import { consumerConfig, type KafkaSettings } from '../kafkaConfig.js';

/** librdkafka's default `session.timeout.ms`, and the broker's `group.consumer.session.timeout.ms`. */
const DEFAULT_SESSION_TIMEOUT_MS = 45_000;

/** When the wait is logged. */
export interface AssignmentWaitOptions {
  /** The first line, after this long without an assignment. @defaultValue 2000 */
  readonly firstAfterMs?: number;
  /** Then one line this often. @defaultValue 10000 */
  readonly everyMs?: number;
}

/**
 * Logs why a worker that joined its group may have no partitions yet. The usual cause is a member
 * that stopped without leaving (kill -9, a crash, a cut network): the coordinator waits for it
 * until its session expires, and says nothing meanwhile. A new group's first worker can also wait
 * a few seconds while the broker's group coordinator loads, so the line says "if". Started when the consumer subscribes,
 * stopped at its first assignment.
 */
export class AssignmentWait {
  private timer: NodeJS.Timeout | undefined;
  private readonly startedMs = Date.now();

  constructor(
    private readonly settings: KafkaSettings,
    private readonly logger: Logger,
    private readonly options: AssignmentWaitOptions = {},
  ) {}

  start(): void {
    this.schedule(this.options.firstAfterMs ?? 2_000);
  }

  /** The first assignment came (even an empty one): nothing more to wait for. */
  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(delayMs: number): void {
    this.timer = setTimeout(() => {
      this.log();
      this.schedule(this.options.everyMs ?? 10_000);
    }, delayMs);
    this.timer.unref();
  }

  private log(): void {
    const waitedMs = Date.now() - this.startedMs;
    const { group } = this.settings;
    const classic = (this.settings.groupProtocol ?? 'classic') === 'classic';
    const configured = consumerConfig(this.settings)['session.timeout.ms'];
    const sessionTimeoutMs = classic ? Number(configured ?? DEFAULT_SESSION_TIMEOUT_MS) : undefined;
    const atMost = classic
      ? `at most session.timeout.ms = ${sessionTimeoutMs} ms after it stopped (--session-timeout-ms)`
      : "at most the broker's group.consumer.session.timeout.ms (45000 ms by default) after it stopped";
    this.logger.info(
      { group, waitedMs, ...(sessionTimeoutMs !== undefined ? { sessionTimeoutMs } : {}) },
      `waiting ${Math.round(waitedMs / 1000)} s for partitions of group '${group}': if a worker of it stopped without leaving it ` +
        `(kill -9, a crash, a cut network), it keeps its partitions until its session expires, ${atMost}; ` +
        'a worker restarted with the same --instance-id (static membership) gets them back at once. ' +
        "A group's first worker may also wait while the broker's group coordinator starts",
    );
  }
}
