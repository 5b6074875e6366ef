import type { ConsumerGlobalConfig, GlobalConfig, ProducerGlobalConfig } from '@confluentinc/kafka-javascript';

/** librdkafka property values as orderly passes them. */
export type LibrdkafkaConfig = Readonly<Record<string, string | number | boolean>>;

/** Where and as whom a worker connects, and how its consumer group behaves. */
export interface KafkaSettings {
  /** Bootstrap servers, `host:port[,host:port...]`. */
  readonly bootstrap: string;
  /** The consumer group: workers of one group share the source topic's partitions. */
  readonly group: string;
  /** @defaultValue `orderly` */
  readonly clientId?: string;
  /**
   * `classic` (default): the classic group protocol with cooperative-sticky assignment, so a
   * rebalance moves only the partitions that change owner. `consumer`: KIP-848, where the broker
   * assigns (incremental too); session and heartbeat times are then the broker's settings.
   */
  readonly groupProtocol?: 'classic' | 'consumer';
  /** Classic protocol only: how long a silent worker keeps its partitions. @defaultValue librdkafka's 45000 */
  readonly sessionTimeoutMs?: number;
  /** Static membership: a restarted worker with the same id gets its partitions back without a rebalance. */
  readonly groupInstanceId?: string;
  /** @defaultValue `read_committed`: never read an aborted transaction's records */
  readonly isolationLevel?: 'read_committed' | 'read_uncommitted';
  /** Where a group with no committed offset starts. @defaultValue `earliest` */
  readonly autoOffsetReset?: 'earliest' | 'latest';
  /**
   * Any other librdkafka property (security, SASL...), given to every client; wins over orderly's
   * settings (read-ahead, linger...), except the properties orderly owns for its guarantees or
   * options (auto commit, idempotence, acks, group and transactional ids...), which `runTopology`
   * refuses, naming each.
   */
  readonly librdkafka?: LibrdkafkaConfig;
  /** librdkafka properties of the consumer only (max.poll.interval.ms, fetch sizes...). */
  readonly consumerConfig?: LibrdkafkaConfig;
  /** librdkafka properties of the producer only (linger.ms, compression...). */
  readonly producerConfig?: LibrdkafkaConfig;
}

function common(settings: KafkaSettings, role: string): GlobalConfig {
  return {
    'bootstrap.servers': settings.bootstrap,
    'client.id': `${settings.clientId ?? 'orderly'}-${role}`,
    // An idle connection closed by the broker is normal, not worth a log line.
    'log.connection.close': false,
  } as GlobalConfig;
}

/**
 * How many unfinished events of a partition the Kafka runner lets the engine hold before it
 * pauses the partition (it resumes it at half); the log holds half as many records of a paused
 * partition before librdkafka pauses it too (see KafkaLog.pause). A librdkafka pause throws away
 * what was read ahead for the partition, and after the resume the first record comes back only
 * after a new fetch; the held records bridge that wait (docs/benchmarks.md, "The engine's pause").
 * Not more: the buffered records are memory, measured against the benchmark's backlog goal (300 MiB).
 */
export const KAFKA_MAX_BUFFERED_PER_PARTITION = 1_500;

/**
 * librdkafka's read-ahead, bounded to what the engine can use. The engine buffers up to
 * maxBufferedPerPartition (1500 on Kafka) events per partition and then pauses it; the log holds
 * half as many again before librdkafka pauses the partition, which throws away what it prefetched for
 * it, to be fetched again on resume. librdkafka's
 * defaults (100,000 messages per partition, 64 MiB in all, 1 MiB per partition per fetch) held
 * far more than that: memory that only waits, and fetches made to be discarded. These keep about
 * one engine buffer per partition (and at most 16 MiB) ready. The backoff is how soon a
 * partition that reached these thresholds fetches again (librdkafka's 1 s would starve a fast
 * engine). The fetch wait is how long the broker holds a fetch of partitions with nothing new: a
 * partition assigned or resumed while one is out is fetched only after it, so librdkafka's 500 ms
 * held every partition that a restore handed back after the first (docs/benchmarks.md, "LevelDB's
 * puts, its memtable and the fetch wait").
 * Measured in docs/benchmarks.md ("On Kafka"); any of them can be overridden in `consumerConfig`.
 */
