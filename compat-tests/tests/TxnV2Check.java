// Transactions version 2 (KIP-890 part 2) with the Java client: the cluster must finalize
// transaction.version 2 (so the producer skips AddPartitionsToTxn/AddOffsetsToTxn and ends
// every transaction with an epoch bump); then a commit, an abort, a consume-transform-produce
// commit with sendOffsetsToTransaction, fencing by a second instance of the same
// transactional.id, and a transaction the coordinator times out, all read back at both
// isolation levels (with TxnCheck's reader, compiled beside it). Usage: TxnV2Check <bootstrap>
// <topic> [replication factor]; exit 0 = pass.
import java.util.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.serialization.*;

public class TxnV2Check {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], in = topic + "-in";
        short rf = args.length > 2 ? Short.parseShort(args[2]) : 1;
        Properties ap = new Properties();
        ap.put("bootstrap.servers", bootstrap);
        try (Admin admin = Admin.create(ap)) {
            FeatureMetadata f = admin.describeFeatures().featureMetadata().get();
            FinalizedVersionRange tv = f.finalizedFeatures().get("transaction.version");
            if (tv == null || tv.maxVersionLevel() < 2) fail("transaction.version not at 2: " + tv);
            admin.createTopics(List.of(new NewTopic(topic, 1, rf), new NewTopic(in, 1, rf)))
                .all().get();
        }
        try (KafkaProducer<String, String> p = producer(bootstrap, topic + "-tx", 60000)) {
            p.initTransactions();
            p.beginTransaction();
            for (int i = 0; i < 3; i++) p.send(new ProducerRecord<>(topic, 0, null, "a" + i));
            p.commitTransaction();
            p.beginTransaction();
            for (int i = 0; i < 3; i++) p.send(new ProducerRecord<>(topic, 0, null, "b" + i));
            p.flush();
            p.abortTransaction();
            // Consume-transform-produce: the offsets join the transaction without AddOffsetsToTxn.
            p.beginTransaction();
            p.send(new ProducerRecord<>(topic, 0, null, "c0"));
            p.sendOffsetsToTransaction(Map.of(new TopicPartition(in, 0), new OffsetAndMetadata(7)),
                new ConsumerGroupMetadata(topic + "-group"));
            p.commitTransaction();

            // A second instance fences the first.
            try (KafkaProducer<String, String> p2 = producer(bootstrap, topic + "-tx", 60000)) {
                p2.initTransactions();
                Exception first = null;
                try {
                    p.beginTransaction();
                    p.send(new ProducerRecord<>(topic, 0, null, "zombie")).get();
                    p.commitTransaction();
                } catch (Exception e) {
                    first = e;
                    System.out.println("first instance, writing: " + e);
                }
                // The write is refused with an abortable error; the abort then learns of the fence.
                boolean fenced = fenced(first);
                if (!fenced && first != null) {
                    try {
                        p.abortTransaction();
                    } catch (Exception e) {
                        fenced = fenced(e);
                        System.out.println("first instance, aborting: " + e);
                    }
                }
                if (!fenced) fail("the first instance was not fenced");
                p2.beginTransaction();
                p2.send(new ProducerRecord<>(topic, 0, null, "d0"));
                p2.commitTransaction();
            }
        }
        // A transaction left open past its timeout is aborted by the coordinator.
        try (KafkaProducer<String, String> p3 = producer(bootstrap, topic + "-slow", 2000)) {
            p3.initTransactions();
            p3.beginTransaction();
            p3.send(new ProducerRecord<>(topic, 0, null, "late")).get();
            Thread.sleep(6000);
            boolean refused = false;
            try {
                p3.commitTransaction();
            } catch (KafkaException e) {
                refused = true;
                System.out.println("timed-out transaction: " + e);
            }
            if (!refused) fail("a commit after the coordinator's timeout abort succeeded");
        }
        List<String> committed = TxnCheck.read(bootstrap, topic, "read_committed", 5);
        List<String> want = List.of("a0", "a1", "a2", "c0", "d0");
        if (!committed.equals(want)) fail("read_committed saw " + committed);
        List<String> all = TxnCheck.read(bootstrap, topic, "read_uncommitted", 9);
        if (all.size() < 9) fail("read_uncommitted saw " + all);
        long offset = committedOffset(bootstrap, topic + "-group", in);
        if (offset != 7) fail("group offset " + offset + ", want 7");
        System.out.println("java transactions v2: read_committed " + committed + ", read_uncommitted "
            + all.size() + ", group offset " + offset);
    }

    static boolean fenced(Throwable e) {
        for (; e != null; e = e.getCause()) if (e instanceof ProducerFencedException) return true;
        return false;
    }

    static KafkaProducer<String, String> producer(String bootstrap, String tid, int timeoutMs) {
        Properties pp = new Properties();
        pp.put("bootstrap.servers", bootstrap);
        pp.put("transactional.id", tid);
        pp.put("transaction.timeout.ms", timeoutMs);
        pp.put("key.serializer", StringSerializer.class.getName());
        pp.put("value.serializer", StringSerializer.class.getName());
        return new KafkaProducer<>(pp);
    }

    static long committedOffset(String bootstrap, String group, String topic) throws Exception {
        Properties ap = new Properties();
        ap.put("bootstrap.servers", bootstrap);
        try (Admin admin = Admin.create(ap)) {
            var offsets = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
            OffsetAndMetadata m = offsets.get(new TopicPartition(topic, 0));
            return m == null ? -1 : m.offset();
        }
    }

    static void fail(String msg) {
        System.out.println("ASSERTION FAILED: " + msg);
        System.exit(1);
    }
}
