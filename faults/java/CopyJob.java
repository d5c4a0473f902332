/*
 * The nemesis suite's exactly-once workload (faults/copy_job.py): one JVM copies every partition
 * of INPUT to the same partition of OUTPUT with Kafka's own Java client (kafka-clients,
 * unmodified), one transaction per poll with the input positions sent to the transaction
 * (sendOffsetsToTransaction with the consumer's group metadata), as Kafka Streams and Kafka's
 * TransactionalMessageCopier do. One transaction in five is aborted on purpose, so that the
 * output holds aborted records a read_committed reader must never return.
 *
 * Kafka's TransactionalMessageCopier copies what its input held when it started, one partition per
 * process; this job runs through the whole fault schedule in one process instead. Errors are
 * handled as the KafkaProducer javadoc says: a fenced or otherwise fatal producer is replaced (its
 * successor's initTransactions fences it and ends what it left open), any other error aborts; both
 * rewind the input to the group's committed offsets. Each blocking call is bounded by
 * max.block.ms / default.api.timeout.ms, so a broker that never answers costs a retry, never a hang.
 *
 * Usage: java -cp '<kafka libs>/*' CopyJob.java BOOTSTRAP INPUT OUTPUT TRANSACTIONAL_ID GROUP
 * Prints "ready" once its producer is initialised. Reads "finish E0 E1 ..." on stdin: copy until
 * the committed input offsets reach those offsets (partition 0, 1, ...), then print one JSON line
 * of counts and exit 0.
 */

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.OutOfOrderSequenceException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class CopyJob {
    private static volatile long[] finishAt = null;

    private final String bootstrap, input, output, transactionalId;
    private final KafkaConsumer<byte[], byte[]> consumer;
    private final List<TopicPartition> partitions = new ArrayList<>();
    private final Map<TopicPartition, Long> committed = new HashMap<>();
    private KafkaProducer<byte[], byte[]> producer;
    private long copied, commits, aborts, randomAborts, restarts;

    CopyJob(String bootstrap, String input, String output, String transactionalId, String group) {
        this.bootstrap = bootstrap;
        this.input = input;
        this.output = output;
        this.transactionalId = transactionalId;
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "200");
        props.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        consumer = new KafkaConsumer<>(props);
    }

    public static void main(String[] args) throws Exception {
        Thread commands = new Thread(CopyJob::readCommands, "commands");
        commands.setDaemon(true);
        commands.start();
        CopyJob job = new CopyJob(args[0], args[1], args[2], args[3], args[4]);
        job.run();
        System.out.println(String.format(
            "{\"copied\": %d, \"commits\": %d, \"aborts\": %d, \"random_aborts\": %d, \"restarts\": %d}",
            job.copied, job.commits, job.aborts, job.randomAborts, job.restarts));
        System.out.flush();
        System.exit(0);
    }

    private static void readCommands() {
        try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null) {
                String[] words = line.trim().split("\\s+");
                if (words[0].equals("finish")) {
                    long[] ends = new long[words.length - 1];
                    for (int i = 1; i < words.length; i++) {
                        ends[i - 1] = Long.parseLong(words[i]);
                    }
                    finishAt = ends;
                }
            }
        } catch (Exception e) {
            e.printStackTrace();
        }
    }

    void run() throws InterruptedException {
        while (partitions.isEmpty()) {
            try {
                for (PartitionInfo info : consumer.partitionsFor(input)) {
                    partitions.add(new TopicPartition(input, info.partition()));
                }
            } catch (KafkaException e) {
                System.err.println("partitionsFor: " + e);
                Thread.sleep(500);
            }
        }
        consumer.assign(partitions);
        rewind();
        producer = newProducer();
        System.out.println("ready");
        System.out.flush();
        Random random = new Random(transactionalId.hashCode());
        while (!finished()) {
            ConsumerRecords<byte[], byte[]> records;
            try {
                records = consumer.poll(Duration.ofMillis(200));
            } catch (KafkaException e) {
                System.err.println("poll: " + e);
                continue;
            }
            if (!records.isEmpty()) {
                copy(records, random.nextInt(5) == 0);
            }
        }
        producer.close(Duration.ofSeconds(5));
        consumer.close(Duration.ofSeconds(5));
    }

    private boolean finished() {
        long[] ends = finishAt;
        if (ends == null) {
            return false;
        }
        for (int p = 0; p < ends.length; p++) {
            if (ends[p] > 0 && committed.getOrDefault(new TopicPartition(input, p), 0L) < ends[p]) {
                return false;
            }
        }
        return true;
    }

    /** One transaction: the records, the positions after them; committed, or aborted on purpose. */
    private void copy(ConsumerRecords<byte[], byte[]> records, boolean abortOnPurpose) throws InterruptedException {
        Map<TopicPartition, OffsetAndMetadata> positions = new HashMap<>();
        for (TopicPartition tp : records.partitions()) {
            List<ConsumerRecord<byte[], byte[]>> part = records.records(tp);
            positions.put(tp, new OffsetAndMetadata(part.get(part.size() - 1).offset() + 1));
        }
        try {
            producer.beginTransaction();
            for (ConsumerRecord<byte[], byte[]> r : records) {
                producer.send(new ProducerRecord<>(output, r.partition(), r.key(), r.value()));
            }
            producer.sendOffsetsToTransaction(positions, consumer.groupMetadata());
            if (abortOnPurpose) {
                producer.abortTransaction();
                randomAborts++;
                rewind();
                return;
            }
            producer.commitTransaction();
            commits++;
            copied += records.count();
            positions.forEach((tp, offset) -> committed.put(tp, offset.offset()));
        } catch (ProducerFencedException | OutOfOrderSequenceException | AuthorizationException
                 | UnsupportedVersionException e) {
            System.err.println("fatal for this producer, replacing it: " + e);
            replaceProducer();
            rewind();
        } catch (KafkaException e) {
            System.err.println("aborting: " + e);
            try {
                producer.abortTransaction();
                aborts++;
            } catch (KafkaException again) {
                System.err.println("abort failed, replacing the producer: " + again);
                replaceProducer();
            }
            rewind();
        }
    }

    private void replaceProducer() throws InterruptedException {
        restarts++;
        producer.close(Duration.ZERO);
        producer = newProducer();
    }

    private KafkaProducer<byte[], byte[]> newProducer() throws InterruptedException {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        props.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "60000");
        props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "30000");
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        while (true) {
            KafkaProducer<byte[], byte[]> fresh = new KafkaProducer<>(props);
            try {
                fresh.initTransactions();
                return fresh;
            } catch (KafkaException e) {
                System.err.println("initTransactions: " + e);
                fresh.close(Duration.ZERO);
                Thread.sleep(500);
            }
        }
    }

    /** Seek to the group's committed offsets (the start where none): they are the job's truth. */
    private void rewind() throws InterruptedException {
        while (true) {
            try {
                Map<TopicPartition, OffsetAndMetadata> offsets = consumer.committed(new HashSet<>(partitions));
                for (TopicPartition tp : partitions) {
                    OffsetAndMetadata offset = offsets.get(tp);
                    if (offset == null) {
                        consumer.seekToBeginning(List.of(tp));
                    } else {
                        consumer.seek(tp, offset.offset());
                        committed.put(tp, offset.offset());
                    }
                }
                return;
            } catch (KafkaException e) {
                System.err.println("committed: " + e);
                Thread.sleep(500);
            }
        }
    }
}
