package serve

import (
	"errors"
	"io"
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/reconcile-p2p/reconcile/peer/sched"
	"github.com/reconcile-p2p/reconcile/peer/wire"
)

// MaxHave is the most indices one have frame carries.
const MaxHave = 4096

// HaveFrameMax bounds a have frame: its type, count and indices.
const HaveFrameMax = 1 + MaxVarint + MaxHave*MaxVarint

// serveWatch keeps the answered reconciliation stream ss as a watch: it
// sends a have frame of the blocks the store gains from the gain log's
// cursor on (and, for a super-seed's watcher sw, of the offers dealt to it),
// and reads the watcher's own have frames, until the watcher closes the
// stream or the content is no longer served (nil), the service closes or
// the stream fails.
func (p *Server) serveWatch(ss *Stream, cursor int, sw *sched.SuperWatch[lpeer.ID]) error {
	c := ss.C
	read := make(chan error, 1)
	if !p.goroutine(func() { read <- p.readWatcher(ss, sw) }) {
		return wire.ErrClosed
	}
	var wake <-chan struct{}
	// A super-seed's watch deals out offers a few times per hold when
	// nothing else happens (the offers of idle watchers expire).
	var tick <-chan time.Time
	if sw != nil {
		wake = sw.Wake
		t := p.clk.NewTicker(c.Super.Hold / 4)
		defer t.Stop()
		tick = t.Chan()
	}
	var idx []int
	var grew <-chan struct{}
	for {
		idx, cursor, grew = c.gainsSince(idx[:0], cursor)
		if sw != nil {
			idx = append(idx, c.Super.Take(sw)...)
		}
		for len(idx) > 0 {
			n := min(len(idx), MaxHave)
			if err := ss.Send(wire.AppendHave(nil, idx[:n])); err != nil {
				return err
			}
			idx = idx[n:]
			if len(idx) == 0 {
				if err := ss.Flush(); err != nil {
					return err
				}
			}
		}
		select {
		case <-grew:
		case <-wake:
		case <-tick:
			c.Super.Pump()
		case err := <-read:
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		case <-p.ctx.Done():
			return p.ctx.Err()
		case <-c.Closed():
			return nil // no longer served
		}
	}
}

// readWatcher reads the have frames of a watcher until its stream ends (a
// clean end is io.EOF), telling a super-seed (sw, if set) what it got.
func (p *Server) readWatcher(ss *Stream, sw *sched.SuperWatch[lpeer.ID]) error {
	limit := ss.C.Man.BlockCount()
	var idx []int
	for {
		// A watch is quiet while nothing happens: no read deadline.
		if err := ss.S.SetReadDeadline(time.Time{}); err != nil {
			return err
		}
		f, err := ss.R.Next(HaveFrameMax)
		if err != nil {
			return err
		}
		if idx, err = wire.DecodeHave(idx, f, MaxHave, limit); err != nil {
			return err
		}
		if sw != nil {
			ss.C.Super.Has(sw, idx)
		}
		ss.C.Tally.Have(ss.S.Conn().RemotePeer(), idx)
	}
}
