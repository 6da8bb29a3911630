package transitstub

import (
	"slices"

	"github.com/reconcile-p2p/reconcile/reconcile"
)

// The watch model's source side: requests answered or turned away busy,
// and blocks booked on the uplink in the order asked or (UploadRarest) the
// one fewest watchers hold first.

// serve answers, at the source, l's request for the blocks batch.
func (m *watchModel) serve(l *watchLink, batch []int32) {
	if m.left(l.src) {
		for _, i := range batch {
			m.lost(l, i)
		}
		return
	}
	sn := &m.nodes[l.src]
	now := m.sim.Now()
	// A fetcher has blocks queued while its last block asked has not left
	// the uplink, or (UploadRarest) some wait to be sent.
	queued := func(f int) bool { return sn.queued[f] > now || sn.pendingBy[f] > 0 }
	if !m.superSeeds(l.src) && !queued(l.fetcher) {
		others := 0
		for f := range sn.queued {
			if f != l.fetcher && queued(f) {
				others++
			}
		}
		for f, n := range sn.pendingBy {
			if _, counted := sn.queued[f]; !counted && f != l.fetcher && n > 0 {
				others++
			}
		}
		if others >= m.slots {
			m.sim.After(m.ctl(l.delay()), func() { m.busy(l, batch) })
			return
		}
	}
	if w := l.super; w != nil {
		w.active = max(w.active, now)
	}
	if m.rarestUp {
		for _, i := range batch {
			sn.pending = append(sn.pending, upReq{l, i})
			sn.pendingBy[l.fetcher]++
		}
		m.kick(l.src)
		return
	}
	for _, i := range batch {
		sn.queued[l.fetcher] = m.sendBlock(l, i)
	}
	if m.superSeeds(l.src) {
		m.pump(l.src, nil)
	}
}

// sendBlock sends block i from l's source to its fetcher, now, and returns
// when the source's uplink has sent it; a seed counts the send.
func (m *watchModel) sendBlock(l *watchLink, i int32) float64 {
	sn := &m.nodes[l.src]
	first := false
	if m.peers[l.src].seed {
		first = sn.sent[i] == 0
		if first {
			sn.unsent--
		}
		sn.sent[i]++
		if w := l.super; w != nil {
			sn.holds(w, i)
			w.got++
		}
	}
	m.res.BlocksSent++
	m.res.Bytes[reconcile.MsgBlocks.String()] += int64(m.blockLen)
	var done float64
	done = m.transfer(l.src, l.fetcher, l.route, m.blockLen, m.sim.Now(), func() {
		if m.left(l.src) && done > m.res.SeedLeftMS {
			// Still on the seed's uplink when it left: lost with its
			// streams.
			m.lost(l, i)
			return
		}
		m.arrived(l, i)
	})
	if w := l.super; w != nil {
		w.active = max(w.active, done)
	}
	if first {
		m.seedOut.sent(done)
	}
	return done
}

// upReq is a block asked for and not yet sent (UploadRarest).
type upReq struct {
	l *watchLink
	i int32
}

// kick sends, with UploadRarest, the next block of source src's uplink
// queue once the uplink is free: of the blocks asked for, the one fewest of
// its watchers hold (the first asked among those).
func (m *watchModel) kick(src int) {
	sn := &m.nodes[src]
	if sn.upBusy || len(sn.pending) == 0 {
		return
	}
	best, bestN := 0, -1
	for k, r := range sn.pending {
		n := 0
		for _, w := range sn.watchers {
			if m.peers[w.fetcher].set.Has(int(r.i)) {
				n++
			}
		}
		if bestN < 0 || n < bestN {
			best, bestN = k, n
		}
	}
	r := sn.pending[best]
	sn.pending = slices.Delete(sn.pending, best, best+1)
	sn.pendingBy[r.l.fetcher]--
	done := m.sendBlock(r.l, r.i)
	sn.queued[r.l.fetcher] = done
	sn.upBusy = true
	m.sim.At(done, func() {
		sn.upBusy = false
		m.kick(src)
	})
	if m.superSeeds(src) {
		m.pump(src, nil)
	}
}
