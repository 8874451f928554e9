// group848: two kgo group consumers share a 4-partition topic with KIP-848 server-side
// balancing (kgo.ServerSideBalancer, ConsumerGroupHeartbeat v1); records are produced once
// both members own partitions, and every record must be read exactly once.
package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func runGroup848(brokers, topic, group string, n int) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	admCl, err := kgo.NewClient(kgo.SeedBrokers(brokers))
	if err != nil {
		die("client: %v", err)
	}
	adm := kadm.NewClient(admCl)
	if resp, err := adm.CreateTopics(ctx, 4, 1, nil, topic); err != nil || resp[topic].Err != nil {
		die("create topic: %v %v", err, resp[topic].Err)
	}

	var owned [2]atomic.Int32
	var mu sync.Mutex
	seen := map[string]int{}
	var total atomic.Int32
	clients := make([]*kgo.Client, 2)
	for i := range clients {
		i := i
		cl, err := kgo.NewClient(
			kgo.SeedBrokers(brokers),
			kgo.ConsumerGroup(group),
			kgo.ConsumeTopics(topic),
			kgo.ServerSideBalancer(),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
				owned[i].Add(int32(len(m[topic])))
			}),
			kgo.OnPartitionsRevoked(func(ctx context.Context, c *kgo.Client, m map[string][]int32) {
				owned[i].Add(-int32(len(m[topic])))
				_ = c.CommitMarkedOffsets(ctx)
			}),
			kgo.AutoCommitMarks(),
		)
		if err != nil {
			die("consumer %d: %v", i, err)
		}
		clients[i] = cl
	}
	var wg sync.WaitGroup
	counts := make([]int, 2)
	for i, cl := range clients {
		wg.Add(1)
		go func(i int, cl *kgo.Client) {
			defer wg.Done()
			for ctx.Err() == nil && int(total.Load()) < n {
				pctx, pcancel := context.WithTimeout(ctx, time.Second)
				fs := cl.PollFetches(pctx)
				pcancel()
				fs.EachRecord(func(r *kgo.Record) {
					mu.Lock()
					seen[string(r.Value)]++
					mu.Unlock()
					counts[i]++
					total.Add(1)
					cl.MarkCommitRecords(r)
				})
			}
		}(i, cl)
	}
	// Produce once both members own partitions (the group is balanced 2/2).
	for owned[0].Load() != 2 || owned[1].Load() != 2 {
		if ctx.Err() != nil {
			die("group never balanced: owned %d/%d", owned[0].Load(), owned[1].Load())
		}
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Printf("balanced: %d and %d partitions\n", owned[0].Load(), owned[1].Load())
	dg, err := adm.DescribeConsumerGroups(ctx, group)
	if err != nil {
		die("describe consumer group: %v", err)
	}
	d := dg[group]
	if d.Err != nil || len(d.Members) != 2 {
		die("describe %s: err %v, %d members", group, d.Err, len(d.Members))
	}
	fmt.Printf("described: state %s, epoch %d, %d members\n", d.State, d.Epoch, len(d.Members))
	prod, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.DefaultProduceTopic(topic))
	if err != nil {
		die("producer: %v", err)
	}
	var recs []*kgo.Record
	for i := 0; i < n; i++ {
		recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprintf("v%d", i))})
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		die("produce: %v", err)
	}
	prod.Close()
	wg.Wait()
	for _, cl := range clients {
		cl.Close()
	}
	adm.Close()
	if ctx.Err() != nil {
		die("timeout: %d of %d records", total.Load(), n)
	}
	for v, c := range seen {
		if c != 1 {
			die("record %s read %d times", v, c)
		}
	}
	if len(seen) != n || counts[0] == 0 || counts[1] == 0 {
		die("read %d distinct of %d (per member %v)", len(seen), n, counts)
	}
	fmt.Printf("franz-go KIP-848 group: %d records, per member %v, none twice\n", n, counts)
}
