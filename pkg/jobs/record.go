package jobs

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// MaxRecordChunk is the most keys one Record write carries. Its condition
// has one contains() per key; 100 keys keep it at about 200 operators and
// 2.5 KB, under DynamoDB's limits of 300 operators and 4 KB per expression.
const MaxRecordChunk = 100

// startParallel is how many shard items Start writes at once.
const startParallel = 8

// Record counts items of shard shard (0 <= shard; normally < the shards
// given to Start) of job id, idempotently: an item whose Key the shard has
// counted before is skipped, as is a repeated Key within items (the first
// occurrence's class counts). It writes one conditional UpdateItem per
// chunk of up to MaxRecordChunk new keys (more when a condition fails
// because a concurrent call counted some of them; see the package
// documentation), adding to the shard's seen, done, c_<class> and setting
// its updated to now.
//
// When afterwards the shard's total is set (Start has run) and done >=
// total, Record marks the shard complete on the meta item; it returns
// complete=true when that mark was the one that completed a running job. The
// caller must then call Transition(id, Running, Summarizing). At most one
// call per job (of Record and Start) returns true.
//
// Record does not read the meta item first: counting into a missing or
// final job is not detected (the counts are still idempotent). Errors are
// wrapped with the job and shard; a missing job surfaces as ErrNotFound only
// when Record tries to mark a shard.
func (s *Store) Record(ctx context.Context, id string, shard int, items []Counted) (complete bool, err error) {
	complete, _, err = s.RecordSeen(ctx, id, shard, items)
	return complete, err
}

// RecordSeen is Record that also returns the keys the shard had counted
// as of its last write (those of items included), at no extra cost: the
// write returns the item. Callers use it to skip work already done, such
// as the rest of a message that was delivered twice.
func (s *Store) RecordSeen(ctx context.Context, id string, shard int, items []Counted) (complete bool, seen []int, err error) {
	if shard < 0 {
		return false, nil, fmt.Errorf("jobs: job %q: negative shard %d", id, shard)
	}
	items = dedupe(items)
	if len(items) == 0 {
		return false, nil, nil
	}
	var last shardView
	for start := 0; start < len(items); start += MaxRecordChunk {
		v, err := s.count(ctx, id, shard, items[start:min(start+MaxRecordChunk, len(items))])
		if err != nil {
			return false, nil, err
		}
		last = v
	}
	if !last.complete() {
		return false, last.seen, nil
	}
	complete, err = s.markShard(ctx, id, shard)
	return complete, last.seen, err
}

// dedupe returns items without repeated keys, keeping the first of each.
func dedupe(items []Counted) []Counted {
	seen := make(map[int]struct{}, len(items))
	out := make([]Counted, 0, len(items))
	for _, it := range items {
		if _, dup := seen[it.Key]; dup {
			continue
		}
		seen[it.Key] = struct{}{}
		out = append(out, it)
	}
	return out
}

// count adds chunk (distinct keys, at most MaxRecordChunk) to shard's
// counters, skipping the keys the shard has seen already, and returns the
// shard as it is after: after the successful write, or as the failed
// condition returned it when every key had been seen already.
func (s *Store) count(ctx context.Context, id string, shard int, chunk []Counted) (shardView, error) {
	pending := chunk
	for {
		in := s.countInput(id, shard, pending)
		out, err := s.client.UpdateItem(ctx, in)
		if err == nil {
			v, err := decodeShard(out.Attributes)
			if err != nil {
				return shardView{}, fmt.Errorf("jobs: job %q %s: %w", id, shardSK(shard), err)
			}
			return v, nil
		}
		old, failed := conditionFailed(err)
		if !failed {
			return shardView{}, fmt.Errorf("jobs: counting %d items into job %q %s in table %s: %w",
				len(pending), id, shardSK(shard), s.table, err)
		}
		v, err := decodeShard(old)
		if err != nil {
			return shardView{}, fmt.Errorf("jobs: job %q %s: %w", id, shardSK(shard), err)
		}
		seenList, err := getNS(old, attrSeen)
		if err != nil {
			return shardView{}, fmt.Errorf("jobs: job %q %s: %w", id, shardSK(shard), err)
		}
		seen := make(map[int]struct{}, len(seenList))
		for _, k := range seenList {
			seen[k] = struct{}{}
		}
		rest := pending[:0:0]
		for _, it := range pending {
			if _, ok := seen[it.Key]; !ok {
				rest = append(rest, it)
			}
		}
		if len(rest) == len(pending) {
			// The condition failed, yet none of the keys is in the
			// returned seen set: the server did not return the old item.
			return shardView{}, fmt.Errorf("jobs: counting into job %q %s: condition failed but no key was seen before", id, shardSK(shard))
		}
		if len(rest) == 0 {
			return v, nil
		}
		pending = rest
	}
}

