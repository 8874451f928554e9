// Share groups (KIP-932) across a leader failover, with the Kafka 4.3.1 Java client: the case
// cluster.share.failover of cluster/share_failover.sh, on the 3-node cluster of cluster/cluster.sh.
//
// Usage: ShareFailover <bootstrap> <topic> <group> <cluster.sh> <n> <m> [leader|share-coordinator];
// exit 0 = pass.
//
// The group's share.auto.offset.reset=earliest is set before (kafka-configs --entity-type groups);
// this waits until the brokers show it. Then: an RF-3 topic of 1 partition (min.insync.replicas=2),
// n records produced with acks=all, one KafkaShareConsumer (explicit acknowledgement,
// max.poll.records=10, share.acquire.mode=record_limit) ACCEPTs each record it gets, slowly, and
// commits each poll's acknowledgements with commitSync. A record counts as accepted once its
// commitSync result for the partition carries no exception. When a third of the records are
// accepted, the partition leader is killed (`cluster.sh kill <id>`, SIGKILL) between two polls
// (so no acknowledgement is in flight); m more records are produced once a new leader is known.
// With share-coordinator, the node killed is instead the leader of the share-partition's
// __share_group_state partition (the share coordinator, where the acknowledged state lives; it
// may be the partition leader as well).
// Passes when:
//   - every one of the n + m records is accepted at least once (within 150 s);
//   - no record is delivered again once accepted: above all, none accepted before the failover
//     comes back after it (the new leader must have the acknowledged state, __share_group_state);
//   - every value is the one produced at that offset;
//   - after `cluster.sh restart <id>` of the killed node (while the consumer keeps polling for
//     another 5 s), nothing more is delivered and the group's lag is 0.
// It also prints which broker coordinated the share group and which one led the
// __share_group_state partition of the share-partition (the share coordinator: killing that one
// is a failover too), and how long the consumer waited for its first record after the kill.
import java.io.*;
import java.time.Duration;
import java.util.*;
import java.util.concurrent.*;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.*;

public class ShareFailover {
    static String bootstrap, clusterSh;
    static final long T0 = System.currentTimeMillis();
    static final long PER_RECORD_MS = 15; // "processing" time per record

    static void log(String s) {
        System.out.printf("[%6.1fs] %s%n", (System.currentTimeMillis() - T0) / 1000.0, s);
        System.out.flush();
    }

    static void fail(String msg) {
        log("ASSERTION FAILED: " + msg);
        System.exit(1);
    }

    static Admin admin() {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("request.timeout.ms", "10000");
        p.put("default.api.timeout.ms", "20000");
        return Admin.create(p);
    }

    static TopicPartitionInfo partition0(Admin a, String topic) throws Exception {
        TopicDescription d = a.describeTopics(List.of(topic)).allTopicNames().get(20, TimeUnit.SECONDS).get(topic);
        return d.partitions().get(0);
    }

