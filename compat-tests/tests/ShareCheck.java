// Share groups (KIP-932) with the Kafka 4.3.1 Java client (KafkaShareConsumer): the cases of
// tests/java_share.sh. Usage: ShareCheck <mode> <bootstrap> <topic> <group> [args]; exit 0 = pass.
//   cooperative             1 partition, 300 records; three share consumers (threads, implicit
//                           acknowledgement) read them concurrently: every record exactly once
//                           overall, more than one consumer gets records, the group's start offset
//                           ends at 300 with lag 0
//   release                 explicit acknowledgement: the first records polled are RELEASEd, come
//                           back with deliveryCount 2 and are ACCEPTed; REJECTed ones never come back
//   hold <n> <setup 0|1>    (lock-timeout, the process that gets killed) produces n records, polls
//                           one batch without acknowledging it, prints "ACQUIRED <ms> <offsets>",
//                           then idles until it is stopped or killed
//   take <from> <to> <held offsets> <t0 ms> <min ms> <max ms>
//                           (lock-timeout, the survivor) reads offsets from..to-1 of the group,
//                           ACCEPTs each: every one exactly once; the held ones with deliveryCount 2
//                           arriving between min and max ms after t0, the others with deliveryCount 1
// Every mode that creates the topic sets the group's configs first with incrementalAlterConfigs
// (share.auto.offset.reset=earliest, and for the lock case share.record.lock.duration.ms=15000),
// as users do with kafka-configs --entity-type groups.
import java.time.Duration;
import java.util.*;
import java.util.concurrent.*;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.*;

public class ShareCheck {
    static String bootstrap;

    public static void main(String[] args) throws Exception {
        String mode = args[0], topic = args[2], group = args[3];
        bootstrap = args[1];
        switch (mode) {
            case "cooperative": cooperative(topic, group); break;
            case "release": release(topic, group); break;
            case "hold": hold(topic, group, Integer.parseInt(args[4]), args[5].equals("1")); break;
            case "take": take(topic, group, Long.parseLong(args[4]), Long.parseLong(args[5]), args[6],
                Long.parseLong(args[7]), Long.parseLong(args[8]), Long.parseLong(args[9])); break;
            default: fail("unknown mode " + mode);
        }
        System.out.println("OK " + mode);
    }

    static void fail(String msg) {
        System.out.println("ASSERTION FAILED: " + msg);
        System.out.flush();
        System.exit(1);
    }

    static Admin admin() {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        return Admin.create(p);
    }

    // share.version must be finalized (on a fresh Kafka 4.2+ cluster it is, at level 1), then the
    // topic, then the group configs (before any member joins, so the share-partition starts at the
    // earliest offset), then the records.
    static void setup(String topic, String group, Map<String, String> groupConfigs, int records) throws Exception {
        try (Admin a = admin()) {
            FinalizedVersionRange sv = a.describeFeatures().featureMetadata().get()
                .finalizedFeatures().get("share.version");
            System.out.println("share.version finalized: " + sv);
            if (sv == null || sv.maxVersionLevel() < 1) fail("share.version is not finalized at 1 or above");
            a.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
            ConfigResource res = new ConfigResource(ConfigResource.Type.GROUP, group);
            List<AlterConfigOp> ops = new ArrayList<>();
            groupConfigs.forEach((k, v) -> ops.add(new AlterConfigOp(new ConfigEntry(k, v), AlterConfigOp.OpType.SET)));
            a.incrementalAlterConfigs(Map.of(res, ops)).all().get();
            // The controller commits the change and the broker applies it from the metadata log a
            // little later: right after the first alter on a fresh Kafka 4.3.1, DescribeConfigs still
            // showed share.auto.offset.reset=latest (DEFAULT_CONFIG). A member joining before then
            // would start the share-partition at the latest offset, so wait until the broker shows it.
            for (int i = 0; ; i++) {
                Config c = a.describeConfigs(List.of(res)).all().get().get(res);
                List<String> missing = new ArrayList<>();
                for (String k : groupConfigs.keySet()) {
                    ConfigEntry e = c.get(k);
                    if (e == null || !groupConfigs.get(k).equals(e.value())) missing.add(String.valueOf(e));
                }
                if (missing.isEmpty()) {
                    groupConfigs.keySet().forEach(k -> System.out.println("group config " + k + "=" + c.get(k).value()
                        + " (" + c.get(k).source() + ")"));
                    break;
                }
                if (i == 50) fail("group configs not applied after 10 s: " + missing);
                Thread.sleep(200);
            }
        }
        produce(topic, records);
    }