// countInput builds the UpdateItem that counts items (distinct keys) into
// shard on condition that none of their keys has been seen.
func (s *Store) countInput(id string, shard int, items []Counted) *dynamodb.UpdateItemInput {
	e := newExpr()
	seen := e.name(attrSeen)
	keys := make([]int, len(items))
	classes := map[string]int{}
	conds := make([]string, len(items))
	for i, it := range items {
		keys[i] = it.Key
		classes[it.Class]++
		conds[i] = "contains(" + seen + ", " + e.value(nv(int64(it.Key))) + ")"
	}
	var upd strings.Builder
	upd.WriteString("ADD " + seen + " " + e.value(nsv(keys...)) + ", " + e.name(attrDone) + " " + e.value(nv(int64(len(items)))))
	for _, c := range sortedKeys(classes) {
		upd.WriteString(", " + e.name(classPrefix+c) + " " + e.value(nv(int64(classes[c]))))
	}
	upd.WriteString(" SET " + e.name(attrUpdated) + " = " + e.value(nv(s.now())))
	cond := "attribute_not_exists(" + seen + ") OR NOT (" + strings.Join(conds, " OR ") + ")"
	return &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.table),
		Key:                                 key(id, shardSK(shard)),
		UpdateExpression:                    aws.String(upd.String()),
		ConditionExpression:                 aws.String(cond),
		ExpressionAttributeNames:            e.names,
		ExpressionAttributeValues:           e.vals(),
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
}

// markShard counts shard as complete on the meta item of job id, once:
// ADD shards_done 1 and done_shards {shard} on condition that the job exists
// and shard is not in done_shards yet. It returns true when the write
// succeeded and left the job running with shards_done >= shards. A shard
// marked before (by a concurrent or earlier call) returns false and no
// error; a missing job an error wrapping ErrNotFound.
func (s *Store) markShard(ctx context.Context, id string, shard int) (bool, error) {
	e := newExpr()
	ds := e.name(attrDoneShards)
	upd := "ADD " + e.name(attrShardsDone) + " " + e.value(nv(1)) + ", " + ds + " " + e.value(nsv(shard)) +
		" SET " + e.name(attrUpdated) + " = " + e.value(nv(s.now()))
	cond := exists(e) + " AND (attribute_not_exists(" + ds + ") OR NOT contains(" + ds + ", " + e.value(nv(int64(shard))) + "))"
	item, ok, err := s.update(ctx, id, e, upd, cond)
	if err != nil {
		return false, fmt.Errorf("jobs: marking job %q %s complete: %w", id, shardSK(shard), err)
	}
	if !ok {
		if len(item) == 0 {
			return false, fmt.Errorf("jobs: marking job %q %s complete: %w", id, shardSK(shard), ErrNotFound)
		}
		return false, nil
	}
	j, err := decodeJob(item)
	if err != nil {
		return false, fmt.Errorf("jobs: marking job %q %s complete: %w", id, shardSK(shard), err)
	}
	return j.State == Running && j.ShardsDone >= j.Shards, nil
}