const PREFETCH = {
  'queued.min.messages': 2_000,
  'queued.max.messages.kbytes': 16_384,
  'fetch.message.max.bytes': 262_144,
  'fetch.queue.backoff.ms': 100,
  'fetch.wait.max.ms': 100,
} as const;

/**
 * The consumer: offsets are committed only by hand (the engine commits each partition's finished
 * prefix), assignments are incremental, and the rebalance callback is orderly's, so that the
 * engine finishes and commits a revoked partition before it is given up.
 */
export function consumerConfig(settings: KafkaSettings): ConsumerGlobalConfig {
  const protocol = settings.groupProtocol ?? 'classic';
  const config: Record<string, unknown> = {
    ...common(settings, 'consumer'),
    'group.id': settings.group,
    'group.protocol': protocol,
    'enable.auto.commit': false,
    'enable.auto.offset.store': false,
    'auto.offset.reset': settings.autoOffsetReset ?? 'earliest',
    'isolation.level': settings.isolationLevel ?? 'read_committed',
    'enable.partition.eof': false,
    'allow.auto.create.topics': false,
    ...PREFETCH,
  };
  if (protocol === 'classic') {
    config['partition.assignment.strategy'] = 'cooperative-sticky';
    if (settings.sessionTimeoutMs !== undefined) config['session.timeout.ms'] = settings.sessionTimeoutMs;
  }
  if (settings.groupInstanceId !== undefined) config['group.instance.id'] = settings.groupInstanceId;
  return { ...config, ...settings.librdkafka, ...settings.consumerConfig } as ConsumerGlobalConfig;
}

/** How an exactly-once worker's producer runs its transactions. */
export interface TransactionSettings {
  /**
   * Stable across restarts of one worker, unique among the group's workers: a restarted worker
   * fences its previous incarnation and aborts the transaction it left open.
   */
  readonly transactionalId: string;
  /** How long the broker lets a transaction stay open before it aborts it; also librdkafka's timeout for each transactional call. */
  readonly timeoutMs: number;
}

/**
 * Without transactions, a changelog partition must hold a prefix of what was produced to it
 * (docs/delivery.md): a record failed for good must never be followed by a later one. librdkafka's
 * idempotent producer drops a record the broker refuses for good (larger than the topic's
 * max.message.bytes, say) and goes on with the next ones, and a record that times out leaves the
 * same gap; with the gap-less guarantee a refusal is a fatal error that fails every record queued
 * behind it instead, and with no message timeout a record is retried until it is written or
 * refused. A transactional producer needs neither: a failed record aborts its transaction.
 * Delivery reports come for failed records only: a flush acknowledges the others (AckedProducer).
 */
const GAPLESS: LibrdkafkaConfig = { 'enable.gapless.guarantee': true, 'message.timeout.ms': 0, 'delivery.report.only.error': true };

/**
 * The producer: idempotent, acks from all in-sync replicas, and the Java client's murmur2
 * partitioner, so that a key lands on the partition every other client (and the test driver)
 * picks for it. Transactional with `transactions`; gap-less without (see {@link GAPLESS}).
 */
export function producerConfig(settings: KafkaSettings, transactions?: TransactionSettings): ProducerGlobalConfig {
  return {
    ...common(settings, 'producer'),
    'enable.idempotence': true,
    'request.required.acks': -1,
    partitioner: 'murmur2_random',
    'linger.ms': 5,
    dr_cb: true,
    ...(transactions ? { 'transactional.id': transactions.transactionalId, 'transaction.timeout.ms': transactions.timeoutMs } : GAPLESS),
    ...settings.librdkafka,
    ...settings.producerConfig,
  } as ProducerGlobalConfig;
}

/** The admin client that checks and creates topics. */
export function adminConfig(settings: KafkaSettings): GlobalConfig {
  return { ...common(settings, 'admin'), ...settings.librdkafka } as GlobalConfig;
}

/** librdkafka's booleans, as `-X key=value` gives them (strings) or runTopology does (booleans). */
const TRUE = new Set(['true', 't', '1', 'yes', 'on']);
const FALSE = new Set(['false', 'f', '0', 'no', 'off']);
const isTrue = (value: unknown) => TRUE.has(String(value).toLowerCase());
const isFalse = (value: unknown) => FALSE.has(String(value).toLowerCase());
const isAll = (value: unknown) => ['all', '-1'].includes(String(value).toLowerCase());

