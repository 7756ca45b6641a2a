package jobs

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/urlcheck/urlcheck/pkg/clock"
)

var allStates = []State{Splitting, Running, Summarizing, Done, Cancelled, Failed}

// newJob creates a job in state st and returns its ID.
func newJob(t *testing.T, s *Store, st State) string {
	t.Helper()
	id := jobID(t)
	if _, created, err := s.Create(testCtx(t), Job{ID: id, State: st, Name: "test"}); err != nil || !created {
		t.Fatalf("Create: created=%v err=%v", created, err)
	}
	return id
}

func get(t *testing.T, s *Store, id string) Job {
	t.Helper()
	j, err := s.Get(testCtx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func TestCreate(t *testing.T) {
	clk := clock.NewManual(epoch)
	s := testStore(t, clk)
	ctx := testCtx(t)
	exp := epoch.Add(7 * 24 * time.Hour)

	id := jobID(t)
	in := Job{ID: id, Source: "api", Key: "inbox/x.txt", ETag: `"e1"`, Name: "first", Expires: exp,
		Top: []DomainCount{{"a.example", 3}}}
	got, created, err := s.Create(ctx, in)
	if err != nil || !created {
		t.Fatalf("Create: created=%v err=%v", created, err)
	}
	want := in
	want.State, want.Created, want.Updated = Splitting, epoch, epoch
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Create returned\n %+v\nwant %+v", got, want)
	}
	if g := get(t, s, id); !reflect.DeepEqual(g, want) {
		t.Fatalf("Get returned\n %+v\nwant %+v", g, want)
	}

	clk.Advance(time.Minute)
	again, created, err := s.Create(ctx, Job{ID: id, Name: "second", State: Running})
	if err != nil || created {
		t.Fatalf("second Create: created=%v err=%v, want false, nil", created, err)
	}
	if !reflect.DeepEqual(again, want) {
		t.Fatalf("second Create returned\n %+v\nwant the existing %+v", again, want)
	}

	explicit := Job{ID: jobID(t), State: Running, Created: epoch.Add(-time.Hour), Updated: epoch.Add(-time.Minute)}
	if got, _, err := s.Create(ctx, explicit); err != nil || !reflect.DeepEqual(got, explicit) {
		t.Fatalf("Create with times: got %+v, %v; want %+v", got, err, explicit)
	}

	if _, _, err := s.Create(ctx, Job{}); err == nil {
		t.Fatal("Create with an empty ID: no error")
	}
}

func TestMissingJob(t *testing.T) {
	s := testStore(t, nil)
	ctx := testCtx(t)
	id := jobID(t)
	ops := map[string]func() error{
		"Get":        func() error { _, err := s.Get(ctx, id); return err },
		"Progress":   func() error { _, err := s.Progress(ctx, id); return err },
		"SetSent":    func() error { return s.SetSent(ctx, id, 1) },
		"SetSplit":   func() error { return s.SetSplit(ctx, id, 1, 0, 1, nil) },
		"Start":      func() error { _, err := s.Start(ctx, id, []int{1}); return err },
		"Transition": func() error { _, err := s.Transition(ctx, id, Running, Summarizing); return err },
		"Fail":       func() error { return s.Fail(ctx, id, "x") },
		"Cancel":     func() error { _, err := s.Cancel(ctx, id); return err },
		"Touch":      func() error { return s.Touch(ctx, id) },
		"markShard":  func() error { _, err := s.markShard(ctx, id, 0); return err },
	}
	for name, op := range ops {
		t.Run(name, func(t *testing.T) {
			err := op()
			if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), id) {
				t.Fatalf("err = %v, want ErrNotFound naming the job", err)
			}
		})
	}
	// None of them created a meta item.
	if _, err := s.Get(ctx, id); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after the calls, Get: %v", err)
	}
}

func TestTransition(t *testing.T) {
	tests := []struct {
		state    State // the job's state
		from, to State
		wantOK   bool
	}{
		{Running, Running, Summarizing, true},
		{Summarizing, Summarizing, Done, true},
		{Splitting, Running, Summarizing, false},
		{Summarizing, Running, Summarizing, false}, // someone else moved it
		{Cancelled, Running, Summarizing, false},
		{Running, Running, Failed, true},
	}
	for _, tc := range tests {
		t.Run(string(tc.state)+"/"+string(tc.from)+"->"+string(tc.to), func(t *testing.T) {
			clk := clock.NewManual(epoch)
			s := testStore(t, clk)
			id := newJob(t, s, tc.state)
			clk.Advance(time.Second)
			ok, err := s.Transition(testCtx(t), id, tc.from, tc.to)
			if err != nil || ok != tc.wantOK {
				t.Fatalf("Transition = %v, %v; want %v, nil", ok, err, tc.wantOK)
			}
			j := get(t, s, id)
			wantState, wantUpdated, wantFinished := tc.state, epoch, time.Time{}
			if tc.wantOK {
				wantState, wantUpdated = tc.to, epoch.Add(time.Second)
				if tc.to.Final() {
					wantFinished = wantUpdated
				}
			}
			if j.State != wantState || !j.Updated.Equal(wantUpdated) || !j.Finished.Equal(wantFinished) {
				t.Fatalf("after: state %s updated %v finished %v; want %s %v %v",
					j.State, j.Updated, j.Finished, wantState, wantUpdated, wantFinished)
			}
		})
	}
}

