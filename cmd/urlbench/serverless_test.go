package main

import (
	"context"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/urlcheck/urlcheck/pkg/awscalls"
)

func TestWasteCounter(t *testing.T) {
	batch := func(bodies ...string) *sqs.SendMessageBatchInput {
		in := &sqs.SendMessageBatchInput{}
		for _, b := range bodies {
			in.Entries = append(in.Entries, types.SendMessageBatchRequestEntry{MessageBody: aws.String(b)})
		}
		return in
	}
	tests := []struct {
		name      string
		records   []string // bodies delivered
		failed    []string // message IDs reported as failures
		sends     []any    // SQS inputs the handler sends
		wantFail  int64    // failures counted
		wantRecyc int64    // recycles counted
	}{
		{"all checked", []string{"a", "b"}, nil, nil, 0, 0},
		{"one hidden", []string{"a", "b"}, []string{"m1"}, nil, 1, 0},
		{"recycled and partial re-send", []string{"a", "b"}, nil,
			[]any{batch("a", "b-rest"), &sqs.SendMessageInput{MessageBody: aws.String("zzz")}}, 0, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := &wasteCounter{inFlight: map[string]int{}}
			var ev events.SQSEvent
			for i, b := range tc.records {
				ev.Records = append(ev.Records, events.SQSMessage{MessageId: "m" + string(rune('0'+i)), Body: b})
			}
			h := w.wrap(func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
				for _, in := range tc.sends {
					w.onCall(awscalls.Call{Service: awscalls.SQS, Input: in})
				}
				var resp events.SQSEventResponse
				for _, id := range tc.failed {
					resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: id})
				}
				return resp, nil
			})
			if _, err := h(context.Background(), ev); err != nil {
				t.Fatal(err)
			}
			if got := w.failures.Load(); got != tc.wantFail {
				t.Errorf("failures = %d, want %d", got, tc.wantFail)
			}
			if got := w.recycled.Load(); got != tc.wantRecyc {
				t.Errorf("recycled = %d, want %d", got, tc.wantRecyc)
			}
			if w.records.Load() != int64(len(tc.records)) || w.invocations.Load() != 1 || w.active.Load() != 0 || len(w.inFlight) != 0 {
				t.Errorf("records %d, invocations %d, active %d, in flight %v", w.records.Load(), w.invocations.Load(), w.active.Load(), w.inFlight)
			}
		})
	}
}

func TestSkippedServerless(t *testing.T) {
	rs := skippedServerless(serverlessName)
	if len(rs) != len(serverlessFigures) {
		t.Fatalf("%d rows, want %d", len(rs), len(serverlessFigures))
	}
	for _, r := range rs {
		if r.value != "skipped (no local AWS servers)" || r.name != serverlessName {
			t.Errorf("row %+v", r)
		}
	}
}
