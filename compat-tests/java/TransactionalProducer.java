/*
 * A Java producer (kafka-clients, unmodified) writing the transaction scenario of wirekafka's
 * compat tests: transaction 1 commits committed-0..9 (record i to partition i % 2), transaction 2
 * writes aborted-0..4 the same way and aborts once they are acknowledged, transaction 3 commits
 * end-0 and end-1. Kafka's tools have no producer that aborts on request (the transactional
 * message copier aborts at random), hence this file; the tests run it with Java's source-file
 * launcher (JEP 330), so it needs no build step.
 *
 * Usage: java -cp '<kafka libs>/*' TransactionalProducer.java BOOTSTRAP TOPIC TRANSACTIONAL_ID
 * Prints one line per transaction ("committed 10", "aborted 5", "committed 2").
 */

import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.Future;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.StringSerializer;

public class TransactionalProducer {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], transactionalId = args[2];
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        props.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "60000");
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            producer.initTransactions();

            producer.beginTransaction();
            for (int i = 0; i < 10; i++) {
                producer.send(new ProducerRecord<>(topic, i % 2, null, "committed-" + i));
            }
            producer.commitTransaction();
            System.out.println("committed 10");

            producer.beginTransaction();
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = 0; i < 5; i++) {
                sent.add(producer.send(new ProducerRecord<>(topic, i % 2, null, "aborted-" + i)));
            }
            for (Future<RecordMetadata> f : sent) {
                f.get();  // in the log before the abort
            }
            producer.abortTransaction();
            System.out.println("aborted 5");

            producer.beginTransaction();
            for (int p = 0; p < 2; p++) {
                producer.send(new ProducerRecord<>(topic, p, null, "end-" + p));
            }
            producer.commitTransaction();
            System.out.println("committed 2");
        }
    }
}
