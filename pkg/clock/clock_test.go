package clock

import (
	"context"
	"testing"
	"time"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestManualTimersFireInOrder(t *testing.T) {
	m := NewManual(epoch)
	t1 := m.NewTimer(2 * time.Second)
	t2 := m.NewTimer(5 * time.Second)
	m.Advance(time.Second)
	select {
	case <-t1.C():
		t.Fatal("timer fired before its deadline")
	default:
	}
	m.Advance(time.Second)
	if got := <-t1.C(); !got.Equal(epoch.Add(2 * time.Second)) {
		t.Fatalf("t1 fired at %v", got)
	}
	if !t2.Stop() {
		t.Fatal("stopping a pending timer reported false")
	}
	m.Advance(10 * time.Second)
	select {
	case <-t2.C():
		t.Fatal("stopped timer fired")
	default:
	}
}

func TestManualSleepHonoursContext(t *testing.T) {
	m := NewManual(epoch)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := m.Sleep(ctx, time.Hour); err == nil {
		t.Fatal("Sleep on a cancelled context returned nil")
	}
}

func TestScaledRunsFaster(t *testing.T) {
	s := NewScaled(epoch, 1000)
	start := time.Now()
	if err := s.Sleep(context.Background(), 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if wall := time.Since(start); wall > time.Second {
		t.Fatalf("2 simulated seconds at 1000x took %v of wall time", wall)
	}
	if got := s.Now().Sub(epoch); got < 2*time.Second {
		t.Fatalf("simulated time advanced only %v", got)
	}
	if got := s.Real(10 * time.Second); got != 10*time.Millisecond {
		t.Fatalf("Real(10s) = %v, want 10ms", got)
	}
	tm := s.NewTimer(time.Second)
	if at := <-tm.C(); at.Sub(epoch) < time.Second {
		t.Fatalf("timer fired at sim %v, before 1s", at.Sub(epoch))
	}
}