// Start moves job id from Splitting to Running once its list is split:
// totals[i] is the number of items in progress shard i (each >= 0).
//
// It first reads the job: a cancelled or failed job is an error wrapping
// ErrConflict; a job already running, summarizing or done (a retried Start)
// is left alone and returns false with no error. Then it writes each shard's
// total (and the job's expires, when set) on the shard items, several at a
// time, marking the shards whose count already reached their total, and
// finally sets state running, shards = len(totals) and started = now on
// condition that the job is still splitting (if it was cancelled meanwhile,
// an error wrapping ErrConflict).
//
// complete=true means every shard is complete after this call (always so
// when totals is empty): the caller must then call Transition(id, Running,
// Summarizing). Together with Record, at most one call per job returns true.
func (s *Store) Start(ctx context.Context, id string, totals []int) (complete bool, err error) {
	for i, t := range totals {
		if t < 0 {
			return false, fmt.Errorf("jobs: starting job %q: shard %d has negative total %d", id, i, t)
		}
	}
	j, err := s.Get(ctx, id)
	if err != nil {
		return false, err // names the job; wraps ErrNotFound when missing
	}
	switch j.State {
	case Splitting:
	case Cancelled, Failed:
		return false, fmt.Errorf("jobs: starting job %q: it is %s: %w", id, j.State, ErrConflict)
	default:
		return false, nil
	}

	marked, err := s.writeTotals(ctx, id, totals, j.Expires.Unix(), !j.Expires.IsZero())
	if err != nil {
		return false, err
	}

	e := newExpr()
	now := e.value(nv(s.now()))
	upd := "SET " + e.name(attrState) + " = " + e.value(sv(string(Running))) +
		", " + e.name(attrShards) + " = " + e.value(nv(int64(len(totals)))) +
		", " + e.name(attrStarted) + " = " + now + ", " + e.name(attrUpdated) + " = " + now
	cond := e.name(attrState) + " = " + e.value(sv(string(Splitting)))
	item, ok, err := s.update(ctx, id, e, upd, cond)
	if err != nil {
		return false, fmt.Errorf("jobs: starting job %q: %w", id, err)
	}
	if !ok {
		switch st := stateOf(item); {
		case len(item) == 0:
			return false, fmt.Errorf("jobs: starting job %q: %w", id, ErrNotFound)
		case st == Cancelled || st == Failed:
			return false, fmt.Errorf("jobs: starting job %q: it is %s: %w", id, st, ErrConflict)
		default: // a concurrent Start won
			return marked, nil
		}
	}
	after, err := decodeJob(item)
	if err != nil {
		return false, fmt.Errorf("jobs: starting job %q: %w", id, err)
	}
	return marked || after.ShardsDone >= after.Shards, nil
}

// writeTotals sets the total (and expires, when withExpires) of every shard
// in totals, at most startParallel at a time, and marks the shards that are
// complete. It returns true if one of those marks completed the job (only
// possible when a concurrent Start has already moved it to running).
func (s *Store) writeTotals(ctx context.Context, id string, totals []int, expires int64, withExpires bool) (bool, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		firstErr error
		complete bool
		wg       sync.WaitGroup
	)
	sem := make(chan struct{}, startParallel)
	for i, total := range totals {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c, err := s.writeTotal(ctx, id, i, total, expires, withExpires)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = err
				cancel()
			}
			complete = complete || c
		}()
	}
	wg.Wait()
	if firstErr == nil && ctx.Err() != nil {
		firstErr = fmt.Errorf("jobs: starting job %q: %w", id, ctx.Err())
	}
	return complete, firstErr
}

// writeTotal sets shard's total (and expires) and marks it when complete.
func (s *Store) writeTotal(ctx context.Context, id string, shard, total int, expires int64, withExpires bool) (bool, error) {
	e := newExpr()
	upd := "SET " + e.name(attrTotal) + " = " + e.value(nv(int64(total)))
	if withExpires {
		upd += ", " + e.name(attrExpires) + " = " + e.value(nv(expires))
	}
	out, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key(id, shardSK(shard)),
		UpdateExpression:          aws.String(upd),
		ExpressionAttributeNames:  e.names,
		ExpressionAttributeValues: e.vals(),
		ReturnValues:              types.ReturnValueAllNew,
	})
	if err != nil {
		return false, fmt.Errorf("jobs: setting total of job %q %s: %w", id, shardSK(shard), err)
	}
	v, err := decodeShard(out.Attributes)
	if err != nil {
		return false, fmt.Errorf("jobs: job %q %s: %w", id, shardSK(shard), err)
	}
	if !v.complete() {
		return false, nil
	}
	return s.markShard(ctx, id, shard)
}
