package bucket

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// State is everything the Limiter keeps for one registrable domain, stored as
// one item so that one conditional write updates it atomically.
type State struct {
	Version     int64     `json:"version"` // compare-and-swap version; 0 = no item yet
	Bucket      Bucket    `json:"bucket"`
	PausedUntil time.Time `json:"paused_until,omitempty"` // no token is released before this (Retry-After)
	Learned     Learned   `json:"learned"`
	Leases      []Lease   `json:"leases,omitempty"` // in-flight slots
}

// Lease holds in-flight slots of a domain's concurrency cap until it is
// released or it expires, so that a crashed worker cannot leak slots.
type Lease struct {
	ID      string    `json:"id"`
	Slots   int       `json:"slots"`
	Expires time.Time `json:"expires"`
}

// ErrConflict is returned by Store.CompareAndSwap when the stored version is
// not the expected one.
var ErrConflict = errors.New("bucket: version conflict")

// Store keeps State items by domain with compare-and-swap semantics.
// Implementations must be safe for concurrent use.
type Store interface {
	// Load returns the domain's state, or a zero State (Version 0) when the
	// domain has none yet.
	Load(ctx context.Context, domain string) (State, error)
	// CompareAndSwap stores next if the stored version equals next.Version (0
	// meaning "no item"), with the version incremented, and returns what it
	// stored. On a version mismatch it returns the current state and an error
	// wrapping ErrConflict, so the caller can retry without another Load (as
	// DynamoDB's ReturnValuesOnConditionCheckFailure allows). Other errors are
	// the backend's, wrapped.
	CompareAndSwap(ctx context.Context, domain string, next State) (State, error)
}

// MemStore is the in-memory Store used by the local command.
type MemStore struct {
	mu    sync.Mutex
	items map[string]State
}

// NewMemStore returns an empty MemStore.
func NewMemStore() *MemStore { return &MemStore{items: map[string]State{}} }

// Load implements Store.
func (m *MemStore) Load(_ context.Context, domain string) (State, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return cloneState(m.items[domain]), nil
}

// CompareAndSwap implements Store.
func (m *MemStore) CompareAndSwap(_ context.Context, domain string, next State) (State, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur := m.items[domain]
	if cur.Version != next.Version {
		return cloneState(cur), fmt.Errorf("domain %q: have version %d, expected %d: %w", domain, cur.Version, next.Version, ErrConflict)
	}
	next = cloneState(next)
	next.Version++
	m.items[domain] = next
	return cloneState(next), nil
}

func cloneState(s State) State {
	if s.Leases != nil {
		s.Leases = append([]Lease(nil), s.Leases...)
	}
	return s
}

// Rates returns the learned rate of every domain in the store.
func (m *MemStore) Rates() map[string]Learned {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]Learned, len(m.items))
	for d, s := range m.items {
		out[d] = s.Learned
	}
	return out
}

// RatesFile is the file, under the user's cache directory, in which the local
// command keeps learned rates between runs: a JSON object mapping registrable
// domain to Learned.
func RatesFile() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("locating the cache directory: %w", err)
	}
	return filepath.Join(dir, "urlcheck", "rates.json"), nil
}

// LoadRates reads a rates file written by SaveRates. A missing file yields an
// empty map and no error; a corrupt one yields an error naming the file.
func LoadRates(path string) (map[string]Learned, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]Learned{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading learned rates: %w", err)
	}
	var m map[string]Learned
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("learned rates file %s is corrupt: %w", path, err)
	}
	return m, nil
}

// SaveRates writes rates to path atomically (temporary file and rename),
// creating the directory. Only the learned rate is kept, not bucket tokens.
func SaveRates(path string, rates map[string]Learned) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("saving learned rates: %w", err)
	}
	b, err := json.MarshalIndent(rates, "", " ")
	if err != nil {
		return fmt.Errorf("saving learned rates: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("saving learned rates: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("saving learned rates: %w", err)
	}
	return nil
}

// Seed stores learned rates as the starting state of domains that have no
// state yet (for rates carried over from an earlier job). Streaks, cut counts
// and timestamps are reset; only Rate, Ceiling and BaseMS carry over.
func (m *MemStore) Seed(rates map[string]Learned) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for d, l := range rates {
		if _, ok := m.items[d]; ok || l.Rate <= 0 {
			continue
		}
		m.items[d] = State{Version: 1, Learned: Learned{Rate: l.Rate, Ceiling: l.Ceiling, BaseMS: l.BaseMS}}
	}
}
