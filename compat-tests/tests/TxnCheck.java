// Java client transactions: commit one transaction, abort one, commit another, then read the
// topic back with read_committed (must see only committed records) and read_uncommitted (must
// see all of them). Usage: TxnCheck <bootstrap> <topic>; exit 0 = pass.
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.*;

public class TxnCheck {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1];
        Properties ap = new Properties();
        ap.put("bootstrap.servers", bootstrap);
        try (Admin admin = Admin.create(ap)) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
        }
        Properties pp = new Properties();
        pp.put("bootstrap.servers", bootstrap);
        pp.put("transactional.id", topic + "-tx");
        pp.put("key.serializer", StringSerializer.class.getName());
        pp.put("value.serializer", StringSerializer.class.getName());
        try (KafkaProducer<String, String> p = new KafkaProducer<>(pp)) {
            p.initTransactions();
            String[][] plan = {{"a", "commit"}, {"b", "abort"}, {"c", "commit"}};
            for (String[] step : plan) {
                p.beginTransaction();
                for (int i = 0; i < 5; i++) p.send(new ProducerRecord<>(topic, 0, null, step[0] + i));
                p.flush();
                if (step[1].equals("commit")) p.commitTransaction(); else p.abortTransaction();
            }
        }
        List<String> committed = read(bootstrap, topic, "read_committed", 10);
        List<String> all = read(bootstrap, topic, "read_uncommitted", 15);
        List<String> want = new ArrayList<>();
        for (String l : new String[] {"a", "c"}) for (int i = 0; i < 5; i++) want.add(l + i);
        if (!committed.equals(want)) fail("read_committed saw " + committed);
        if (all.size() != 15) fail("read_uncommitted saw " + all.size() + " records, want 15");
        System.out.println("java transactions: read_committed 10, read_uncommitted 15");
    }

    static List<String> read(String bootstrap, String topic, String isolation, int want) {
        Properties cp = new Properties();
        cp.put("bootstrap.servers", bootstrap);
        cp.put("isolation.level", isolation);
        cp.put("key.deserializer", StringDeserializer.class.getName());
        cp.put("value.deserializer", StringDeserializer.class.getName());
        List<String> out = new ArrayList<>();
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cp)) {
            TopicPartition tp = new TopicPartition(topic, 0);
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            long deadline = System.currentTimeMillis() + 20000;
            while (System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) out.add(r.value());
                if (out.size() >= want && c.position(tp) >= c.endOffsets(List.of(tp)).get(tp)) break;
            }
        }
        return out;
    }

    static void fail(String msg) {
        System.out.println("ASSERTION FAILED: " + msg);
        System.exit(1);
    }
}