func TestCancel(t *testing.T) {
	tests := []struct {
		state        State
		wantConflict bool
	}{
		{Splitting, false},
		{Running, false},
		{Cancelled, false}, // idempotent
		{Summarizing, true},
		{Done, true},
		{Failed, true},
	}
	for _, tc := range tests {
		t.Run(string(tc.state), func(t *testing.T) {
			clk := clock.NewManual(epoch)
			s := testStore(t, clk)
			ctx := testCtx(t)
			id := newJob(t, s, tc.state)
			clk.Advance(time.Second)
			j, err := s.Cancel(ctx, id)
			if tc.wantConflict {
				if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), string(tc.state)) {
					t.Fatalf("Cancel: err = %v, want ErrConflict naming %s", err, tc.state)
				}
				if g := get(t, s, id); g.State != tc.state {
					t.Fatalf("state changed to %s", g.State)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			wantFinished := epoch.Add(time.Second)
			if tc.state == Cancelled {
				wantFinished = time.Time{} // created cancelled without a finish time, left alone
			}
			if j.State != Cancelled || j.ID != id || !j.Finished.Equal(wantFinished) {
				t.Fatalf("Cancel returned %+v; want cancelled, finished %v", j, wantFinished)
			}
			if g := get(t, s, id); !reflect.DeepEqual(g, j) {
				t.Fatalf("Get after Cancel = %+v, Cancel returned %+v", g, j)
			}
			// Cancelling again returns the same job.
			clk.Advance(time.Second)
			if again, err := s.Cancel(ctx, id); err != nil || !reflect.DeepEqual(again, j) {
				t.Fatalf("second Cancel = %+v, %v; want %+v", again, err, j)
			}
		})
	}
}

func TestFail(t *testing.T) {
	tests := []struct {
		state        State
		wantFailed   bool // the job ends failed with our reason
		wantConflict bool
	}{
		{Splitting, true, false},
		{Running, true, false},
		{Summarizing, true, false},
		{Failed, false, false}, // already failed: no-op
		{Done, false, true},
		{Cancelled, false, true},
	}
	for _, tc := range tests {
		t.Run(string(tc.state), func(t *testing.T) {
			clk := clock.NewManual(epoch)
			s := testStore(t, clk)
			id := newJob(t, s, tc.state)
			clk.Advance(time.Second)
			err := s.Fail(testCtx(t), id, "out of cheese")
			if tc.wantConflict != errors.Is(err, ErrConflict) || (!tc.wantConflict && err != nil) {
				t.Fatalf("Fail: err = %v, want conflict %v", err, tc.wantConflict)
			}
			j := get(t, s, id)
			if tc.wantFailed {
				if j.State != Failed || j.Error != "out of cheese" || !j.Finished.Equal(epoch.Add(time.Second)) {
					t.Fatalf("after Fail: %+v", j)
				}
			} else if j.State != tc.state || j.Error != "" {
				t.Fatalf("Fail changed the job: %+v", j)
			}
		})
	}
}

func TestSetSent(t *testing.T) {
	s := testStore(t, nil)
	ctx := testCtx(t)
	id := newJob(t, s, Splitting)
	steps := []struct{ set, want int }{{5, 5}, {3, 5}, {5, 5}, {9, 9}, {0, 9}}
	for _, st := range steps {
		if err := s.SetSent(ctx, id, st.set); err != nil {
			t.Fatalf("SetSent(%d): %v", st.set, err)
		}
		if j := get(t, s, id); j.Sent != st.want {
			t.Fatalf("after SetSent(%d): sent = %d, want %d", st.set, j.Sent, st.want)
		}
	}
	if err := s.SetSent(ctx, id, -1); err == nil {
		t.Fatal("SetSent(-1): no error")
	}
}

func TestSetSplitAndTouch(t *testing.T) {
	clk := clock.NewManual(epoch)
	s := testStore(t, clk)
	ctx := testCtx(t)
	id := newJob(t, s, Cancelled) // any state
	top := []DomainCount{{"a.example", 10}, {"b.example", 4}}
	clk.Advance(time.Second)
	if err := s.SetSplit(ctx, id, 20, 3, 14, top); err != nil {
		t.Fatal(err)
	}
	j := get(t, s, id)
	if j.Lines != 20 || j.Rejected != 3 || j.URLs != 14 || !reflect.DeepEqual(j.Top, top) || !j.Updated.Equal(epoch.Add(time.Second)) {
		t.Fatalf("after SetSplit: %+v", j)
	}
	if err := s.SetSplit(ctx, id, 21, 0, 15, nil); err != nil {
		t.Fatal(err)
	}
	if j := get(t, s, id); j.Lines != 21 || j.Rejected != 0 || j.URLs != 15 || j.Top != nil {
		t.Fatalf("after second SetSplit: %+v", j)
	}
	clk.Advance(time.Minute)
	if err := s.Touch(ctx, id); err != nil {
		t.Fatal(err)
	}
	if j := get(t, s, id); !j.Updated.Equal(epoch.Add(61*time.Second)) || j.State != Cancelled {
		t.Fatalf("after Touch: %+v", j)
	}
}

func TestClaim(t *testing.T) {
	clk := clock.NewManual(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	s := testStore(t, clk)
	ctx := testCtx(t)
	j, _, err := s.Create(ctx, Job{ID: "claim-1", State: Summarizing})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		state State
		seen  time.Time
		want  bool
	}{
		{"wrong state", Running, j.Updated, false},
		{"stale updated time", Summarizing, j.Updated.Add(-time.Second), false},
		{"first claim wins", Summarizing, j.Updated, true},
		{"second claim with the same view loses", Summarizing, j.Updated, false},
	}
	for _, tc := range tests {
		clk.Advance(time.Second) // every claim writes a new updated time
		got, err := s.Claim(ctx, "claim-1", tc.state, tc.seen)
		if err != nil || got != tc.want {
			t.Errorf("%s: Claim = %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
	if _, err := s.Claim(ctx, "no-such-job", Summarizing, time.Now()); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing job: err = %v, want ErrNotFound", err)
	}
}