    static void produce(String topic, int n) throws Exception {
        if (n == 0) return;
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("acks", "all");
        try (KafkaProducer<String, String> prod = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
            List<Future<RecordMetadata>> fs = new ArrayList<>();
            for (int i = 0; i < n; i++) fs.add(prod.send(new ProducerRecord<>(topic, 0, "k" + i, "v" + i)));
            for (Future<RecordMetadata> f : fs) f.get();
        }
        System.out.println("produced " + n);
    }

    static KafkaShareConsumer<String, String> consumer(String group, String clientId, Map<String, String> extra) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("group.id", group);
        p.put("client.id", clientId);
        p.putAll(extra);
        return new KafkaShareConsumer<>(p, new StringDeserializer(), new StringDeserializer());
    }

    static short dc(ConsumerRecord<String, String> r) {
        return r.deliveryCount().orElseThrow(() -> new IllegalStateException("no delivery count on " + r.offset()));
    }

    // The group's share-partition start offset and lag (Admin.listShareGroupOffsets, as
    // kafka-share-groups --describe shows them), once they reach the expected values; start -1:
    // any start offset. Kafka 4.3.1 does not always move the persisted start offset past the last
    // acknowledged records at once (after the cooperative case it showed 280 of 300, lag 0: the
    // lag leaves out the acknowledged records above the start offset), so only the lag is exact.
    static void expectOffsets(String topic, String group, long start, long lag) throws Exception {
        TopicPartition tp = new TopicPartition(topic, 0);
        SharePartitionOffsetInfo info = null;
        try (Admin a = admin()) {
            for (int i = 0; i < 50; i++) {
                info = a.listShareGroupOffsets(Map.of(group, new ListShareGroupOffsetsSpec()))
                    .partitionsToOffsetInfo(group).get().get(tp);
                if (info != null && (start < 0 || info.startOffset() == start) && info.lag().orElse(-1L) == lag) {
                    System.out.println("group offsets: " + info);
                    return;
                }
                Thread.sleep(200);
            }
        }
        fail("expected start offset " + start + " lag " + lag + ", got " + info);
    }

    static void checkCommit(Map<TopicIdPartition, Optional<KafkaException>> res) {
        res.forEach((tp, e) -> { if (e.isPresent()) fail("acknowledgement of " + tp + " failed: " + e.get()); });
    }

    // ---- cooperative -------------------------------------------------------------------------
    static void cooperative(String topic, String group) throws Exception {
        final int n = 300;
        setup(topic, group, Map.of("share.auto.offset.reset", "earliest"), n);
        ConcurrentHashMap<Long, List<String>> seen = new ConcurrentHashMap<>();
        ConcurrentHashMap<String, AtomicInteger> perConsumer = new ConcurrentHashMap<>();
        List<String> problems = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch done = new CountDownLatch(1);
        long deadline = System.currentTimeMillis() + 30000;
        List<Thread> threads = new ArrayList<>();
        for (String name : List.of("c1", "c2", "c3")) {
            perConsumer.put(name, new AtomicInteger());
            Thread t = new Thread(() -> {
                // Implicit acknowledgement (the default): a poll accepts what the previous one returned.
                // record_limit: a poll acquires at most max.poll.records, so one member cannot take
                // the whole batch of 300 at once.
                try (KafkaShareConsumer<String, String> c = consumer(group, topic + "-" + name,
                        Map.of("max.poll.records", "10", "share.acquire.mode", "record_limit"))) {
                    c.subscribe(List.of(topic));
                    while (done.getCount() > 0 && System.currentTimeMillis() < deadline) {
                        ConsumerRecords<String, String> rs = c.poll(Duration.ofMillis(200));
                        for (ConsumerRecord<String, String> r : rs) {
                            seen.computeIfAbsent(r.offset(), k -> Collections.synchronizedList(new ArrayList<>())).add(name);
                            perConsumer.get(name).incrementAndGet();
                            if (!("v" + r.offset()).equals(r.value())) problems.add("offset " + r.offset() + " value " + r.value());
                            if (dc(r) != 1) problems.add("offset " + r.offset() + " delivery count " + dc(r));
                        }
                        if (!rs.isEmpty()) Thread.sleep(20); // some processing time per batch
                        if (seen.size() >= n) done.countDown();
                    }
                    // In implicit mode close() does not accept the last batch: Kafka 4.3.1's close sends
                    // ShareAcknowledge with session epoch -1 and no batches, and the broker releases
                    // what the member still holds. commitSync() accepts it first.
                    checkCommit(c.commitSync(Duration.ofSeconds(10)));
                } catch (Exception e) {
                    problems.add(name + ": " + e);
                }
            }, name);
            threads.add(t);
            t.start();
        }
        for (Thread t : threads) t.join();
        System.out.println("per consumer: " + perConsumer);
        if (!problems.isEmpty()) fail("problems: " + problems.subList(0, Math.min(5, problems.size())));
        if (seen.size() != n) fail("saw " + seen.size() + " of " + n + " offsets");
        List<String> dups = seen.entrySet().stream().filter(e -> e.getValue().size() > 1)
            .map(e -> e.getKey() + "=" + e.getValue()).limit(5).collect(Collectors.toList());
        if (!dups.isEmpty()) fail("records delivered more than once: " + dups);
        long busy = perConsumer.values().stream().filter(v -> v.get() > 0).count();
        if (busy < 2) fail("only " + busy + " consumer got records: " + perConsumer);
        expectOffsets(topic, group, -1, 0);
    }

    // ---- release-redeliver -------------------------------------------------------------------
    static void release(String topic, String group) throws Exception {
        final int n = 50;
        setup(topic, group, Map.of("share.auto.offset.reset", "earliest"), n);
        Set<Long> released = new TreeSet<>(), redelivered = new TreeSet<>(), accepted = new TreeSet<>(), rejected = new TreeSet<>();
        try (KafkaShareConsumer<String, String> c = consumer(group, topic + "-c",
                Map.of("share.acknowledgement.mode", "explicit", "max.poll.records", "10", "share.acquire.mode", "record_limit"))) {
            c.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 25000;
            while (accepted.size() + rejected.size() < n || redelivered.size() < released.size()) {
                if (System.currentTimeMillis() > deadline)
                    fail("timed out: released " + released + " redelivered " + redelivered + " accepted " + accepted.size() + " rejected " + rejected);
                ConsumerRecords<String, String> rs = c.poll(Duration.ofMillis(500));
                if (rs.isEmpty()) continue;
                boolean first = released.isEmpty();
                StringBuilder line = new StringBuilder("poll:");
                for (ConsumerRecord<String, String> r : rs) {
                    long o = r.offset();
                    short d = dc(r);
                    line.append(' ').append(o).append("/dc").append(d);
                    if (accepted.contains(o) || rejected.contains(o)) fail("offset " + o + " delivered again after it was " + (accepted.contains(o) ? "accepted" : "rejected"));
                    if (first) {
                        if (d != 1) fail("first delivery of " + o + " has delivery count " + d);
                        released.add(o);
                        c.acknowledge(r, AcknowledgeType.RELEASE);
                        line.append(":RELEASE");
                    } else if (released.contains(o)) {
                        if (d != 2) fail("released offset " + o + " came back with delivery count " + d + ", not 2");
                        if (!redelivered.add(o)) fail("released offset " + o + " came back twice");
                        accepted.add(o);
                        c.acknowledge(r, AcknowledgeType.ACCEPT);
                    } else {
                        if (d != 1) fail("offset " + o + " first delivered with delivery count " + d);
                        if (o % 7 == 3) { rejected.add(o); c.acknowledge(r, AcknowledgeType.REJECT); line.append(":REJECT"); }
                        else { accepted.add(o); c.acknowledge(r, AcknowledgeType.ACCEPT); }
                    }
                }
                System.out.println(line);
                checkCommit(c.commitSync(Duration.ofSeconds(10)));
            }
            System.out.println("released then redelivered (dc 2) and accepted: " + redelivered);
            System.out.println("rejected: " + rejected);
            if (released.isEmpty()) fail("nothing released");
            // Rejected (archived) and accepted records never come back.
            long until = System.currentTimeMillis() + 3000;
            while (System.currentTimeMillis() < until) {
                ConsumerRecords<String, String> rs = c.poll(Duration.ofMillis(500));
                for (ConsumerRecord<String, String> r : rs) fail("offset " + r.offset() + " (dc " + dc(r) + ") delivered again");
            }
        }
        if (rejected.isEmpty()) fail("nothing rejected");
        expectOffsets(topic, group, -1, 0);
    }

    // ---- lock-timeout ------------------------------------------------------------------------
    static void hold(String topic, String group, int n, boolean doSetup) throws Exception {
        if (doSetup) setup(topic, group, Map.of("share.auto.offset.reset", "earliest", "share.record.lock.duration.ms", "15000"), n);
        else produce(topic, n);
        KafkaShareConsumer<String, String> c = consumer(group, topic + "-hold-" + ProcessHandle.current().pid(),
            Map.of("share.acknowledgement.mode", "explicit", "max.poll.records", "10", "share.acquire.mode", "record_limit"));
        c.subscribe(List.of(topic));
        long deadline = System.currentTimeMillis() + 20000;
        while (System.currentTimeMillis() < deadline) {
            ConsumerRecords<String, String> rs = c.poll(Duration.ofMillis(500));
            if (rs.isEmpty()) continue;
            long now = System.currentTimeMillis();
            String offs = new TreeSet<>(rs.partitions().stream().flatMap(tp -> rs.records(tp).stream())
                .map(ConsumerRecord::offset).collect(Collectors.toList())).stream().map(String::valueOf).collect(Collectors.joining(","));
            for (ConsumerRecord<String, String> r : rs) if (dc(r) != 1) fail("held offset " + r.offset() + " has delivery count " + dc(r));
            System.out.println("lock timeout the client learned: " + c.acquisitionLockTimeoutMs());
            System.out.println("ACQUIRED " + now + " " + offs);
            System.out.flush();
            while (true) Thread.sleep(1000); // hold the records, never acknowledge: wait to be stopped/killed
        }
        fail("no records acquired within 20 s");
    }

    static void take(String topic, String group, long from, long to, String heldSpec, long t0, long minMs, long maxMs) throws Exception {
        Set<Long> held = Arrays.stream(heldSpec.split(",")).map(Long::parseLong).collect(Collectors.toCollection(TreeSet::new));
        Map<Long, Short> got = new TreeMap<>();
        Map<Long, Long> heldAt = new TreeMap<>();
        try (KafkaShareConsumer<String, String> c = consumer(group, topic + "-take-" + ProcessHandle.current().pid(),
                Map.of("share.acknowledgement.mode", "explicit"))) {
            c.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + maxMs + 10000;
            while (got.size() < to - from) {
                if (System.currentTimeMillis() > deadline) fail("timed out with " + got.size() + " of " + (to - from) + ": " + got.keySet());
                ConsumerRecords<String, String> rs = c.poll(Duration.ofMillis(200));
                long now = System.currentTimeMillis();
                for (ConsumerRecord<String, String> r : rs) {
                    long o = r.offset();
                    if (o < from || o >= to) fail("unexpected offset " + o);
                    if (got.put(o, dc(r)) != null) fail("offset " + o + " delivered twice");
                    if (held.contains(o)) heldAt.put(o, now - t0);
                    c.acknowledge(r, AcknowledgeType.ACCEPT);
                }
                if (!rs.isEmpty()) checkCommit(c.commitSync(Duration.ofSeconds(10)));
            }
        }
        System.out.println("delivery counts: " + got);
        System.out.println("held offsets arrived after (ms): " + heldAt);
        for (Map.Entry<Long, Short> e : got.entrySet()) {
            short want = (short) (held.contains(e.getKey()) ? 2 : 1);
            if (e.getValue() != want) fail("offset " + e.getKey() + " delivery count " + e.getValue() + ", expected " + want);
        }
        for (Map.Entry<Long, Long> e : heldAt.entrySet())
            if (e.getValue() < minMs || e.getValue() > maxMs)
                fail("held offset " + e.getKey() + " arrived " + e.getValue() + " ms after t0, expected between " + minMs + " and " + maxMs);
    }
}
