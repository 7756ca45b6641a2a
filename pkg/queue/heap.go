package queue

// A binary min-heap of *msg ordered by visible-at time, then send order,
// with each message's index kept in msg.idx for O(log n) removal and fixing.
// Hand-written rather than container/heap to avoid interface calls on the
// receive path. All methods need q.mu held.

func (q *Mem) less(i, j int) bool {
	a, b := q.heap[i], q.heap[j]
	if a.visAt != b.visAt {
		return a.visAt < b.visAt
	}
	return a.seq < b.seq
}

func (q *Mem) swap(i, j int) {
	h := q.heap
	h[i], h[j] = h[j], h[i]
	h[i].idx = i
	h[j].idx = j
}

func (q *Mem) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !q.less(i, p) {
			return
		}
		q.swap(i, p)
		i = p
	}
}

// down sifts i down and reports whether it moved.
func (q *Mem) down(i int) bool {
	start, n := i, len(q.heap)
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && q.less(r, c) {
			c = r
		}
		if !q.less(c, i) {
			break
		}
		q.swap(i, c)
		i = c
	}
	return i > start
}

func (q *Mem) push(m *msg) {
	m.idx = len(q.heap)
	q.heap = append(q.heap, m)
	q.up(m.idx)
}

func (q *Mem) pop() *msg { return q.remove(0) }

func (q *Mem) remove(i int) *msg {
	n := len(q.heap) - 1
	m := q.heap[i]
	if i != n {
		q.swap(i, n)
	}
	q.heap[n] = nil
	q.heap = q.heap[:n]
	if i != n {
		q.fix(i)
	}
	m.idx = -1
	return m
}

func (q *Mem) fix(i int) {
	if !q.down(i) {
		q.up(i)
	}
}
