// franz-consume: franz-go (kgo) consumer for benches/compare.py's consumer rows (issue 15).
// Reads partition 0 of -topic from the beginning with direct partition consumption
// (ConsumePartitions: no group, nothing committed), counts -n records and prints one JSON
// line: {"records": n, "seconds": first record -> n-th record}. Fetch settings match the other
// consumer rows: fetch.max.wait 500 ms, fetch.min.bytes 1, fetch.max.bytes 52428800,
// max.partition.fetch.bytes 1048576.
//
// Built by compare.py on first use (go build, from the module cache or the Go proxy):
//   cd benches/franz_consume && go build -mod=readonly -o ../../compat-tests/.cache/bin/franz-consume .
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	brokers := flag.String("brokers", "127.0.0.1:9092", "bootstrap")
	topic := flag.String("topic", "", "topic to read (partition 0)")
	n := flag.Int("n", 1000000, "records to read")
	timeout := flag.Duration("timeout", 120*time.Second, "give up after")
	flag.Parse()
	if *topic == "" {
		fmt.Fprintln(os.Stderr, "franz-consume: -topic required")
		os.Exit(2)
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(*brokers),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{*topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(500*time.Millisecond),
		kgo.FetchMinBytes(1),
		kgo.FetchMaxBytes(52428800),
		kgo.FetchMaxPartitionBytes(1048576),
	)
	if err != nil {
		fmt.Fprintf(os.Stderr, "franz-consume: client: %v\n", err)
		os.Exit(1)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	got := 0
	var first time.Time
	for got < *n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			fmt.Fprintf(os.Stderr, "franz-consume: consumed %d of %d before the timeout\n", got, *n)
			os.Exit(1)
		}
		fs.EachError(func(t string, p int32, err error) {
			fmt.Fprintf(os.Stderr, "franz-consume: fetch error %s[%d]: %v\n", t, p, err)
		})
		c := fs.NumRecords()
		if c > 0 && first.IsZero() {
			first = time.Now()
		}
		got += c
	}
	secs := time.Since(first).Seconds()
	json.NewEncoder(os.Stdout).Encode(map[string]any{"records": got, "seconds": secs})
}
