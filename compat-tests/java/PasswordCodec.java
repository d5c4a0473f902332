import org.apache.kafka.common.config.types.Password;
import org.apache.kafka.security.PasswordEncoder;

/**
 * Kafka 3.9's own dynamic-password encoder (EncryptingPasswordEncoder), from the command line, so
 * that tests can check wirekafka's encoded passwords against it in both directions.
 *
 * Usage (Java's source-file launcher, the Kafka 3.9.1 jars on the class path):
 *   java -cp 'kafka-3.9.1/libs/*' PasswordCodec.java encode SECRET PASSWORD [CIPHER [KEYLENGTH [ITERATIONS]]]
 *   java -cp 'kafka-3.9.1/libs/*' PasswordCodec.java decode SECRET ENCODED
 * prints the encoded value, or the decoded password, on one line.
 */
public class PasswordCodec {
    public static void main(String[] args) throws Exception {
        String cipher = args.length > 3 ? args[3] : "AES/CBC/PKCS5Padding";
        int keyLength = args.length > 4 ? Integer.parseInt(args[4]) : 128;
        int iterations = args.length > 5 ? Integer.parseInt(args[5]) : 4096;
        PasswordEncoder encoder = PasswordEncoder.encrypting(new Password(args[1]), null, cipher, keyLength, iterations);
        if (args[0].equals("encode")) {
            System.out.println(encoder.encode(new Password(args[2])));
        } else {
            System.out.println(encoder.decode(args[2]).value());
        }
    }
}
