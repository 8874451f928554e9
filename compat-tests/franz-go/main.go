// franz-roundtrip: produce N records (keys, headers, a null value) to a fresh
// single-partition topic with franz-go's kgo client, then read them back with
// direct partition consumption (ConsumePartitions, no consumer group) and
// compare. Exit code 0 on success.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func die(f string, a ...any) {
	fmt.Fprintf(os.Stderr, "franz-roundtrip: "+f+"\n", a...)
	os.Exit(1)
}

func main() {
	brokers := flag.String("brokers", "127.0.0.1:9092", "bootstrap")
	topic := flag.String("topic", "", "topic (created with 1 partition)")
	n := flag.Int("n", 1000, "records")
	codec := flag.String("codec", "none", "none|gzip|snappy|lz4|zstd")
	group848 := flag.String("group848", "", "run the KIP-848 group case with this group id")
	flag.Parse()
	if *group848 != "" && *topic != "" {
		runGroup848(*brokers, *topic, *group848, *n)
		return
	}
	if *topic == "" {
		die("-topic required")
	}
	var comp kgo.CompressionCodec
	switch *codec {
	case "none":
		comp = kgo.NoCompression()
	case "gzip":
		comp = kgo.GzipCompression()
	case "snappy":
		comp = kgo.SnappyCompression()
	case "lz4":
		comp = kgo.Lz4Compression()
	case "zstd":
		comp = kgo.ZstdCompression()
	default:
		die("unknown codec %q", *codec)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	admCl, err := kgo.NewClient(kgo.SeedBrokers(*brokers))
	if err != nil {
		die("client: %v", err)
	}
	adm := kadm.NewClient(admCl)
	resp, err := adm.CreateTopics(ctx, 1, 1, nil, *topic)
	if err != nil {
		die("create topic: %v", err)
	}
	if r := resp[*topic]; r.Err != nil {
		die("create topic %s: %v", *topic, r.Err)
	}
	adm.Close()

	prod, err := kgo.NewClient(
		kgo.SeedBrokers(*brokers),
		kgo.ProducerBatchCompression(comp),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.DefaultProduceTopic(*topic),
		kgo.ProducerLinger(5*time.Millisecond),
	)
	if err != nil {
		die("producer: %v", err)
	}
	want := make([]*kgo.Record, *n)
	for i := 0; i < *n; i++ {
		r := &kgo.Record{
			Key:       []byte(fmt.Sprintf("key-%d", i)),
			Value:     []byte(fmt.Sprintf("value-%d-%s", i, *codec)),
			Partition: 0,
			Headers: []kgo.RecordHeader{
				{Key: "h", Value: []byte(fmt.Sprint(i))},
				{Key: "h", Value: []byte("dup")},
			},
		}
		if i%100 == 7 {
			r.Value = nil // null value (tombstone)
		}
		want[i] = r
	}
	if err := prod.ProduceSync(ctx, want...).FirstErr(); err != nil {
		die("produce: %v", err)
	}
	prod.Close()

	cons, err := kgo.NewClient(
		kgo.SeedBrokers(*brokers),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
			*topic: {0: kgo.NewOffset().AtStart()},
		}),
	)
	if err != nil {
		die("consumer: %v", err)
	}
	defer cons.Close()
	var got []*kgo.Record
	for len(got) < *n {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			die("timeout: got %d of %d records", len(got), *n)
		}
		if errs := fs.Errors(); len(errs) > 0 {
			die("fetch: %v", errs[0].Err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, r) })
	}
	if len(got) != *n {
		die("got %d records, want %d", len(got), *n)
	}
	for i, g := range got {
		w := want[i]
		if g.Offset != int64(i) {
			die("record %d: offset %d", i, g.Offset)
		}
		if string(g.Key) != string(w.Key) || (g.Value == nil) != (w.Value == nil) || string(g.Value) != string(w.Value) {
			die("record %d: key/value mismatch: %q=%q", i, g.Key, g.Value)
		}
		if len(g.Headers) != 2 || g.Headers[0].Key != "h" || string(g.Headers[0].Value) != fmt.Sprint(i) ||
			g.Headers[1].Key != "h" || string(g.Headers[1].Value) != "dup" {
			die("record %d: headers %v", i, g.Headers)
		}
	}
	fmt.Printf("franz-go: %d records round-tripped (codec %s)\n", *n, *codec)
}
