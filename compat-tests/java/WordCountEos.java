/*
 * A Kafka Streams word count with exactly-once processing (processing.guarantee=exactly_once_v2),
 * for compat-tests/test_cluster_eos_java.py: it reads lines from INPUT, splits them on spaces,
 * regroups by word (a repartition topic), counts in a state store (an in-memory store backed by a
 * changelog topic) and writes every new count to OUTPUT. With exactly_once_v2 the output records,
 * the changelog records, the repartition records and the input offsets of one commit are one
 * transaction, so a read_committed reader of OUTPUT sees every word counted exactly once however
 * the brokers fail meanwhile.
 *
 * Internal topics get replication factor 3 and min.insync.replicas 2, as the test's own topics.
 * The store lives in memory (no RocksDB native library to unpack); after a restart Streams
 * restores it from the changelog, which is part of what the test exercises.
 *
 * Usage: java -cp '<kafka libs>/*' WordCountEos.java BOOTSTRAP APPLICATION_ID INPUT OUTPUT STATE_DIR
 * Prints "running" on stdout the first time the client reaches RUNNING. Runs until its stdin
 * closes, then closes Streams and exits 0. Exits 1 if Streams stops by itself (ERROR state, a
 * stream thread's uncaught exception): the harness restarts it, as an operator would.
 */

import java.io.IOException;
import java.io.InputStream;
import java.time.Duration;
import java.util.Arrays;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.Stores;

public class WordCountEos {
    public static void main(String[] args) throws InterruptedException {
        if (args.length != 5) {
            System.err.println("usage: WordCountEos BOOTSTRAP APPLICATION_ID INPUT OUTPUT STATE_DIR");
            System.exit(2);
        }
        String bootstrap = args[0], applicationId = args[1], input = args[2], output = args[3], stateDir = args[4];

        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 3);
        props.put(StreamsConfig.topicPrefix(TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG), "2");
        // commit (and so end a transaction) often: many transactions meet the broker kills
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);  // 2 busy cores: one thread runs every task
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);  // every update reaches the output
        // a restarted app's previous member leaves the group after 10 s instead of Kafka's 45 s default
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 10000);
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), 2000);
        props.put(StreamsConfig.producerPrefix(ProducerConfig.LINGER_MS_CONFIG), 5);

        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
            .flatMapValues(line -> Arrays.asList(line.split(" ")))
            .filter((key, word) -> !word.isEmpty())
            .groupBy((key, word) -> word, Grouped.with("words", Serdes.String(), Serdes.String()))
            .count(Materialized.<String, Long>as(Stores.inMemoryKeyValueStore("counts"))
                .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
            .toStream()
            .mapValues(count -> Long.toString(count))
            .to(output, Produced.with(Serdes.String(), Serdes.String()));

        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        AtomicBoolean closing = new AtomicBoolean(false);
        AtomicInteger exitCode = new AtomicInteger(0);
        CountDownLatch stopped = new CountDownLatch(1);
        AtomicBoolean announced = new AtomicBoolean(false);
        streams.setStateListener((now, before) -> {
            System.err.println("WordCountEos: state " + before + " -> " + now);
            if (now == KafkaStreams.State.RUNNING && announced.compareAndSet(false, true)) {
                System.out.println("running");
                System.out.flush();
            }
            if ((now == KafkaStreams.State.ERROR || now == KafkaStreams.State.NOT_RUNNING) && !closing.get()) {
                exitCode.set(1);
                stopped.countDown();
            }
        });
        // A stream thread that dies of an error Streams does not handle itself takes the client
        // down; the process then exits 1 and the harness decides whether to restart it.
        streams.setUncaughtExceptionHandler(exception -> {
            System.err.println("WordCountEos: uncaught " + exception);
            exception.printStackTrace();
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });

        Thread stdinWatcher = new Thread(() -> {
            InputStream in = System.in;
            try {
                while (in.read() != -1) {
                    // any input is ignored; end of input means stop
                }
            } catch (IOException e) {
                // a broken stdin means the harness is gone: stop too
            }
            stopped.countDown();
        }, "stdin-watcher");
        stdinWatcher.setDaemon(true);
        stdinWatcher.start();

        streams.start();
        stopped.await();
        closing.set(true);
        streams.close(Duration.ofSeconds(30));
        System.err.println("WordCountEos: closed, exit " + exitCode.get());
        System.exit(exitCode.get());
    }
}