    // cluster.sh COMMAND NODE, its output into ours; returns the started process.
    static Process cluster(String cmd, int node) throws IOException {
        return new ProcessBuilder("bash", clusterSh, cmd, String.valueOf(node))
            .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.INHERIT).start();
    }

    // Produces n records "<tag>-<i>" with acks=all; returns offset -> value.
    static Map<Long, String> produce(String topic, int n, String tag) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("acks", "all");
        p.put("enable.idempotence", "true");
        p.put("delivery.timeout.ms", "60000");
        Map<Long, String> out = new TreeMap<>();
        try (KafkaProducer<String, String> prod = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
            List<Future<RecordMetadata>> fs = new ArrayList<>();
            for (int i = 0; i < n; i++) fs.add(prod.send(new ProducerRecord<>(topic, 0, "k" + i, tag + "-" + i)));
            for (int i = 0; i < n; i++) out.put(fs.get(i).get().offset(), tag + "-" + i);
        }
        return out;
    }

    public static void main(String[] args) throws Exception {
        bootstrap = args[0];
        String topic = args[1], baseGroup = args[2];
        clusterSh = args[3];
        int n = Integer.parseInt(args[4]), m = Integer.parseInt(args[5]);
        String target = args.length > 6 ? args[6] : "leader";
        if (!target.equals("leader") && !target.equals("share-coordinator")) fail("unknown kill target " + target);
        Admin a = admin();

        FinalizedVersionRange sv = a.describeFeatures().featureMetadata().get()
            .finalizedFeatures().get("share.version");
        log("share.version finalized: " + sv);
        if ((sv == null || sv.maxVersionLevel() < 1) && "kafka".equals(System.getenv("CLUSTER_IMPL"))) {
            // cluster.sh's reference brokers are Kafka 4.1.2 unless CLUSTER_KAFKA_LIBS says otherwise
            System.out.println("SKIPPED: share.version not finalized on these Kafka brokers (4.1 has share groups only as"
                + " a preview); CLUSTER_KAFKA_LIBS=.cache/kafka-libs-latest runs Kafka 4.3.1");
            System.exit(77);
        }
        if (sv == null || sv.maxVersionLevel() < 1) fail("share.version is not finalized at 1 or above");

        a.createTopics(List.of(new NewTopic(topic, 1, (short) 3).configs(Map.of("min.insync.replicas", "2"))))
            .all().get(30, TimeUnit.SECONDS);
        TopicPartitionInfo pi = null;
        for (int i = 0; i < 150; i++) {
            try {
                pi = partition0(a, topic);
                if (pi.leader() != null && pi.isr().size() == 3) break;
            } catch (ExecutionException e) { /* not known yet */ }
            Thread.sleep(200);
        }
        if (pi == null || pi.leader() == null || pi.isr().size() != 3) fail("topic " + topic + " not led with ISR 3 after 30 s: " + pi);

        String group = baseGroup;
        if (target.equals("share-coordinator")) {
            group = groupApartFromLeader(a, topic, baseGroup, pi.leader().id());
            ConfigResource gr = new ConfigResource(ConfigResource.Type.GROUP, group);
            a.incrementalAlterConfigs(Map.of(gr, List.of(new AlterConfigOp(new ConfigEntry("share.auto.offset.reset", "earliest"),
                AlterConfigOp.OpType.SET)))).all().get(20, TimeUnit.SECONDS);
        }
        ConfigResource res = new ConfigResource(ConfigResource.Type.GROUP, group);
        for (int i = 0; ; i++) {
            ConfigEntry e = a.describeConfigs(List.of(res)).all().get().get(res).get("share.auto.offset.reset");
            if (e != null && "earliest".equals(e.value())) { log("group config share.auto.offset.reset=earliest (" + e.source() + ")"); break; }
            if (i == 50) fail("group config share.auto.offset.reset=earliest not shown after 10 s: " + e);
            Thread.sleep(200);
        }

        ConcurrentHashMap<Long, String> expected = new ConcurrentHashMap<>(produce(topic, n, "a"));
        if (!expected.keySet().equals(new HashSet<>(rangeOf(0, n)))) fail("first batch not at offsets 0.." + (n - 1) + ": " + new TreeSet<>(expected.keySet()));
        log("produced " + n + " records (acks=all) at offsets 0.." + (n - 1));

        Map<Long, Integer> deliveries = new TreeMap<>();      // offset -> times delivered
        Map<Long, Long> accepted = new TreeMap<>();           // offset -> ms (since T0) its commit was confirmed
        Set<Long> acceptedBeforeKill = new TreeSet<>();
        List<String> again = new ArrayList<>();               // deliveries of already accepted records
        List<String> problems = Collections.synchronizedList(new ArrayList<>());
        int killed = -1;
        long tKill = 0, firstAfterKill = -1;
        int deliveredAfterKill = 0, redeliveredAfterKill = 0, failedCommits = 0;
        AtomicBoolean produced2 = new AtomicBoolean(false);
        Thread producer2 = null;
        int total = n + m;

        Properties cp = new Properties();
        cp.put("bootstrap.servers", bootstrap);
        cp.put("group.id", group);
        cp.put("client.id", topic + "-share");
        cp.put("share.acknowledgement.mode", "explicit");
        cp.put("max.poll.records", "10");
        cp.put("share.acquire.mode", "record_limit");
        KafkaShareConsumer<String, String> c = new KafkaShareConsumer<>(cp, new StringDeserializer(), new StringDeserializer());
        c.subscribe(List.of(topic));
        long deadline = System.currentTimeMillis() + 150_000, nextReport = System.currentTimeMillis() + 5000;
        String lastPoll = "";
        while (accepted.size() < total || !produced2.get()) {
            long now = System.currentTimeMillis();
            if (now > deadline) break;
            if (now > nextReport) {
                nextReport = now + 5000;
                log("progress: " + accepted.size() + " of " + total + " accepted, " + deliveries.size() + " offsets delivered"
                    + (killed > 0 ? ", " + deliveredAfterKill + " deliveries since the kill" : "") + "; last poll " + lastPoll);
            }
            ConsumerRecords<String, String> rs = c.poll(Duration.ofMillis(500));
            if (rs.isEmpty()) continue;
            StringBuilder line = new StringBuilder();
            for (ConsumerRecord<String, String> r : rs) {
                long o = r.offset();
                short dc = r.deliveryCount().orElse((short) -1);
                line.append(' ').append(o).append("/dc").append(dc);
                deliveries.merge(o, 1, Integer::sum);
                if (killed > 0) {
                    deliveredAfterKill++;
                    if (dc > 1) redeliveredAfterKill++;
                    if (firstAfterKill < 0) {
                        firstAfterKill = System.currentTimeMillis() - tKill;
                        log("first record after the kill (offset " + o + ", delivery count " + dc + ") " + firstAfterKill + " ms after it");
                    }
                }
                if (accepted.containsKey(o)) {
                    String w = "offset " + o + " (delivery count " + dc + ") delivered again"
                        + (killed > 0 ? " after the failover" : "") + ", accepted at " + accepted.get(o) + " ms"
                        + (acceptedBeforeKill.contains(o) ? " BEFORE THE FAILOVER" : "");
                    again.add(w);
                    if (again.size() <= 5) log(w);
                }
                String want = expected.get(o);
                if (want == null) problems.add("offset " + o + " was never produced (value " + r.value() + ")");
                else if (!want.equals(r.value())) problems.add("offset " + o + " value " + r.value() + ", produced " + want);
                c.acknowledge(r, AcknowledgeType.ACCEPT);
                Thread.sleep(PER_RECORD_MS);
            }
            lastPoll = line.length() > 80 ? line.substring(0, 80) + " ..." : line.toString();
            Map<TopicIdPartition, Optional<KafkaException>> cr;
            try {
                cr = c.commitSync(Duration.ofSeconds(10));
            } catch (Exception e) {
                failedCommits++;
                log("commitSync threw (its records do not count as accepted):" + line + ": " + e);
                cr = Map.of();
            }
            long at = System.currentTimeMillis() - T0;
            for (Map.Entry<TopicIdPartition, Optional<KafkaException>> e : cr.entrySet()) {
                if (e.getValue().isPresent()) {
                    failedCommits++;
                    log("acknowledgement failed (its records do not count as accepted):" + line + ": " + e.getValue().get());
                    continue;
                }
                for (ConsumerRecord<String, String> r : rs.records(e.getKey().topicPartition())) accepted.putIfAbsent(r.offset(), at);
            }
            if (killed < 0 && accepted.size() >= n / 3) {
                TopicPartitionInfo before = partition0(a, topic);
                int leader = before.leader().id();
                log("before the kill: partition leader " + leader + ", replicas " + ids(before.replicas()) + ", ISR " + ids(before.isr()));
                int shareCoordinator = describeCoordinators(a, topic, group);
                if (target.equals("leader")) killed = leader;
                else if (shareCoordinator < 0) fail("cannot tell the share coordinator: no leader of this share-partition's __share_group_state partition");
                else killed = shareCoordinator;
                acceptedBeforeKill.addAll(accepted.keySet());
                log("accepted before the kill: " + acceptedBeforeKill.size() + " (" + ranges(acceptedBeforeKill) + ")");
                tKill = System.currentTimeMillis();
                log("killing node " + killed + " (" + (killed == leader ? "the partition leader" : "not the partition leader")
                    + (shareCoordinator < 0 ? ", share coordinator unknown" : killed == shareCoordinator ? ", the share coordinator" : ", not the share coordinator") + ")");
                int rc = cluster("kill", killed).waitFor();
                if (rc != 0) fail("cluster.sh kill " + killed + " exited " + rc);
                final int dead = killed;
                producer2 = new Thread(() -> {
                    try {
                        Admin a2 = admin();
                        TopicPartitionInfo now2 = null;
                        for (int i = 0; i < 300; i++) {
                            try {
                                now2 = partition0(a2, topic);
                                if (now2.leader() != null && now2.leader().id() != dead) break;
                            } catch (Exception e) { /* the admin client still finding its way */ }
                            Thread.sleep(200);
                        }
                        if (now2 == null || now2.leader() == null || now2.leader().id() == dead) {
                            problems.add("no new partition leader 60 s after the kill: " + now2);
                            return;
                        }
                        log("partition leader " + now2.leader().id() + " (ISR " + ids(now2.isr()) + ") "
                            + (System.currentTimeMillis() - tKillOf(dead)) + " ms after the kill");
                        a2.close();
                        Map<Long, String> more = produce(topic, m, "b");
                        expected.putAll(more);
                        log("produced " + m + " more records (acks=all) after the failover at offsets " + ranges(more.keySet()));
                        if (!more.keySet().equals(new HashSet<>(rangeOf(n, n + m)))) problems.add("second batch not at offsets " + n + ".." + (n + m - 1) + ": " + more.keySet());
                    } catch (Exception e) {
                        problems.add("producing after the failover: " + e);
                    } finally {
                        produced2.set(true);
                    }
                }, "producer-after-failover");
                KILL_TIMES.put(dead, tKill);
                producer2.start();
            }
        }
        if (producer2 != null) producer2.join(60_000);
        long done = System.currentTimeMillis();
        log("consumed: " + accepted.size() + " of " + total + " accepted, " + deliveries.size() + " offsets delivered, "
            + deliveries.values().stream().mapToInt(Integer::intValue).sum() + " deliveries in all; after the kill "
            + deliveredAfterKill + " deliveries (" + redeliveredAfterKill + " with delivery count > 1), "
            + failedCommits + " failed commits");

        if (killed > 0) {
            // Bring the node back while the consumer keeps polling: nothing accepted may come back.
            log("restarting node " + killed);
            Process rp = cluster("restart", killed);
            long until = Long.MAX_VALUE;
            while (System.currentTimeMillis() < until) {
                if (until == Long.MAX_VALUE && !rp.isAlive()) {
                    if (rp.exitValue() != 0) problems.add("cluster.sh restart " + killed + " exited " + rp.exitValue());
                    until = System.currentTimeMillis() + 5000;
                }
                if (System.currentTimeMillis() - done > 120_000) { problems.add("cluster.sh restart " + killed + " still running after 120 s"); break; }
                ConsumerRecords<String, String> rs = c.poll(Duration.ofMillis(500));
                for (ConsumerRecord<String, String> r : rs) {
                    long o = r.offset();
                    short dc = r.deliveryCount().orElse((short) -1);
                    String w = "offset " + o + " (delivery count " + dc + ") delivered again around the restart of node " + killed
                        + (accepted.containsKey(o) ? ", accepted at " + accepted.get(o) + " ms" : ", never accepted")
                        + (acceptedBeforeKill.contains(o) ? " BEFORE THE FAILOVER" : "");
                    again.add(w);
                    if (again.size() <= 10) log(w);
                    c.acknowledge(r, AcknowledgeType.ACCEPT);
                }
                if (!rs.isEmpty()) try { c.commitSync(Duration.ofSeconds(10)); } catch (Exception e) { log("commitSync: " + e); }
            }
            try { log("node " + killed + " is back; partition now " + describe(partition0(a, topic))); }
            catch (Exception e) { log("describeTopics after the restart: " + e); }
        }
        c.close(Duration.ofSeconds(10));

        // The group's lag: 0 once everything is accepted (Admin.listShareGroupOffsets).
        SharePartitionOffsetInfo info = null;
        for (int i = 0; i < 50; i++) {
            try {
                info = a.listShareGroupOffsets(Map.of(group, new ListShareGroupOffsetsSpec()))
                    .partitionsToOffsetInfo(group).get().get(new TopicPartition(topic, 0));
                if (info != null && info.lag().orElse(-1L) == 0) break;
            } catch (Exception e) { log("listShareGroupOffsets: " + e); }
            Thread.sleep(200);
        }
        log("group offsets: " + info);
        a.close();

        // Verdict.
        List<String> why = new ArrayList<>();
        if (killed < 0) why.add("never got to the kill: only " + accepted.size() + " of " + n + " accepted in 150 s");
        else if (firstAfterKill < 0) why.add("no record delivered after the kill of node " + killed + " (the consumer stalled)");
        Set<Long> missing = new TreeSet<>(expected.keySet());
        missing.removeAll(accepted.keySet());
        if (expected.size() < total) why.add("only " + expected.size() + " of " + total + " records produced");
        if (!missing.isEmpty()) why.add(missing.size() + " records never accepted: " + ranges(missing));
        long beforeAgain = again.stream().filter(s -> s.contains("BEFORE THE FAILOVER")).count();
        if (beforeAgain > 0) why.add(beforeAgain + " deliveries of records accepted before the failover came back after it");
        if (again.size() > beforeAgain) why.add((again.size() - beforeAgain) + " other deliveries of already accepted records");
        if (!again.isEmpty()) {
            Set<Long> offs = again.stream().map(s -> Long.parseLong(s.split(" ")[1])).collect(Collectors.toCollection(TreeSet::new));
            log("accepted records delivered again, offsets " + ranges(offs));
        }
        if (info == null || info.lag().orElse(-1L) != 0) why.add("group lag is not 0 at the end: " + info);
        synchronized (problems) { why.addAll(problems.subList(0, Math.min(5, problems.size()))); }
        if (!why.isEmpty()) fail(String.join("; ", why));
        log("OK share failover: " + total + " records accepted, none delivered again after it was accepted; node "
            + killed + " killed, first record " + firstAfterKill + " ms after the kill");
    }

    static final Map<Integer, Long> KILL_TIMES = new ConcurrentHashMap<>();
    static long tKillOf(int node) { return KILL_TIMES.getOrDefault(node, System.currentTimeMillis()); }

    // For the share-coordinator target: a group "<base>-<k>" whose share-partition state lives in
    // a __share_group_state partition not led by the topic partition's leader, so that killing the
    // share coordinator is a failover of its own. The base group if __share_group_state does not
    // exist yet (a fresh cluster: Kafka creates it for the first share-partition).
    static String groupApartFromLeader(Admin a, String topic, String base, int leader) throws Exception {
        TopicDescription s;
        try {
            s = a.describeTopics(List.of("__share_group_state")).allTopicNames().get(10, TimeUnit.SECONDS).get("__share_group_state");
        } catch (ExecutionException e) {
            log("no __share_group_state yet (" + e.getCause().getClass().getSimpleName() + "): group " + base
                + ", its share coordinator may be the partition leader");
            return base;
        }
        String topicId = a.describeTopics(List.of(topic)).allTopicNames().get(10, TimeUnit.SECONDS).get(topic).topicId().toString();
        for (int k = 0; k < 100; k++) {
            String g = base + "-" + k;
            String key = g + ":" + topicId + ":0";
            int h = key.hashCode(), p = (h == Integer.MIN_VALUE ? 0 : Math.abs(h)) % s.partitions().size();
            TopicPartitionInfo sp = s.partitions().get(p);
            if (sp.leader() != null && sp.leader().id() != leader) {
                log("group " + g + ": its share state in __share_group_state partition " + p + ", led by " + sp.leader().id()
                    + ", not by the partition leader " + leader);
                return g;
            }
        }
        log("no group found whose share coordinator is not the partition leader " + leader + "; group " + base);
        return base;
    }

    // Which broker coordinates the share group, and which leads the __share_group_state partition
    // of this share-partition (Kafka: abs("group:topicId:0".hashCode()) % partitions).
    // Returns that leader's id, or -1 if unknown.
    static int describeCoordinators(Admin a, String topic, String group) {
        try {
            ShareGroupDescription g = a.describeShareGroups(List.of(group)).describedGroups().get(group).get(10, TimeUnit.SECONDS);
            log("share group " + group + ": coordinator " + (g.coordinator() == null ? "?" : g.coordinator().id())
                + ", state " + g.groupState() + ", " + g.members().size() + " member(s)");
        } catch (Exception e) { log("describeShareGroups: " + e); }
        try {
            TopicDescription t = a.describeTopics(List.of(topic)).allTopicNames().get(10, TimeUnit.SECONDS).get(topic);
            TopicDescription s = a.describeTopics(List.of("__share_group_state")).allTopicNames().get(10, TimeUnit.SECONDS).get("__share_group_state");
            String key = group + ":" + t.topicId() + ":0";
            int h = key.hashCode(), p = (h == Integer.MIN_VALUE ? 0 : Math.abs(h)) % s.partitions().size();
            TopicPartitionInfo sp = s.partitions().get(p);
            log("__share_group_state (" + s.partitions().size() + " partitions): partition " + p + " (Kafka's for key "
                + key + ") " + describe(sp) + " -- its leader is the share coordinator");
            return sp.leader() == null ? -1 : sp.leader().id();
        } catch (Exception e) {
            Throwable t = e instanceof ExecutionException ? e.getCause() : e;
            log("__share_group_state: " + t.getClass().getSimpleName());
            return -1;
        }
    }

    static String describe(TopicPartitionInfo p) {
        return "leader " + (p.leader() == null ? "none" : p.leader().id()) + ", replicas " + ids(p.replicas()) + ", ISR " + ids(p.isr());
    }

    static String ids(List<org.apache.kafka.common.Node> ns) {
        return ns.stream().map(x -> String.valueOf(x.id())).collect(Collectors.joining(",", "[", "]"));
    }

    static List<Long> rangeOf(long from, long to) {
        List<Long> l = new ArrayList<>();
        for (long i = from; i < to; i++) l.add(i);
        return l;
    }

    // "0-99,120,130-139"
    static String ranges(Collection<Long> offsets) {
        StringBuilder b = new StringBuilder();
        long start = -2, prev = -2;
        for (long o : new TreeSet<>(offsets)) {
            if (o != prev + 1) {
                if (start >= 0) b.append(start == prev ? "" + start : start + "-" + prev).append(',');
                start = o;
            }
            prev = o;
        }
        if (start >= 0) b.append(start == prev ? "" + start : start + "-" + prev);
        return b.toString();
    }
}
