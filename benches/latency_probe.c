/* Fixed-rate latency probe (issue 15, `benches/tail_latency.py`).
 *
 * A light load generator that measures its own load: one librdkafka producer sends records of
 * SIZE bytes to partitions 0..N-1 of TOPIC (round robin; N=1 unless -n N) at RATE records/s for
 * SECONDS, paced in 1 ms ticks (a sleeping producer, unlike `rdkafka_performance -r`, which
 * spins a core between messages above 1,000 records/s); one librdkafka consumer in the same
 * process reads those partitions from their end, through one queue. Each record carries its send time (CLOCK_MONOTONIC, ns) in its first 8 bytes, so
 * - ack latency = delivery report time - send time (what the producer waits for), and
 * - end-to-end latency = time the consumer gets the record - send time,
 * both on one clock. Samples of the first WARMUP seconds are dropped. Prints one JSON object:
 * the achieved rate and p50/p90/p99/p99.9/max of both, in microseconds.
 *
 * usage: latency_probe BROKERS TOPIC RATE SECONDS SIZE WARMUP [-n N] [-P k=v]... [-C k=v]...
 *   -n the number of partitions written and read, -P sets a producer property, -C a consumer
 *   property (librdkafka names).
 * Built against the librdkafka that benches/build-rdkafka-perf.sh builds. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rdkafka.h"

static int64_t now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Latency samples in microseconds, grown by doubling. */
struct samples {
        uint32_t *v;
        size_t n, cap;
};

static void samples_add(struct samples *s, int64_t us) {
        if (s->n == s->cap) {
                s->cap = s->cap ? s->cap * 2 : 1 << 16;
                s->v   = realloc(s->v, s->cap * sizeof(*s->v));
                if (!s->v) {
                        fprintf(stderr, "out of memory\n");
                        exit(1);
                }
        }
        s->v[s->n++] = us < 0 ? 0 : (us > UINT32_MAX ? UINT32_MAX : (uint32_t)us);
}

static int cmp_u32(const void *a, const void *b) {
        uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
        return x < y ? -1 : x > y;
}

static void samples_print(const char *name, struct samples *s) {
        static const struct {
                const char *key;
                double q;
        } qs[] = {{"p50", 0.5}, {"p90", 0.9}, {"p99", 0.99}, {"p999", 0.999}};
        qsort(s->v, s->n, sizeof(*s->v), cmp_u32);
        printf("\"%s_samples\":%zu", name, s->n);
        for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
                size_t at = (size_t)(qs[i].q * (double)s->n);
                if (at >= s->n)
                        at = s->n ? s->n - 1 : 0;
                printf(",\"%s_%s_us\":%u", name, qs[i].key, s->n ? s->v[at] : 0);
        }
        printf(",\"%s_max_us\":%u", name, s->n ? s->v[s->n - 1] : 0);
}

static struct samples acks, e2e;
static int64_t measure_from_ns, produce_until_ns;
static volatile int consumer_done;
static int64_t acked, failed, consumed;
static size_t record_size;

static int64_t stamp_of(const rd_kafka_message_t *m) {
        int64_t ts;
        if (m->len < sizeof(ts))
                return -1;
        memcpy(&ts, m->payload, sizeof(ts));
        return ts;
}

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
        (void)rk;
        (void)opaque;
        if (m->err) {
                if (failed++ < 5)
                        fprintf(stderr, "delivery failed: %s\n", rd_kafka_err2str(m->err));
                return;
        }
        acked++;
        int64_t sent = stamp_of(m);
        if (sent >= __atomic_load_n(&measure_from_ns, __ATOMIC_ACQUIRE))
                samples_add(&acks, (now_ns() - sent) / 1000);
}

