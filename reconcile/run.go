package reconcile

import (
	"errors"
	"fmt"
	"time"
)

// maxRunRounds bounds the round trips of Run (an IBLT session needs a few).
const maxRunRounds = 64

// Run drives two sessions over the same file to completion in memory: a starts,
// and every message is encoded, decoded with lim and delivered in order, as a
// network would, each side by its own [Driver]. It then fills in Missed on both
// outcomes from the sets the sessions started with, and Flights with the
// exchange's one-way flights: a round delivers everything A queued, then
// everything B queued, and counts a flight for each side that sent. Run is what tests, the table3 experiment and simulators that
// need real compute costs use; it times the compute of a session whose Config
// has no clock (Now) with time.Now.
func Run(a, b *Session, lim Limits) error {
	for _, s := range []*Session{a, b} {
		if s.now == nil {
			s.now = time.Now
		}
	}
	if err := a.Start(); err != nil {
		return err
	}
	var qa, qb memQueue // what a sent, what b sent
	da, db := NewDriver(a, &qa, lim), NewDriver(b, &qb, lim)
	if err := da.Flush(); err != nil {
		return err
	}
	flights := 0
	for round := 0; !(a.Done() && b.Done()); round++ {
		na, err := qa.deliver(db)
		if err != nil {
			return err
		}
		nb, err := qb.deliver(da)
		if err != nil {
			return err
		}
		flights += min(na, 1) + min(nb, 1)
		if na+nb == 0 || round > maxRunRounds {
			return fmt.Errorf("%w: exchange stalled", ErrState)
		}
	}
	if err := errors.Join(a.Err(), b.Err()); err != nil {
		return err
	}
	a.outcome.Flights, b.outcome.Flights = flights, flights
	a.outcome.Missed = b.orig.Difference(a.orig) - (a.outcome.Received - a.outcome.Redundant)
	if !a.cfg.OneWay {
		b.outcome.Missed = a.orig.Difference(b.orig) - (b.outcome.Received - b.outcome.Redundant)
	}
	return nil
}

// memQueue is an in-memory [Sender]: it keeps the encoded messages in order
// until deliver hands them to the peer's Driver.
type memQueue struct {
	msgs [][]byte
	free [][]byte // buffers of delivered messages, reused
}

// Send queues a copy of the encoded message.
func (q *memQueue) Send(_ *Message, encoded []byte) error {
	var b []byte
	if n := len(q.free); n > 0 {
		b, q.free = q.free[n-1][:0], q.free[:n-1]
	}
	q.msgs = append(q.msgs, append(b, encoded...))
	return nil
}

// Flush does nothing: deliver moves the queue.
func (q *memQueue) Flush() error { return nil }

// deliver hands the queued messages to d in order, stopping at the first error,
// and returns how many it delivered. Messages d's session sends meanwhile go to
// d's own queue.
func (q *memQueue) deliver(d *Driver) (int, error) {
	msgs := q.msgs
	q.msgs = nil
	for i, b := range msgs {
		err := d.Receive(b)
		q.free = append(q.free, b)
		if err != nil {
			return i + 1, err
		}
	}
	return len(msgs), nil
}