/** How a property orderly owns is judged: why it is orderly's, and which value is orderly's own (accepted). */
interface OwnProperty {
  readonly why: string;
  readonly accepts?: (value: unknown) => boolean;
}

const FINISHED_ONLY = 'orderly commits each partition itself, only up to the events it has finished';
const ALL_REPLICAS = "orderly's records must be acknowledged by every in-sync replica before an event counts as finished";
const NO_GAPS =
  'without transactions, a changelog must hold a prefix of what was written to it: a record that times out or is dropped leaves a gap a restore cannot see (docs/delivery.md)';

/**
 * librdkafka properties that orderly sets for its guarantees or from its own options: set to
 * anything else in `librdkafka`, `consumerConfig` or `producerConfig` they would silently undo what
 * orderly promises (a consumer that commits on its own commits events not yet finished), so they
 * are refused, each with why and what to use instead. The value orderly sets itself is accepted.
 * Some depend on the delivery: exactly-once, the producer needs a report of every record.
 */
function ownProperties(exactlyOnce: boolean): Readonly<Record<string, OwnProperty>> {
  return {
    'bootstrap.servers': { why: 'set by --bootstrap (runTopology: bootstrap)' },
    'metadata.broker.list': { why: 'set by --bootstrap (runTopology: bootstrap)' },
    'group.id': { why: 'set by --group (runTopology: group)' },
    'group.instance.id': { why: 'set by --instance-id (kafka.groupInstanceId)' },
    'group.protocol': { why: 'set by --group-protocol (kafka.groupProtocol): orderly handles rebalances by it' },
    'transactional.id': { why: 'set by --transactional-id (exactlyOnce.transactionalId)' },
    'transaction.timeout.ms': { why: 'set by --transaction-timeout-ms (exactlyOnce.transactionTimeoutMs): orderly commits within it' },
    'enable.auto.commit': { why: FINISHED_ONLY, accepts: isFalse },
    'enable.auto.offset.store': { why: FINISHED_ONLY, accepts: isFalse },
    'enable.idempotence': { why: "orderly's producer must be idempotent: a retried record must not be written twice, nor out of order", accepts: isTrue },
    acks: { why: ALL_REPLICAS, accepts: isAll },
    'request.required.acks': { why: ALL_REPLICAS, accepts: isAll },
    dr_cb: { why: "orderly's producer learns of failed records from its delivery reports", accepts: isTrue },
    'delivery.report.only.error': exactlyOnce
      ? { why: "exactly-once, orderly's producer settles each record on its own delivery report", accepts: isFalse }
      : { why: "orderly's producer learns of failed records from its delivery reports, and of the others from a flush", accepts: isTrue },
    ...(exactlyOnce
      ? {}
      : {
          'enable.gapless.guarantee': { why: NO_GAPS, accepts: isTrue },
          'message.timeout.ms': { why: NO_GAPS, accepts: (value: unknown) => String(value) === '0' },
          'delivery.timeout.ms': { why: NO_GAPS, accepts: (value: unknown) => String(value) === '0' },
        }),
  };
}

/**
 * Throws a RangeError naming each property of `settings` that orderly owns set to another value
 * (see ownProperties), where it was set, and why. `exactlyOnce`: the worker runs transactions.
 */
export function checkUserProperties(settings: Pick<KafkaSettings, 'librdkafka' | 'consumerConfig' | 'producerConfig'>, exactlyOnce = false): void {
  const own = ownProperties(exactlyOnce);
  const refused: string[] = [];
  for (const [where, properties] of [
    ['librdkafka (-X)', settings.librdkafka],
    ['consumerConfig (--consumer-config)', settings.consumerConfig],
    ['producerConfig (--producer-config)', settings.producerConfig],
  ] as const) {
    for (const [key, value] of Object.entries(properties ?? {})) {
      const property = Object.hasOwn(own, key) ? own[key] : undefined;
      if (property && !property.accepts?.(value)) refused.push(`'${key}=${String(value)}' in ${where}: ${property.why}`);
    }
  }
  if (refused.length > 0)
    throw new RangeError(`orderly sets these librdkafka properties itself; remove them: ${refused.join('; ')} (README, "Run it on Kafka")`);
}
