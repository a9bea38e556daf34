package restcatalog

import (
	"context"
	"strings"
	"sync"
)

// tableQueues serializes this proxy's own commits per table: a commit waits
// here for the previous one through this proxy to finish before it asks the
// metastore for the table's lock. The metastore lock still isolates it from
// every other writer (other proxies, Spark, Hive); the queue only keeps this
// proxy's writers from polling the metastore against each other.
type tableQueues struct {
	mu sync.Mutex
	m  map[string]*tableQueue
}

type tableQueue struct {
	ch   chan struct{} // capacity 1: holding the token is holding the queue
	refs int
}

func newTableQueues() *tableQueues { return &tableQueues{m: map[string]*tableQueue{}} }

// acquire waits for the table's turn; the answer releases it.
func (q *tableQueues) acquire(ctx context.Context, catalog, db, table string) (func(), error) {
	key := strings.ToLower(catalog + "\x00" + db + "\x00" + table)
	q.mu.Lock()
	tq := q.m[key]
	if tq == nil {
		tq = &tableQueue{ch: make(chan struct{}, 1)}
		q.m[key] = tq
	}
	tq.refs++
	q.mu.Unlock()
	drop := func() {
		q.mu.Lock()
		tq.refs--
		if tq.refs == 0 {
			delete(q.m, key)
		}
		q.mu.Unlock()
	}
	select {
	case tq.ch <- struct{}{}:
		return func() { <-tq.ch; drop() }, nil
	case <-ctx.Done():
		drop()
		return nil, ctx.Err()
	}
}