static void set(rd_kafka_conf_t *conf, const char *kv) {
        char key[256], err[512];
        const char *eq = strchr(kv, '=');
        if (!eq || (size_t)(eq - kv) >= sizeof(key)) {
                fprintf(stderr, "bad property %s\n", kv);
                exit(2);
        }
        memcpy(key, kv, eq - kv);
        key[eq - kv] = 0;
        if (rd_kafka_conf_set(conf, key, eq + 1, err, sizeof(err)) != RD_KAFKA_CONF_OK) {
                fprintf(stderr, "%s\n", err);
                exit(2);
        }
}

static void *consume(void *arg) {
        rd_kafka_queue_t *queue = arg;
        /* One message at a time: rd_kafka_consume_batch waits to fill its batch, which would
         * add its own wait to every latency. */
        while (!consumer_done) {
                rd_kafka_message_t *m = rd_kafka_consume_queue(queue, 100);
                if (!m)
                        continue;
                int64_t t = now_ns();
                if (!m->err) {
                        __atomic_add_fetch(&consumed, 1, __ATOMIC_RELAXED);
                        int64_t sent = stamp_of(m);
                        if (sent >= __atomic_load_n(&measure_from_ns, __ATOMIC_ACQUIRE))
                                samples_add(&e2e, (t - sent) / 1000);
                }
                rd_kafka_message_destroy(m);
        }
        return NULL;
}

/* Delivery reports are served on their own thread, so an ack is timed when it arrives and not
 * at the producer's next 1 ms tick. */
static volatile int producer_done;
static void *serve_delivery_reports(void *arg) {
        rd_kafka_t *rk = arg;
        while (!producer_done)
                rd_kafka_poll(rk, 100);
        return NULL;
}

