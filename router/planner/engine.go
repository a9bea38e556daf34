package planner

import (
	"context"
	"sync"
)

// Schedule is how a fan-out's legs run.
type Schedule uint8

// Schedules.
const (
	// Serial: one leg after the other on the calling goroutine (one leg
	// asked, or every asked leg served from a cache: nothing to overlap).
	Serial Schedule = iota
	// Chained: on the calling goroutine, overlapped. Each leg runs through
	// the chain as a single call does; its executor sends the leg's call
	// and then, before it reads the answer, calls FanOut.Continue, which
	// runs the next leg the same way. So every call is on the wire before
	// the first answer is read, the backends work in parallel, and no
	// goroutine, channel or cancellable context is made per leg.
	Chained
	// Parallel: a goroutine per leg (hedged reads, which race a second
	// attempt against a late one, and database list cache loads).
	Parallel
)

// Primitive is one executable shape of a plan (Vitess' engine primitives):
// Single, SplitLock, FanOut, LocalAnswer and Refuse. It runs against a
// Cursor and reaches lanes only through it.
type Primitive interface {
	Execute(ctx context.Context, c Cursor)
}

// Cursor is the executor's narrow view of one request: send an exchange
// through the policy chain to its lane, answer the client, record what
// happened. The router implements it (router/cursor.go); tests can give a
// plan one of their own.
type Cursor interface {
	// Run sends one exchange through the policy chain and the executor to
	// its lane: the plan's target (leg < 0) or fan-out leg i. It returns
	// an error the exchange did not answer: a refusal of the chain or a
	// failure of the lane's backend.
	Run(ctx context.Context, leg int) error
	// Fail answers the client for an error Run returned.
	Fail(err error)
	// Refuse answers a refusal the planner decided.
	Refuse(ref *Refusal)
	// Answer writes an answer the proxy gives itself.
	Answer(ctx context.Context, a Local)

	// Begin prepares a fan-out's legs and decides which are asked: under
	// routing.degraded-routing-policy=SAFE_FANOUT_READS a leg whose lane is
	// degraded, and not served from the database list cache, is left out
	// before anything is sent. It returns how many legs are asked and how
	// they are to be scheduled.
	Begin(f *FanOut) (asked int, s Schedule)
	// Asked reports whether leg i is asked (Begin did not leave it out).
	Asked(i int) bool
	// Tolerates reports whether a leg's failure leaves the leg out
	// (SAFE_FANOUT_READS: a failure of its lane's backend) instead of
	// failing the call.
	Tolerates(err error) bool
	// Merge answers the fan-out: the failure that ended it (err), or the
	// legs' lists merged in lane order, the omitted ones counted.
	Merge(f *FanOut, err error)
}

// Primitive is the plan's executable shape (the one Kind names).
func (p *Plan) Primitive() Primitive {
	switch p.Kind {
	case PlanSingle:
		if p.SplitLock {
			return SplitLock{&p.Single}
		}
		return &p.Single
	case PlanFanOut:
		return &p.FanOut
	case PlanLocal:
		return &p.LocalAnswer
	}
	return &p.Refuse
}

// Execute runs the plan.
func (p *Plan) Execute(ctx context.Context, c Cursor) { p.Primitive().Execute(ctx, c) }

// Execute sends the call to its target lane.
func (s *Single) Execute(ctx context.Context, c Cursor) {
	if err := c.Run(ctx, -1); err != nil {
		c.Fail(err)
	}
}

// SplitLock is a lock naming several catalogs. It runs as a Single on the
// default lane; the lock shim link of the chain splits it by catalog, judges
// each part's access mode, and takes the default catalog's part at its
// metastore.
type SplitLock struct{ *Single }

// Execute runs the split lock.
func (s SplitLock) Execute(ctx context.Context, c Cursor) { s.Single.Execute(ctx, c) }

// Execute answers locally.
func (l *LocalAnswer) Execute(ctx context.Context, c Cursor) { c.Answer(ctx, l.Local) }

// Execute answers the refusal.
func (r *Refuse) Execute(_ context.Context, c Cursor) { c.Refuse(r.Refusal) }

// Execute runs the fan-out's legs and merges their answers.
func (f *FanOut) Execute(ctx context.Context, c Cursor) {
	asked, s := c.Begin(f)
	var err error
	if asked > 0 {
		err = f.run(ctx, c, asked, s)
	}
	c.Merge(f, err)
}

// chain is the state of a Chained run: the fan-out's context and cursor,
// the next leg to start, and the failure that ends the run.
type chain struct {
	ctx   context.Context
	c     Cursor
	next  int
	first error
	on    bool
}

// Continue runs the legs not yet started, each through the cursor, the
// first failure the cursor does not tolerate ending the run. In a Chained
// run the executor of a leg calls it between sending the leg's call and
// reading its answer (so the legs after it are sent before that answer is
// read); a leg that returns without calling it (served from a cache,
// refused by a policy) leaves the rest to this loop. Outside a Chained run
// it does nothing.
func (f *FanOut) Continue() {
	ch := &f.chain
	for ch.on && ch.first == nil {
		i := ch.next
		for i < len(f.Legs) && !ch.c.Asked(i) {
			i++
		}
		if i == len(f.Legs) {
			ch.next = i
			return
		}
		ch.next = i + 1
		if err := ch.c.Run(ch.ctx, i); err != nil && !ch.c.Tolerates(err) && ch.first == nil {
			ch.first = err
		}
	}
}

// Chained reports whether a Chained run is under way: a leg's executor
// then sends its call, calls Continue and reads the answer after.
func (f *FanOut) Chained() bool { return f.chain.on }

// Failed is the failure that ended a Chained run (nil while it goes on):
// a leg whose answer is still unread when it is set discards its session
// instead of reading it.
func (f *FanOut) Failed() error { return f.chain.first }

// run runs the asked legs and returns the failure that fails the call: the
// first leg failure the cursor does not tolerate, which cancels the other
// legs.
func (f *FanOut) run(ctx context.Context, c Cursor, asked int, s Schedule) error {
	if asked == 1 || s == Serial { // nothing to overlap or cancel
		for i := range f.Legs {
			if c.Asked(i) {
				if err := c.Run(ctx, i); err != nil && !c.Tolerates(err) {
					return err
				}
			}
		}
		return nil
	}
	if s == Chained {
		f.chain = chain{ctx: ctx, c: c, on: true}
		f.Continue()
		err := f.chain.first
		f.chain = chain{}
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		once  sync.Once
		first error
	)
	run := func(i int) {
		if err := c.Run(ctx, i); err != nil && !c.Tolerates(err) {
			once.Do(func() { first = err; cancel() })
		}
	}
	last := -1
	for i := range f.Legs {
		if c.Asked(i) {
			last = i
		}
	}
	var wg sync.WaitGroup
	for i := range f.Legs {
		if !c.Asked(i) || i == last {
			continue
		}
		wg.Add(1)
		go func() { defer wg.Done(); run(i) }()
	}
	run(last)
	wg.Wait()
	return first
}
