// KIP-1102 / KIP-899 with the Java consumer: one consumer that must live through its whole
// cluster moving to new addresses. It bootstraps from an address that stays valid (the
// forwarder of cluster/rebootstrap.sh), joins a group, and prints every record it receives;
// the script stops the cluster, starts it with other broker ports and produces more. The
// consumer only learns the new addresses by going back to its bootstrap address
// (metadata.recovery.strategy=rebootstrap).
//
// Usage: RebootstrapCheck <bootstrap> <topic> <group> <total records> <timeout s> [group.protocol]
// Stdout, one line each: "record PARTITION OFFSET VALUE", "committed N" (N records so far,
// after a successful commitSync), "assigned [...]" / "revoked [...]" / "lost [...]",
// finally "done N". Exit 0 when exactly <total> records were received (the script compares
// the records themselves), 1 otherwise.
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

public class RebootstrapCheck {
    public static void main(String[] args) {
        String bootstrap = args[0], topic = args[1], group = args[2];
        int total = Integer.parseInt(args[3]);
        long deadline = System.currentTimeMillis() + 1000L * Long.parseLong(args[4]);
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("client.id", "rebootstrap-check");
        p.put("group.id", group);
        if (args.length > 5) p.put("group.protocol", args[5]);
        p.put("auto.offset.reset", "earliest");
        p.put("enable.auto.commit", "false");
        // The 4.x default strategy, named anyway; and a trigger (KIP-1102) far below the
        // 5-minute default, so that a client that still had a reachable but useless broker
        // would go back to its bootstrap address within the test's time.
        p.put("metadata.recovery.strategy", "rebootstrap");
        p.put("metadata.recovery.rebootstrap.trigger.ms", "5000");
        if (!"consumer".equals(p.get("group.protocol"))) {
            p.put("session.timeout.ms", "10000");
            p.put("heartbeat.interval.ms", "1000");
        }
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        int seen = 0;
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
            c.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                public void onPartitionsRevoked(Collection<TopicPartition> parts) { say("revoked " + parts); }
                public void onPartitionsAssigned(Collection<TopicPartition> parts) { say("assigned " + parts); }
                public void onPartitionsLost(Collection<TopicPartition> parts) { say("lost " + parts); }
            });
            // After the last expected record, keep polling briefly: a record read twice shows.
            long stopAt = Long.MAX_VALUE;
            while (System.currentTimeMillis() < Math.min(deadline, stopAt)) {
                ConsumerRecords<String, String> recs = c.poll(Duration.ofMillis(500));
                for (ConsumerRecord<String, String> r : recs) {
                    say("record " + r.partition() + " " + r.offset() + " " + r.value());
                    seen++;
                }
                if (!recs.isEmpty()) {
                    try {
                        c.commitSync(Duration.ofSeconds(15));
                        say("committed " + seen);
                    } catch (RuntimeException e) {
                        System.err.println("commitSync after " + seen + " records: " + e);
                    }
                }
                if (seen >= total && stopAt == Long.MAX_VALUE) stopAt = System.currentTimeMillis() + 1500;
            }
            say("done " + seen);
        }
        System.exit(seen == total ? 0 : 1);
    }

    static void say(String s) {
        System.out.println(s);
        System.out.flush();
    }
}
