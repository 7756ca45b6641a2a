package jobs

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/urlcheck/urlcheck/pkg/clock"
)

// span returns items lo..hi-1, each of class cls.
func span(lo, hi int, cls string) []Counted {
	out := make([]Counted, 0, hi-lo)
	for k := lo; k < hi; k++ {
		out = append(out, Counted{Key: k, Class: cls})
	}
	return out
}

func cat(parts ...[]Counted) []Counted {
	var out []Counted
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// checkShard reads shard's item and checks its invariant: done = |seen| =
// sum of the class counters.
func checkShard(t *testing.T, s *Store, id string, shard int) {
	t.Helper()
	out, err := s.client.GetItem(testCtx(t), &dynamodb.GetItemInput{
		TableName: aws.String(s.table), Key: key(id, shardSK(shard)), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	v, err := decodeShard(out.Item)
	if err != nil {
		t.Fatal(err)
	}
	seen, err := getNS(out.Item, attrSeen)
	if err != nil {
		t.Fatal(err)
	}
	sum := 0
	for _, c := range v.classes {
		sum += c
	}
	if v.done != len(seen) || v.done != sum {
		t.Fatalf("shard %d: done %d, |seen| %d, sum of classes %d: want all equal", shard, v.done, len(seen), sum)
	}
}

func TestRecordIdempotent(t *testing.T) {
	type call struct {
		shard int
		items []Counted
	}
	tests := []struct {
		name  string
		calls []call
	}{
		{"same keys twice", []call{{0, span(0, 10, "ok")}, {0, span(0, 10, "ok")}}},
		{"overlapping calls", []call{{0, span(0, 60, "ok")}, {0, span(40, 100, "not_found")}, {0, span(90, 130, "ok")}}},
		{"duplicate keys in one call", []call{{0, []Counted{{1, "ok"}, {1, "gone"}, {2, "gone"}, {2, "gone"}, {3, "ok"}, {1, "ok"}}}}},
		{"first class wins", []call{{0, []Counted{{5, "ok"}}}, {0, []Counted{{5, "not_found"}, {6, "not_found"}}}}},
		{"more than one chunk", []call{
			{0, cat(span(0, 120, "ok"), span(120, 250, "timeout"))},
			{0, cat(span(0, 250, "ok"), span(250, 260, "gone"))}, // 250 old keys, then 10 new in the third chunk
			{0, cat(span(255, 265, "ok"), span(100, 205, "ok"))}, // new keys in the first chunk only
		}},
		{"two shards", []call{{0, span(0, 30, "ok")}, {1, span(30, 50, "gone")}, {1, span(25, 40, "ok")}}},
		{"empty call", []call{{0, nil}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := testStore(t, nil)
			ctx := testCtx(t)
			id := newJob(t, s, Splitting)
			// The model: the first class recorded for each key of each shard.
			first := map[[2]int]string{}
			shards := map[int]bool{}
			for _, c := range tc.calls {
				complete, err := s.Record(ctx, id, c.shard, c.items)
				if err != nil || complete {
					t.Fatalf("Record = %v, %v; want false, nil (no Start yet)", complete, err)
				}
				for _, it := range c.items {
					if _, ok := first[[2]int{c.shard, it.Key}]; !ok {
						first[[2]int{c.shard, it.Key}] = it.Class
					}
				}
				shards[c.shard] = true
			}
			var wantClasses map[string]int
			for _, cls := range first {
				if wantClasses == nil {
					wantClasses = map[string]int{}
				}
				wantClasses[cls]++
			}
			p, err := s.Progress(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if p.Done != len(first) || p.Total != 0 || !reflect.DeepEqual(p.Classes, wantClasses) {
				t.Fatalf("Progress: done %d total %d classes %v; want %d, 0, %v", p.Done, p.Total, p.Classes, len(first), wantClasses)
			}
			for sh := range shards {
				if len(first) > 0 {
					checkShard(t, s, id, sh)
				}
			}
		})
	}
	t.Run("negative shard", func(t *testing.T) {
		s := testStore(t, nil)
		if _, err := s.Record(testCtx(t), "x", -1, span(0, 1, "ok")); err == nil {
			t.Fatal("no error")
		}
	})
}

// TestCompletion runs sequences of Start and Record on one job and checks
// which call reports complete=true.
func TestCompletion(t *testing.T) {
	type step struct {
		op       string // "start", "record", or "count" (a Record that dies before marking)
		shard    int
		items    []Counted
		totals   []int
		complete bool
		err      error
	}
	start := func(complete bool, totals ...int) step {
		return step{op: "start", totals: totals, complete: complete}
	}
	record := func(complete bool, shard int, items []Counted) step {
		return step{op: "record", shard: shard, items: items, complete: complete}
	}
	tests := []struct {
		name  string
		state State
		steps []step
	}{
		{"start then records", Splitting, []step{
			start(false, 3, 2),
			record(false, 0, span(0, 3, "ok")),
			record(true, 1, span(3, 5, "ok")),
			record(false, 1, span(3, 5, "ok")), // redelivery
			record(false, 0, span(0, 3, "ok")),
		}},
		{"records complete every shard before start", Splitting, []step{
			record(false, 0, span(0, 3, "ok")),
			record(false, 1, span(3, 5, "ok")),
			start(true, 3, 2),
			record(false, 1, span(3, 5, "ok")),
		}},
		{"one shard complete before start", Splitting, []step{
			record(false, 1, span(3, 5, "ok")),
			start(false, 3, 2),
			record(false, 0, span(0, 2, "ok")),
			record(true, 0, span(1, 3, "ok")),
		}},
		{"empty job", Splitting, []step{start(true)}},
		{"empty shard", Splitting, []step{
			start(false, 0, 2),
			record(true, 1, span(0, 2, "ok")),
		}},
		{"retried start", Splitting, []step{
			start(false, 1),
			start(false, 1),
			record(true, 0, span(0, 1, "ok")),
			start(false, 1),
		}},
		{"worker died after counting, before marking", Splitting, []step{
			start(false, 2),
			{op: "count", shard: 0, items: span(0, 2, "ok")},
			record(true, 0, span(0, 2, "ok")), // redelivered: nothing to count, but marks
		}},
		{"start on cancelled", Cancelled, []step{{op: "start", totals: []int{1}, err: ErrConflict}}},
		{"start on failed", Failed, []step{{op: "start", totals: []int{1}, err: ErrConflict}}},
		{"records on cancelled never complete", Splitting, []step{
			start(false, 1),
			{op: "cancel"},
			record(false, 0, span(0, 1, "ok")),
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := testStore(t, nil)
			ctx := testCtx(t)
			id := newJob(t, s, tc.state)
			for i, st := range tc.steps {
				var complete bool
				var err error
				switch st.op {
				case "start":
					complete, err = s.Start(ctx, id, st.totals)
				case "record":
					complete, err = s.Record(ctx, id, st.shard, st.items)
				case "count":
					_, err = s.count(ctx, id, st.shard, st.items)
				case "cancel":
					_, err = s.Cancel(ctx, id)
				}
				if complete != st.complete || !errors.Is(err, st.err) || (st.err == nil && err != nil) {
					t.Fatalf("step %d (%s): complete=%v err=%v; want %v, %v", i, st.op, complete, err, st.complete, st.err)
				}
			}
		})
	}
}

// TestRecordConcurrent has 8 goroutines record overlapping random subsets
// of two shards' keys (together covering all of them) while Start runs
// before, during or after them; exactly one call must report completion and
// the counts must be exact.
func TestRecordConcurrent(t *testing.T) {
	const (
		workers  = 8
		perShard = 400
	)
	classes := []string{"ok", "not_found", "timeout"}
	classOf := func(k int) string { return classes[k%len(classes)] }
	tests := []string{"start first", "start during", "start last"}
	for _, when := range tests {
		t.Run(when, func(t *testing.T) {
			s := testStore(t, clock.Real{})
			ctx := testCtx(t)
			id := newJob(t, s, Splitting)
			var completions atomic.Int32
			var mu sync.Mutex
			var errs []error
			note := func(what string, complete bool, err error) {
				if complete {
					completions.Add(1)
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("%s: %w", what, err))
					mu.Unlock()
				}
			}
			doStart := func() {
				c, err := s.Start(ctx, id, []int{perShard, perShard})
				note("Start", c, err)
			}
			if when == "start first" {
				doStart()
			}
			var wg sync.WaitGroup
			if when == "start during" {
				wg.Go(doStart)
			}
			for w := range workers {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(w), 42))
					for shard := range 2 {
						var mine []Counted
						for k := shard * 1000; k < shard*1000+perShard; k++ {
							if k%workers == w || rng.Float64() < 0.4 {
								mine = append(mine, Counted{Key: k, Class: classOf(k)})
							}
						}
						rng.Shuffle(len(mine), func(i, j int) { mine[i], mine[j] = mine[j], mine[i] })
						for len(mine) > 0 {
							n := min(len(mine), 10+rng.IntN(60))
							c, err := s.Record(ctx, id, shard, mine[:n])
							note(fmt.Sprintf("Record(shard %d)", shard), c, err)
							mine = mine[n:]
						}
					}
				})
			}
			wg.Wait()
			if when == "start last" {
				doStart()
			}
			if len(errs) > 0 {
				t.Fatal(errors.Join(errs...))
			}
			if got := completions.Load(); got != 1 {
				t.Fatalf("%d calls reported complete=true, want exactly 1", got)
			}
			p, err := s.Progress(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			wantClasses := map[string]int{}
			for shard := range 2 {
				for k := shard * 1000; k < shard*1000+perShard; k++ {
					wantClasses[classOf(k)]++
				}
				checkShard(t, s, id, shard)
			}
			if p.Done != 2*perShard || p.Total != 2*perShard || !reflect.DeepEqual(p.Classes, wantClasses) {
				t.Fatalf("Progress: done %d total %d classes %v; want %d, %d, %v", p.Done, p.Total, p.Classes, 2*perShard, 2*perShard, wantClasses)
			}
			if p.Job.State != Running || p.Job.Shards != 2 || p.Job.ShardsDone != 2 {
				t.Fatalf("job: %+v", p.Job)
			}
			if ok, err := s.Transition(ctx, id, Running, Summarizing); !ok || err != nil {
				t.Fatalf("Transition = %v, %v", ok, err)
			}
		})
	}
}

