package orderly.bench.peers;

import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;

/**
 * Kafka Streams on the peers benchmark: source → tally processor (a persistent, changelogged
 * RocksDB key-value store, with the record cache the DSL turns on by default) → sink, one stream
 * thread, at-least-once. Runs until SIGTERM; the benchmark watches the group's committed offsets.
 */
public final class KafkaStreamsContender {
  static final String STORE = "tally";

  /** Updates its key's state and forwards one output record per event, keyed like the input. */
  static final class TallyProcessor implements Processor<String, byte[], String, String> {
    private final int waitMs;
    private ProcessorContext<String, String> context;
    private KeyValueStore<String, String> store;

    TallyProcessor(int waitMs) {
      this.waitMs = waitMs;
    }

    @Override
    public void init(ProcessorContext<String, String> context) {
      this.context = context;
      this.store = context.getStateStore(STORE);
    }

    @Override
    public void process(Record<String, byte[]> record) {
      Signals.first();
      Signals.waitMs(waitMs);
      Tally.Step step = Tally.apply(store.get(record.key()), record.value());
      store.put(record.key(), step.state());
      context.forward(record.withValue(step.output()));
    }
  }

  static Topology topology(ContenderArgs args) {
    Topology topology = new Topology();
    topology.addSource("input", Serdes.String().deserializer(), Serdes.ByteArray().deserializer(), args.input());
    topology.addProcessor("tally", () -> new TallyProcessor(args.waitMs()), "input");
    topology.addStateStore(
        Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore(STORE), Serdes.String(), Serdes.String()).withCachingEnabled(),
        "tally");
    topology.addSink("output", args.output(), Serdes.String().serializer(), Serdes.String().serializer(), "tally");
    return topology;
  }

  public static void main(String[] argv) throws InterruptedException {
    ContenderArgs args = ContenderArgs.parse(argv);
    Properties props = new Properties();
    props.put(StreamsConfig.APPLICATION_ID_CONFIG, args.group());
    props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args.bootstrap());
    props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
    props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.AT_LEAST_ONCE);
    props.put(StreamsConfig.STATE_DIR_CONFIG, args.stateDir().toString());
    props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, args.commitEveryMs());
    props.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");
    KafkaStreams streams = new KafkaStreams(topology(args), props);
    CountDownLatch stopped = new CountDownLatch(1);
    streams.setUncaughtExceptionHandler(error -> {
      System.err.println("kafka-streams contender: " + error);
      error.printStackTrace();
      System.exit(1);
      return null;
    });
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      streams.close(Duration.ofSeconds(10));
      stopped.countDown();
    }));
    streams.start();
    stopped.await();
  }
}
