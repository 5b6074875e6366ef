package orderly.bench.peers;

import static io.confluent.parallelconsumer.ParallelConsumerOptions.CommitMode.PERIODIC_CONSUMER_ASYNCHRONOUS;
import static io.confluent.parallelconsumer.ParallelConsumerOptions.ProcessingOrder.KEY;

import io.confluent.parallelconsumer.ParallelConsumerOptions;
import io.confluent.parallelconsumer.ParallelStreamProcessor;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;

/**
 * Confluent's Parallel Consumer on the peers benchmark: KEY ordering (keys run concurrently, a
 * key's events one after another), pollAndProduce (one output record per event, keyed like the
 * input), offsets committed asynchronously by the consumer every commit interval. It has no state
 * store of its own; its users keep state where they like, here an embedded RocksDB in the state
 * directory (default write options: its write-ahead log on, no fsync per write), which survives a
 * restart of the process but does not follow a partition to another machine.
 */
public final class ParallelConsumerContender {
  private ParallelConsumerContender() {}

  public static void main(String[] argv) throws Exception {
    ContenderArgs args = ContenderArgs.parse(argv);
    RocksDB.loadLibrary();
    Files.createDirectories(args.stateDir());
    Options options = new Options().setCreateIfMissing(true);
    RocksDB db = RocksDB.open(options, args.stateDir().toString());

    Properties consumerProps = new Properties();
    consumerProps.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args.bootstrap());
    consumerProps.put(ConsumerConfig.GROUP_ID_CONFIG, args.group());
    consumerProps.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    consumerProps.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    KafkaConsumer<String, byte[]> consumer = new KafkaConsumer<>(consumerProps, new StringDeserializer(), new ByteArrayDeserializer());
    Properties producerProps = new Properties();
    producerProps.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args.bootstrap());
    KafkaProducer<String, byte[]> producer = new KafkaProducer<>(producerProps, new StringSerializer(), new ByteArraySerializer());

    ParallelConsumerOptions<String, byte[]> pcOptions = ParallelConsumerOptions.<String, byte[]>builder()
        .ordering(KEY)
        .maxConcurrency(args.concurrency())
        .commitMode(PERIODIC_CONSUMER_ASYNCHRONOUS)
        .commitInterval(Duration.ofMillis(args.commitEveryMs()))
        .consumer(consumer)
        .producer(producer)
        .build();
    ParallelStreamProcessor<String, byte[]> processor = ParallelStreamProcessor.createEosStreamProcessor(pcOptions);
    processor.subscribe(List.of(args.input()));
    processor.pollAndProduce(context -> {
      Signals.first();
      Signals.waitMs(args.waitMs());
      ConsumerRecord<String, byte[]> record = context.getSingleConsumerRecord();
      byte[] key = record.key().getBytes(StandardCharsets.UTF_8);
      try {
        byte[] before = db.get(key);
        Tally.Step step = Tally.apply(before == null ? null : new String(before, StandardCharsets.UTF_8), record.value());
        db.put(key, step.state().getBytes(StandardCharsets.UTF_8));
        return new ProducerRecord<>(args.output(), record.key(), step.output().getBytes(StandardCharsets.UTF_8));
      } catch (RocksDBException e) {
        throw new IllegalStateException("parallel-consumer contender: RocksDB failed for key " + record.key(), e);
      }
    });

    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      processor.close();
      db.close();
      options.close();
      stopped.countDown();
    }));
    stopped.await();
  }
}
