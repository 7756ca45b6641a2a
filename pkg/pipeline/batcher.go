package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/urlcheck/urlcheck/pkg/queue"
	"github.com/urlcheck/urlcheck/pkg/queue/sqsqueue"
)

// batchLinger is how long the batcher waits for more entries after the
// first before it sends a partial batch.
const batchLinger = 20 * time.Millisecond

// batcher gathers the re-sends and visibility changes of an invocation's
// messages into SendMessageBatch and ChangeMessageVisibilityBatch requests
// of up to 10 entries, sent within batchLinger. A re-send that fails fails
// its message (which then stays on the queue).
type batcher struct {
	d    *Deps
	ctx  context.Context
	ch   chan entry
	done chan struct{}
	mu   *sync.Mutex // guards outcome.err
}

type entry struct {
	o    *outcome
	send *sqsqueue.Outgoing
	vis  *sqsqueue.Visibility
}

func newBatcher(ctx context.Context, d *Deps) *batcher {
	b := &batcher{d: d, ctx: ctx, ch: make(chan entry, 64), done: make(chan struct{}), mu: &sync.Mutex{}}
	go b.run()
	return b
}

func (b *batcher) send(o *outcome, m sqsqueue.Outgoing)   { b.ch <- entry{o: o, send: &m} }
func (b *batcher) hide(o *outcome, v sqsqueue.Visibility) { b.ch <- entry{o: o, vis: &v} }

// close sends what is pending and waits for it.
func (b *batcher) close() {
	close(b.ch)
	<-b.done
}

func (b *batcher) run() {
	defer close(b.done)
	var pend []entry
	var timer <-chan time.Time
	for {
		select {
		case e, ok := <-b.ch:
			if !ok {
				b.flush(pend)
				return
			}
			pend = append(pend, e)
			if len(pend) >= sqsqueue.MaxSendBatch {
				b.flush(pend)
				pend, timer = nil, nil
			} else if timer == nil {
				timer = time.After(batchLinger)
			}
		case <-timer:
			b.flush(pend)
			pend, timer = nil, nil
		}
	}
}

func (b *batcher) flush(pend []entry) {
	var sends []sqsqueue.Outgoing
	var sendOwner []*outcome
	var vis []sqsqueue.Visibility
	for _, e := range pend {
		if e.send != nil {
			sends = append(sends, *e.send)
			sendOwner = append(sendOwner, e.o)
		} else {
			vis = append(vis, *e.vis)
		}
	}
	ctx := context.WithoutCancel(b.ctx)
	if len(sends) > 0 {
		for i, err := range b.d.Queue.SendEach(ctx, sends) {
			if err != nil {
				b.mu.Lock()
				if sendOwner[i].sendErr == nil {
					sendOwner[i].sendErr = fmt.Errorf("re-sending URLs: %w", err)
				}
				b.mu.Unlock()
			}
		}
	}
	if len(vis) > 0 {
		for _, err := range b.d.Queue.ChangeVisibilityEach(ctx, vis) {
			if err != nil && !errors.Is(err, queue.ErrReceiptInvalid) {
				// The message reappears after the queue's visibility timeout
				// instead of the bucket's wait: late, not lost.
				b.d.log().Warn("checker: hiding a message failed", "err", err)
			}
		}
	}
}
