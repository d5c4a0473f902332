/*
 * A Java transactional producer (kafka-clients, unmodified) that reports which transaction
 * version it uses: commit, abort, commit (one record to each of two partitions per transaction),
 * and after each one a line "<outcome> tv2=<bool> epoch=<n>" with the client's own view, read by
 * reflection from its TransactionManager (isTransactionV2Enabled, the producer id and epoch in
 * use). Under transaction version 2 (KIP-890) the client adds partitions through Produce v12 (no
 * AddPartitionsToTxn) and every EndTxn moves it to the next epoch; under version 1 the epoch
 * stays. Runs with Java's source-file launcher (JEP 330), like TransactionalProducer.java.
 *
 * Usage: java -cp '<kafka libs>/*' TransactionVersionProducer.java BOOTSTRAP TOPIC TRANSACTIONAL_ID
 */

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.Properties;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

public class TransactionVersionProducer {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], transactionalId = args[2];
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        props.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "60000");
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            Field field = KafkaProducer.class.getDeclaredField("transactionManager");
            field.setAccessible(true);
            Object manager = field.get(producer);
            producer.initTransactions();
            report("initialized", manager);
            String[] outcomes = {"committed", "aborted", "committed"};
            for (int t = 0; t < outcomes.length; t++) {
                producer.beginTransaction();
                for (int p = 0; p < 2; p++) {
                    producer.send(new ProducerRecord<>(topic, p, null, outcomes[t] + "-" + t + "-" + p)).get();
                }
                if (outcomes[t].equals("committed")) {
                    producer.commitTransaction();
                } else {
                    producer.abortTransaction();
                }
                report(outcomes[t], manager);
            }
        }
    }

    private static void report(String outcome, Object manager) throws Exception {
        Method v2 = manager.getClass().getMethod("isTransactionV2Enabled");
        Method ids = manager.getClass().getDeclaredMethod("producerIdAndEpoch");
        ids.setAccessible(true);
        Object producerIdAndEpoch = ids.invoke(manager);
        Field epoch = producerIdAndEpoch.getClass().getField("epoch");
        System.out.println(outcome + " tv2=" + v2.invoke(manager) + " epoch=" + epoch.get(producerIdAndEpoch));
    }
}
