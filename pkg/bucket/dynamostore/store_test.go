package dynamostore

import (
	"context"
	"fmt"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/urlcheck/urlcheck/pkg/bucket"
	"github.com/urlcheck/urlcheck/pkg/bucket/buckettest"
)

// TestStoreContract runs the bucket.Store contract against DynamoDB (Local)
// at URLCHECK_DDB_ENDPOINT, in a table made for this run and deleted after.
func TestStoreContract(t *testing.T) {
	endpoint := os.Getenv("URLCHECK_DDB_ENDPOINT")
	if endpoint == "" {
		t.Skip("set URLCHECK_DDB_ENDPOINT (make test-aws starts DynamoDB Local)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client, err := NewClient(ctx, endpoint, "")
	if err != nil {
		t.Fatal(err)
	}
	table := fmt.Sprintf("urlcheck-buckets-test-%d", time.Now().UnixNano())
	if err := CreateTable(ctx, client, table); err != nil {
		t.Fatal(err)
	}
	// Creating it twice is tolerated.
	if err := CreateTable(ctx, client, table); err != nil {
		t.Fatalf("second CreateTable: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)}); err != nil {
			t.Errorf("deleting table %s: %v", table, err)
		}
	})
	store := New(client, table)
	buckettest.Run(t, func(*testing.T) bucket.Store { return store }, 16, 30)

	t.Run("missing table is an error, not a zero state", func(t *testing.T) {
		s := New(client, table+"-missing")
		if _, err := s.Load(ctx, "x.example"); err == nil || !strings.Contains(err.Error(), "x.example") {
			t.Fatalf("Load from a missing table: err = %v, want an error naming the domain", err)
		}
		if _, err := s.CompareAndSwap(ctx, "x.example", bucket.State{}); err == nil {
			t.Fatal("CompareAndSwap into a missing table: no error")
		}
	})
}

func TestItemRoundTrip(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 8000, time.UTC)
	tests := []struct {
		name string
		st   bucket.State
	}{
		{"zero fields", bucket.State{Version: 1}},
		{"every field", bucket.State{
			Version:     42,
			Bucket:      bucket.Bucket{Tokens: -2.5, Refilled: at},
			PausedUntil: at.Add(3 * time.Second),
			Learned:     bucket.Learned{Rate: 7.25, Ceiling: 9, Streak: 4, Cuts: 1, LastCut: at, BaseMS: 12.5, Signals: 3, Clean: 7},
			Leases:      []bucket.Lease{{ID: "w1-1", Slots: 2, Expires: at.Add(time.Minute)}, {ID: "w2-9", Slots: 1, Expires: at}},
		}},
		{"large version", bucket.State{Version: math.MaxInt64, Bucket: bucket.Bucket{Tokens: 1e-9}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			item, err := encodeItem("a.example", tc.st)
			if err != nil {
				t.Fatal(err)
			}
			if d := item[AttrDomain].(*types.AttributeValueMemberS).Value; d != "a.example" {
				t.Fatalf("domain attribute = %q", d)
			}
			if v := item[AttrVersion].(*types.AttributeValueMemberN).Value; v != fmt.Sprint(tc.st.Version) {
				t.Fatalf("version attribute = %q, want %d", v, tc.st.Version)
			}
			if blob := item[AttrState].(*types.AttributeValueMemberS).Value; !strings.Contains(blob, `"version":0,`) {
				t.Fatalf("state blob %s holds a version; the attribute should be the only copy", blob)
			}
			got, err := decodeItem(item)
			if err != nil {
				t.Fatal(err)
			}
			if err := same(got, tc.st); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestDecodeItem(t *testing.T) {
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	tests := []struct {
		name    string
		item    map[string]types.AttributeValue
		want    bucket.State
		wantErr string
	}{
		{name: "no item", item: nil, want: bucket.State{}},
		{name: "version only", item: map[string]types.AttributeValue{AttrDomain: s("a"), AttrVersion: n("3")}, want: bucket.State{Version: 3}},
		{name: "attribute wins over blob", item: map[string]types.AttributeValue{AttrVersion: n("5"), AttrState: s(`{"version":9,"bucket":{"Tokens":2}}`)},
			want: bucket.State{Version: 5, Bucket: bucket.Bucket{Tokens: 2}}},
		{name: "missing version", item: map[string]types.AttributeValue{AttrDomain: s("a")}, wantErr: `"version"`},
		{name: "string version", item: map[string]types.AttributeValue{AttrVersion: s("1")}, wantErr: `"version"`},
		{name: "non-integer version", item: map[string]types.AttributeValue{AttrVersion: n("1.5")}, wantErr: `"version"`},
		{name: "corrupt blob", item: map[string]types.AttributeValue{AttrVersion: n("1"), AttrState: s("{")}, wantErr: `"state"`},
		{name: "blob not a string", item: map[string]types.AttributeValue{AttrVersion: n("1"), AttrState: n("1")}, wantErr: `"state"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeItem(tc.item)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one mentioning %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := same(got, tc.want); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestEncodeItemRejectsNaN(t *testing.T) {
	if _, err := encodeItem("a.example", bucket.State{Bucket: bucket.Bucket{Tokens: math.NaN()}}); err == nil {
		t.Fatal("NaN tokens encoded without error")
	}
}

// same compares states field by field, times with Equal.
func same(got, want bucket.State) error {
	g, w := got, want
	if !g.Bucket.Refilled.Equal(w.Bucket.Refilled) || !g.PausedUntil.Equal(w.PausedUntil) || !g.Learned.LastCut.Equal(w.Learned.LastCut) {
		return fmt.Errorf("times differ: got %+v, want %+v", got, want)
	}
	g.Bucket.Refilled, w.Bucket.Refilled = time.Time{}, time.Time{}
	g.PausedUntil, w.PausedUntil = time.Time{}, time.Time{}
	g.Learned.LastCut, w.Learned.LastCut = time.Time{}, time.Time{}
	if len(g.Leases) != len(w.Leases) {
		return fmt.Errorf("leases: got %+v, want %+v", got.Leases, want.Leases)
	}
	for i := range g.Leases {
		if g.Leases[i].ID != w.Leases[i].ID || g.Leases[i].Slots != w.Leases[i].Slots || !g.Leases[i].Expires.Equal(w.Leases[i].Expires) {
			return fmt.Errorf("lease %d: got %+v, want %+v", i, g.Leases[i], w.Leases[i])
		}
	}
	g.Leases, w.Leases = nil, nil
	if !reflect.DeepEqual(g, w) {
		return fmt.Errorf("got %+v, want %+v", got, want)
	}
	return nil
}
