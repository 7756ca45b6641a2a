package jobs

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/urlcheck/urlcheck/pkg/clock"
)

func TestStateFinal(t *testing.T) {
	tests := []struct {
		s    State
		want bool
	}{
		{Splitting, false}, {Running, false}, {Summarizing, false},
		{Done, true}, {Cancelled, true}, {Failed, true}, {"", false},
	}
	for _, tc := range tests {
		if got := tc.s.Final(); got != tc.want {
			t.Errorf("State(%q).Final() = %v, want %v", tc.s, got, tc.want)
		}
	}
}

func TestJobRoundTrip(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6_000_000, time.UTC) // whole milliseconds
	tests := []struct {
		name string
		job  Job
	}{
		{"minimal", Job{ID: "j1", State: Splitting}},
		{"every field", Job{
			ID: "j2", State: Running, Source: "inbox", Key: "inbox/a b.txt", ETag: `"abc"`, Name: "list",
			Created: at, Started: at.Add(time.Second), Finished: at.Add(2 * time.Second), Updated: at.Add(3 * time.Second),
			Lines: 10, Rejected: 2, URLs: 7, Shards: 3, ShardsDone: 1, Sent: 4,
			Top:   []DomainCount{{"a.example", 5}, {"b.example", 2}},
			Error: "boom", Expires: at.Add(time.Hour).Truncate(time.Second),
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			item, err := encodeJob(tc.job)
			if err != nil {
				t.Fatal(err)
			}
			if sk := item[attrSK].(*types.AttributeValueMemberS).Value; sk != skMeta {
				t.Fatalf("sk = %q", sk)
			}
			got, err := decodeJob(item)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.job) {
				t.Fatalf("round trip:\n got %+v\nwant %+v", got, tc.job)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name string
		item map[string]types.AttributeValue
		want string
	}{
		{"state not a string", map[string]types.AttributeValue{attrState: nv(1)}, `"state"`},
		{"lines not a number", map[string]types.AttributeValue{attrLines: sv("1")}, `"lines"`},
		{"fractional created", map[string]types.AttributeValue{attrCreated: &types.AttributeValueMemberN{Value: "1.5"}}, `"created"`},
		{"bad expires", map[string]types.AttributeValue{attrExpires: sv("x")}, `"expires"`},
		{"corrupt top", map[string]types.AttributeValue{attrTop: sv("[")}, `"top"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := decodeJob(tc.item); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("decodeJob: err = %v, want one naming %s", err, tc.want)
			}
		})
	}
	if _, err := decodeShard(map[string]types.AttributeValue{"c_ok": sv("1")}); err == nil {
		t.Fatal("decodeShard accepted a string class counter")
	}
	if _, err := getNS(map[string]types.AttributeValue{attrSeen: nv(1)}, attrSeen); err == nil {
		t.Fatal("getNS accepted a number")
	}
}

func TestDecodeShard(t *testing.T) {
	tests := []struct {
		name string
		item map[string]types.AttributeValue
		want shardView
	}{
		{"empty", nil, shardView{}},
		{"before Start", map[string]types.AttributeValue{attrDone: nv(3), "c_ok": nv(2), "c_not_found": nv(1), attrUpdated: nv(1000)},
			shardView{done: 3, classes: map[string]int{"ok": 2, "not_found": 1}, updated: time.UnixMilli(1000).UTC()}},
		{"zero total is set", map[string]types.AttributeValue{attrTotal: nv(0)}, shardView{totalSet: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeShard(tc.item)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	if !(shardView{totalSet: true}).complete() || (shardView{done: 5}).complete() || (shardView{totalSet: true, total: 2, done: 1}).complete() {
		t.Fatal("complete() is wrong")
	}
}

func TestDedupe(t *testing.T) {
	in := []Counted{{1, "ok"}, {2, "x"}, {1, "y"}, {3, "ok"}, {2, "ok"}}
	want := []Counted{{1, "ok"}, {2, "x"}, {3, "ok"}}
	if got := dedupe(in); !reflect.DeepEqual(got, want) {
		t.Fatalf("dedupe = %v, want %v", got, want)
	}
}

// TestCountInputLimits checks a full chunk's expressions against DynamoDB's
// limits (4 KB per expression, 300 operators and functions), which DynamoDB
// Local does not enforce, and that every placeholder is defined and used.
func TestCountInputLimits(t *testing.T) {
	s := New(nil, "t", clock.NewManual(epoch))
	var items []Counted
	classes := []string{"ok", "not_found", "gone", "server_error", "timeout", "dns", "tls", "redirect_loop", "forbidden", "other"}
	for i := range MaxRecordChunk {
		items = append(items, Counted{Key: 1_000_000 + i, Class: classes[i%len(classes)]})
	}
	in := s.countInput("job", 12345, items)
	cond, upd := *in.ConditionExpression, *in.UpdateExpression
	for _, e := range []string{cond, upd} {
		if len(e) > 4096 {
			t.Errorf("expression of %d bytes exceeds 4 KB: %.80s...", len(e), e)
		}
	}
	ops := 0
	for _, w := range []string{"contains(", "attribute_not_exists(", " OR ", " AND ", "NOT "} {
		ops += strings.Count(cond, w)
	}
	if ops > 300 {
		t.Errorf("condition has %d operators and functions, limit 300", ops)
	}
	all := cond + " " + upd
	for p := range in.ExpressionAttributeNames {
		if !strings.Contains(all, p) {
			t.Errorf("name placeholder %s unused", p)
		}
	}
	for p := range in.ExpressionAttributeValues {
		if !strings.Contains(all, p) {
			t.Errorf("value placeholder %s unused", p)
		}
	}
	if sk := in.Key[attrSK].(*types.AttributeValueMemberS).Value; sk != "shard#12345" {
		t.Errorf("sk = %q", sk)
	}
}