func TestProgress(t *testing.T) {
	clk := clock.NewManual(epoch)
	s := testStore(t, clk)
	ctx := testCtx(t)
	exp := epoch.Add(30 * 24 * time.Hour)
	id := jobID(t)
	if _, _, err := s.Create(ctx, Job{ID: id, Expires: exp}); err != nil {
		t.Fatal(err)
	}
	at := func(d time.Duration) time.Time { return epoch.Add(d) }
	steps := []struct {
		advance time.Duration
		do      func() error
		done    int
		total   int
		classes map[string]int
		last    time.Time
	}{
		{0, func() error { return nil }, 0, 0, nil, at(0)},
		{time.Second, func() error { return s.SetSplit(ctx, id, 5, 0, 5, nil) }, 0, 0, nil, at(time.Second)},
		{2 * time.Second, func() error { _, err := s.Record(ctx, id, 1, span(10, 12, "gone")); return err },
			2, 0, map[string]int{"gone": 2}, at(3 * time.Second)},
		{2 * time.Second, func() error { _, err := s.Record(ctx, id, 0, span(0, 2, "ok")); return err },
			4, 0, map[string]int{"gone": 2, "ok": 2}, at(5 * time.Second)},
		{time.Second, func() error { _, err := s.Start(ctx, id, []int{3, 2}); return err },
			4, 5, map[string]int{"gone": 2, "ok": 2}, at(6 * time.Second)},
		{time.Second, func() error { _, err := s.Record(ctx, id, 0, span(1, 3, "timeout")); return err },
			5, 5, map[string]int{"gone": 2, "ok": 2, "timeout": 1}, at(7 * time.Second)},
	}
	for i, st := range steps {
		clk.Advance(st.advance)
		if err := st.do(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		p, err := s.Progress(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if p.Done != st.done || p.Total != st.total || !reflect.DeepEqual(p.Classes, st.classes) || !p.LastProgress.Equal(st.last) {
			t.Fatalf("step %d: done %d total %d classes %v last %v; want %d %d %v %v",
				i, p.Done, p.Total, p.Classes, p.LastProgress, st.done, st.total, st.classes, st.last)
		}
	}
	// Start copied the TTL to the shard items.
	for shard := range 2 {
		out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: key(id, shardSK(shard))})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := getN(out.Item, attrExpires); err != nil || got != exp.Unix() {
			t.Fatalf("shard %d expires = %d, %v; want %d", shard, got, err, exp.Unix())
		}
	}
}

func TestCreateTableAgainEnablesTTL(t *testing.T) {
	s := testStore(t, nil)
	ctx := testCtx(t)
	if err := CreateTable(ctx, s.client, s.table); err != nil {
		t.Fatalf("CreateTable on an existing table: %v", err)
	}
	out, err := s.client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(s.table)})
	if err != nil {
		t.Fatal(err)
	}
	d := out.TimeToLiveDescription
	if d == nil || aws.ToString(d.AttributeName) != attrExpires || d.TimeToLiveStatus != types.TimeToLiveStatusEnabled {
		t.Fatalf("TTL description %+v, want enabled on %q", d, attrExpires)
	}
}