int main(int argc, char **argv) {
        if (argc < 7) {
                fprintf(stderr,
                        "usage: %s BROKERS TOPIC RATE SECONDS SIZE WARMUP [-n N] [-P k=v]... "
                        "[-C k=v]...\n",
                        argv[0]);
                return 2;
        }
        const char *brokers = argv[1], *topic = argv[2];
        double rate = atof(argv[3]), seconds = atof(argv[4]), warmup = atof(argv[6]);
        record_size = (size_t)atol(argv[5]);
        if (record_size < 8 || rate <= 0 || seconds <= warmup) {
                fprintf(stderr, "need SIZE >= 8, RATE > 0, SECONDS > WARMUP\n");
                return 2;
        }
        char err[512];
        rd_kafka_conf_t *pconf = rd_kafka_conf_new(), *cconf = rd_kafka_conf_new();
        rd_kafka_conf_set(pconf, "bootstrap.servers", brokers, err, sizeof(err));
        rd_kafka_conf_set(cconf, "bootstrap.servers", brokers, err, sizeof(err));
        set(cconf, "enable.partition.eof=false");
        int partitions = 1;
        for (int i = 7; i + 1 < argc; i += 2) {
                if (!strcmp(argv[i], "-n"))
                        partitions = atoi(argv[i + 1]);
                else if (!strcmp(argv[i], "-P"))
                        set(pconf, argv[i + 1]);
                else if (!strcmp(argv[i], "-C"))
                        set(cconf, argv[i + 1]);
                else {
                        fprintf(stderr, "unknown option %s\n", argv[i]);
                        return 2;
                }
        }
        rd_kafka_conf_set_dr_msg_cb(pconf, on_delivery);
        rd_kafka_t *producer = rd_kafka_new(RD_KAFKA_PRODUCER, pconf, err, sizeof(err));
        rd_kafka_t *consumer = rd_kafka_new(RD_KAFKA_CONSUMER, cconf, err, sizeof(err));
        if (!producer || !consumer) {
                fprintf(stderr, "rd_kafka_new: %s\n", err);
                return 1;
        }
        rd_kafka_topic_t *prkt = rd_kafka_topic_new(producer, topic, NULL);
        rd_kafka_topic_t *crkt = rd_kafka_topic_new(consumer, topic, NULL);
        if (partitions < 1) {
                fprintf(stderr, "need -n N >= 1\n");
                return 2;
        }
        rd_kafka_queue_t *queue = rd_kafka_queue_new(consumer);
        for (int p = 0; p < partitions; p++) {
                if (rd_kafka_consume_start_queue(crkt, p, RD_KAFKA_OFFSET_END, queue) == -1) {
                        fprintf(stderr, "consume_start: %s\n",
                                rd_kafka_err2str(rd_kafka_last_error()));
                        return 1;
                }
        }
        pthread_t reader;
        pthread_create(&reader, NULL, consume, queue);
        /* The consumer has to have resolved the end offset before the first record is sent:
         * give it a second (the first WARMUP seconds are not measured anyway). */
        struct timespec pause = {1, 0};
        nanosleep(&pause, NULL);

        pthread_t reporter;
        pthread_create(&reporter, NULL, serve_delivery_reports, producer);
        char *payload = calloc(1, record_size);
        int64_t start   = now_ns();
        /* The reader thread already runs: publish the start of measurement atomically. */
        __atomic_store_n(&measure_from_ns, start + (int64_t)(warmup * 1e9), __ATOMIC_RELEASE);
        produce_until_ns = start + (int64_t)(seconds * 1e9);
        int64_t sent = 0, queue_full = 0;
        struct timespec tick;
        clock_gettime(CLOCK_MONOTONIC, &tick);
        for (;;) {
                int64_t t = now_ns();
                if (t >= produce_until_ns)
                        break;
                int64_t due = (int64_t)((double)(t - start) * rate / 1e9) + 1;
                while (sent < due) {
                        int64_t stamp = now_ns();
                        memcpy(payload, &stamp, sizeof(stamp));
                        if (rd_kafka_produce(prkt, (int32_t)(sent % partitions),
                                             RD_KAFKA_MSG_F_COPY, payload, record_size, NULL, 0,
                                             NULL) == -1) {
                                queue_full++;
                                struct timespec ms = {0, 1000000};
                                nanosleep(&ms, NULL);
                                continue;
                        }
                        sent++;
                }
                tick.tv_nsec += 1000000;
                if (tick.tv_nsec >= 1000000000) {
                        tick.tv_nsec -= 1000000000;
                        tick.tv_sec++;
                }
                while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &tick, NULL) == EINTR)
                        ;
        }
        int64_t elapsed_ns = now_ns() - start;
        /* rd_kafka_flush would serve delivery reports on this thread too: wait for the
         * reporter to have seen every one instead. */
        int64_t flush_until = now_ns() + 30000000000LL;
        while (rd_kafka_outq_len(producer) > 0 && now_ns() < flush_until) {
                struct timespec ms = {0, 10000000};
                nanosleep(&ms, NULL);
        }
        producer_done = 1;
        pthread_join(reporter, NULL);
        rd_kafka_poll(producer, 0);
        int64_t wait_until = now_ns() + 10000000000LL;
        while (__atomic_load_n(&consumed, __ATOMIC_RELAXED) < acked && now_ns() < wait_until) {
                struct timespec ms = {0, 10000000};
                nanosleep(&ms, NULL);
        }
        consumer_done = 1;
        pthread_join(reader, NULL);
        for (int p = 0; p < partitions; p++)
                rd_kafka_consume_stop(crkt, p);
        rd_kafka_queue_destroy(queue);

        printf("{\"rate\":%.0f,\"partitions\":%d,\"seconds\":%.1f,\"size\":%zu,\"sent\":%" PRId64
               ",\"achieved_per_s\":%.0f,\"acked\":%" PRId64 ",\"failed\":%" PRId64
               ",\"consumed\":%" PRId64 ",\"queue_full\":%" PRId64 ",",
               rate, partitions, seconds, record_size, sent, (double)sent * 1e9 / (double)elapsed_ns, acked,
               failed, consumed, queue_full);
        samples_print("ack", &acks);
        printf(",");
        samples_print("e2e", &e2e);
        printf("}\n");

        rd_kafka_topic_destroy(prkt);
        rd_kafka_topic_destroy(crkt);
        rd_kafka_destroy(producer);
        rd_kafka_destroy(consumer);
        return failed || consumed < acked ? 1 : 0;
}
