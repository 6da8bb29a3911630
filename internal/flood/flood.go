// Package flood loads a peer the way an attacker would, to test that it stays
// available: many identities, each holding streams of the reconcile
// protocols that trickle their first bytes, stay silent, claim large frames
// they never finish, ask for blocks they never read, ask for one block again
// and again, send malformed frames, or send valid filters with a fresh
// parameter set each time; or, on their own, write random bytes into
// streams as fast as they can and go on after they are banned (Junk). A
// stalling source (NewStaller) answers the manifest and the reconciliation
// honestly and never sends a block. The flood test of package peer and the
// `reconcile flood` command use it; it is meant for one's own peers only.
//
// Every attacker is a libp2p host of its own (a fresh identity) that dials
// only the target's addresses, from 127.0.0.1 or, with
// Config.SpreadLoopback, from an address of its own in 127.0.0.0/8.
package flood

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	lpeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-libp2p/p2p/muxer/yamux"
	libp2ptls "github.com/libp2p/go-libp2p/p2p/security/tls"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer"
	"github.com/reconcile-p2p/reconcile/peer/wire"
	"github.com/reconcile-p2p/reconcile/reconcile"
)

// Attack is one hostile behaviour of a stream.
type Attack uint8

const (
	// SlowHello opens a manifest stream and sends its hello one byte every
	// few seconds (a slowloris).
	SlowHello Attack = iota
	// SilentReconcile opens a reconcile stream, sends the hello and then
	// nothing.
	SilentReconcile
	// PartialFilter sends a reconcile frame that claims the largest filter
	// allowed and carries all of it but the last byte.
	PartialFilter
	// NoRead asks for every block on a blocks stream and never reads.
	NoRead
	// RepeatBlock asks for block 0 again and again, reading the answers.
	RepeatBlock
	// Malformed sends a hello and then garbage frames.
	Malformed
	// FreshParams sends valid complete-reconciliation filters of up to the
	// largest size allowed, cycling through more parameter sets (counter
	// counts m) than a server caches, so that a server that caches per
	// parameter set builds a new CBF(U) for almost every one.
	FreshParams
	// Junk writes random bytes into streams of the blocks, reconcile and
	// manifest protocols in turn as fast as it can, reading nothing: a
	// stream that is reset or refused is replaced at once, a connection
	// that is closed or refused is dialled again at once, and it goes on
	// after the target bans it (which the target does within a second:
	// the bytes are no frame). It is a flood of bandwidth rather than of
	// streams held, and not part of All.
	Junk
	numAttacks
)

var attackNames = [...]string{"slow-hello", "silent-reconcile", "partial-filter", "no-read", "repeat-block", "malformed", "fresh-params", "junk"}

// String returns the attack's name, as ParseAttack reads it.
func (a Attack) String() string {
	if a < numAttacks {
		return attackNames[a]
	}
	return fmt.Sprintf("attack(%d)", uint8(a))
}

// All lists the attacks a flood mixes by default: every attack but Junk,
// which floods with bytes rather than with streams held open and is run
// on its own.
func All() []Attack {
	out := make([]Attack, Junk)
	for i := range out {
		out[i] = Attack(i)
	}
	return out
}

// ParseAttack parses an attack's name.
func ParseAttack(s string) (Attack, error) {
	for i, n := range attackNames {
		if n == s {
			return Attack(i), nil
		}
	}
	return 0, fmt.Errorf("flood: unknown attack %q (want one of %v)", s, attackNames)
}

// Config is one flood.
type Config struct {
	// Target is the peer under attack.
	Target lpeer.AddrInfo
	// Manifest is the manifest of the content the target serves.
	Manifest *chunker.Manifest
	// Identities is the number of attacking hosts. Default 8.
	Identities int
	// Streams is the number of streams each identity keeps open. Default 8.
	Streams int
	// Attacks are the behaviours, dealt out to the identities in turn
	// (identity i runs Attacks[i % len]). Default: All().
	Attacks []Attack
	// MaxFilterBytes is the filter size the target accepts, for
	// PartialFilter. Default peer.DefaultLimits.MaxFilterBytes.
	MaxFilterBytes int
	// SpreadLoopback gives identity i an address of its own,
	// LoopbackSource(i), to listen on and so to dial from (libp2p's TCP
	// transport dials from the port it listens on), so that a target on
	// loopback sees the identities come from distinct addresses, as it
	// would on a network, and its bans by address can be tested. Linux
	// routes all of 127.0.0.0/8 to the loopback interface; other systems
	// may need the addresses added to it. Default: every identity dials
	// from 127.0.0.1.
	SpreadLoopback bool
}

// LoopbackSource is the address identity i dials from with
// Config.SpreadLoopback: 127.0.0.(2 + i mod 250), so 127.0.0.1 stays the
// legitimate peers' own.
func LoopbackSource(i int) string {
	return fmt.Sprintf("127.0.0.%d", 2+i%250)
}

// Stats counts what a flood did. Its fields are updated atomically while
// the flood runs.
type Stats struct {
	// Streams is the number of streams opened.
	Streams atomic.Int64
	// Refused is the number of streams the target refused or reset before
	// the attack's first write went through.
	Refused atomic.Int64
	// Blocks is the number of blocks received by RepeatBlock (its answers
	// of "missing" not counted).
	Blocks atomic.Int64
	// JunkBytes is the number of bytes Junk wrote into its streams (taken
	// by the stream; some of them may have been lost to a reset).
	JunkBytes atomic.Int64
	// Dials is the number of connections the identities made to the
	// target (a redial after the target closed one counts again).
	Dials atomic.Int64
	// DialErrors is the number of attempts to connect that failed (each
	// stream's: the streams of an identity that wait for the same dial
	// count its failure once each).
	DialErrors atomic.Int64
	// FirstDialError is the first of those errors (nil for none).
	FirstDialError atomic.Pointer[string]
}

// Run floods cfg.Target until ctx ends, then closes every attacking host.
// It returns an error only when no identity could be started at all.
func Run(ctx context.Context, cfg Config, st *Stats) error {
	if cfg.Manifest == nil {
		return errors.New("flood: no manifest")
	}
	if cfg.Identities <= 0 {
		cfg.Identities = 8
	}
	if cfg.Streams <= 0 {
		cfg.Streams = 8
	}
	if len(cfg.Attacks) == 0 {
		cfg.Attacks = All()
	}
	if cfg.MaxFilterBytes <= 0 {
		cfg.MaxFilterBytes = peer.DefaultLimits.MaxFilterBytes
	}
	fresh := &freshFilters{cfg: &cfg}
	junk := junkBytes()
	var wg sync.WaitGroup
	started := 0
	var firstErr error
	for i := range cfg.Identities {
		opts := []libp2p.Option{
			libp2p.NoListenAddrs,
			libp2p.Transport(tcp.NewTCPTransport),
			libp2p.Security(libp2ptls.ID, libp2ptls.New),
			libp2p.Muxer(yamux.ID, yamux.DefaultTransport),
			libp2p.ResourceManager(&network.NullResourceManager{}),
			libp2p.DisableRelay(),
			libp2p.DisableMetrics(),
		}
		if cfg.SpreadLoopback {
			opts[0] = libp2p.ListenAddrStrings("/ip4/" + LoopbackSource(i) + "/tcp/0")
		}
		h, err := libp2p.New(opts...)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		started++
		// Count the connections made, however they came (a Connect, or a
		// stream's own dial).
		h.Network().Notify(&network.NotifyBundle{ConnectedF: func(network.Network, network.Conn) { st.Dials.Add(1) }})
		a := attacker{h: h, cfg: &cfg, st: st, attack: cfg.Attacks[i%len(cfg.Attacks)], id: i, fresh: fresh, junk: junk}
		wg.Add(1)
		go func() {
			defer wg.Done()
			a.run(ctx)
			// A dial a lane asked for just before the end may still be
			// queued in the swarm's dial worker, which panics if the host
			// closes under it (libp2p/go-libp2p#1545): let it fail first.
			time.Sleep(closeGrace)
			h.Close()
		}()
	}
	if started == 0 {
		return fmt.Errorf("flood: could not start any attacking host: %w", firstErr)
	}
	wg.Wait()
	return nil
}

type attacker struct {
	h      host.Host
	cfg    *Config
	st     *Stats
	attack Attack
	id     int
	fresh  *freshFilters
	junk   []byte
}

// run keeps cfg.Streams streams of the attack open until ctx ends: a stream
// that ends is opened again after a short pause (at once for Junk).
func (a *attacker) run(ctx context.Context) {
	var wg sync.WaitGroup
	for lane := range a.cfg.Streams {
		r := rand.New(rand.NewPCG(uint64(a.id), uint64(lane)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			if a.attack == Junk {
				a.junkLane(ctx, lane, r)
				return
			}
			for ctx.Err() == nil {
				if !a.connect(ctx) {
					pause(ctx, time.Second)
					continue
				}
				a.stream(ctx, r)
				pause(ctx, 100*time.Millisecond)
			}
		}()
	}
	wg.Wait()
}

// connect connects to the target unless connected, and reports whether it
// is. Its errors are counted.
func (a *attacker) connect(ctx context.Context) bool {
	err := a.h.Connect(ctx, a.cfg.Target)
	if err != nil && ctx.Err() == nil {
		a.st.DialErrors.Add(1)
		msg := err.Error()
		a.st.FirstDialError.CompareAndSwap(nil, &msg)
	}
	return err == nil
}

// closeGrace is how long an attacking host stays open after its attack
// ends, for the dials in flight to finish (see Run).
const closeGrace = 250 * time.Millisecond

// junkProtocols are the protocols Junk writes into, in turn.
var junkProtocols = [...]protocol.ID{peer.ProtoBlocks, peer.ProtoReconcile, peer.ProtoManifest}

// junkWrite is the size of one write of Junk.
const junkWrite = 32 << 10

// junkBytes returns the random bytes Junk writes, shared by the attackers
// (which write them from random offsets): making new ones for every write
// would spend the attackers' CPU on randomness rather than on sending.
func junkBytes() []byte {
	b := make([]byte, 1<<20)
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], r.Uint64())
	}
	return b
}

// junkLane runs one of the identity's Junk streams until ctx ends: it
// opens a stream of the next protocol, writes junk into it until the
// target ends it or its connection, and starts again at once, dialling
// again if the connection is gone (past libp2p's dial backoff, which would
// otherwise refuse the redials for seconds).
func (a *attacker) junkLane(ctx context.Context, lane int, r *rand.Rand) {
	dial := network.WithForceDirectDial(ctx, "flood: junk redials at once")
	for n := lane; ctx.Err() == nil; n++ {
		if a.h.Network().Connectedness(a.cfg.Target.ID) != network.Connected && !a.connect(dial) {
			continue
		}
		s, err := a.h.NewStream(network.WithNoDial(ctx, "flood: dialled above"), a.cfg.Target.ID, junkProtocols[n%len(junkProtocols)])
		if err != nil {
			if ctx.Err() == nil && a.h.Network().Connectedness(a.cfg.Target.ID) == network.Connected {
				a.st.Refused.Add(1)
			}
			continue
		}
		a.st.Streams.Add(1)
		a.writeJunk(ctx, s, r)
	}
}

// writeJunk writes junk into s until the target ends it or ctx ends.
func (a *attacker) writeJunk(ctx context.Context, s network.Stream, r *rand.Rand) {
	stop := context.AfterFunc(ctx, func() { s.Reset() })
	defer stop()
	defer s.Reset()
	for first := true; ctx.Err() == nil; first = false {
		off := r.IntN(len(a.junk) - junkWrite)
		n, err := s.Write(a.junk[off : off+junkWrite])
		a.st.JunkBytes.Add(int64(n))
		if err != nil {
			if first && n == 0 && ctx.Err() == nil {
				a.st.Refused.Add(1)
			}
			return
		}
	}
}

func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// protocolOf is the protocol each attack speaks.
func protocolOf(a Attack) protocol.ID {
	switch a {
	case SlowHello:
		return peer.ProtoManifest
	case NoRead, RepeatBlock:
		return peer.ProtoBlocks
	default:
		return peer.ProtoReconcile
	}
}

// stream runs one stream of the attack until the target ends it or ctx ends.
func (a *attacker) stream(ctx context.Context, r *rand.Rand) {
	s, err := a.h.NewStream(ctx, a.cfg.Target.ID, protocolOf(a.attack))
	if err != nil {
		a.st.Refused.Add(1)
		return
	}
	a.st.Streams.Add(1)
	stop := context.AfterFunc(ctx, func() { s.Reset() })
	defer stop()
	defer s.Reset()
	root := a.cfg.Manifest.ID()
	hello := frame(wire.Hello{Root: root[:]}.Append(nil))
	bw := bufio.NewWriter(s)
	write := func(b []byte) error {
		if _, err := bw.Write(b); err != nil {
			return err
		}
		return bw.Flush()
	}
	if a.attack == SlowHello {
		for _, c := range hello {
			if err := write([]byte{c}); err != nil {
				a.st.Refused.Add(1)
				return
			}
			pause(ctx, 5*time.Second)
		}
		io.Copy(io.Discard, s)
		return
	}
	if err := write(hello); err != nil {
		a.st.Refused.Add(1)
		return
	}
	switch a.attack {
	case SilentReconcile:
		io.Copy(io.Discard, s) // until the target gives up on us
	case PartialFilter:
		n := a.cfg.MaxFilterBytes
		var lp [binary.MaxVarintLen64]byte
		l := binary.PutUvarint(lp[:], uint64(n))
		if err := write(lp[:l]); err != nil {
			return
		}
		chunk := make([]byte, 64<<10)
		for sent := 0; sent < n-1; {
			c := chunk[:min(len(chunk), n-1-sent)]
			if err := write(c); err != nil {
				return
			}
			sent += len(c)
		}
		io.Copy(io.Discard, s)
	case NoRead:
		all := make([]int, a.cfg.Manifest.BlockCount())
		for i := range all {
			all[i] = i
		}
		for i := 0; i < len(all); i += peer.DefaultLimits.MaxWant {
			if err := write(frame(wire.AppendWant(nil, all[i:min(len(all), i+peer.DefaultLimits.MaxWant)]))); err != nil {
				return
			}
		}
		<-ctx.Done() // hold the stream, read nothing
	case RepeatBlock:
		want := frame(wire.AppendWant(nil, []int{0}))
		fr := wire.NewReader(s)
		for ctx.Err() == nil {
			if err := write(want); err != nil {
				return
			}
			f, err := fr.Next(chunker.MaxBlockSize + 64)
			if err != nil {
				return
			}
			if _, data, ok, err := wire.DecodeBlock(f, a.cfg.Manifest.BlockCount()); err == nil && ok && len(data) > 0 {
				a.st.Blocks.Add(1) // a block, not an answer of missing
			}
		}
	case Malformed:
		junk := make([]byte, 64)
		for ctx.Err() == nil {
			for i := range junk {
				junk[i] = byte(r.Uint32())
			}
			if err := write(frame(junk)); err != nil {
				return
			}
			pause(ctx, 10*time.Millisecond)
		}
	case FreshParams:
		fr := wire.NewReader(s)
		msg, err := a.fresh.next()
		if err != nil {
			return
		}
		if err := write(msg); err != nil {
			return
		}
		fr.Next(a.cfg.MaxFilterBytes + 1<<20) // the answer, if any
	}
}

// freshFilters are the filters of FreshParams, shared by the attackers: a
// few more parameter sets than a server caches, sent in turn, cost the
// server as much as ever new ones and the attacker a few encodings.
type freshFilters struct {
	cfg  *Config
	mu   sync.Mutex
	msgs [][]byte
	i    int
}

// freshKinds is the number of parameter sets FreshParams cycles through.
const freshKinds = 12

// next returns the next filter message of the cycle, framed as sent (a
// payload frame): the attackers share the bytes and copy none of them, so
// their CPU and memory bandwidth go to the sending, as other machines' would.
func (f *freshFilters) next() ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.i++
	if len(f.msgs) < freshKinds {
		b, err := freshFilter(f.cfg, len(f.msgs))
		if err != nil {
			return nil, err
		}
		b = frame(append([]byte{wire.TypePayload}, b...))
		f.msgs = append(f.msgs, b)
		return b, nil
	}
	return f.msgs[f.i%len(f.msgs)], nil
}

// freshFilter returns the first message of a complete-reconciliation pull
// of an empty set, with the j-th of freshKinds counter counts between one
// and two times MaxFilterBytes (4-bit counters: up to the largest allowed).
func freshFilter(cfg *Config, j int) ([]byte, error) {
	n := cfg.Manifest.BlockCount()
	u, err := reconcile.NewUniverse(n)
	if err != nil {
		return nil, err
	}
	m := cfg.MaxFilterBytes + j*cfg.MaxFilterBytes/freshKinds
	s, err := reconcile.NewSession(uint64(j)+1, reconcile.Config{Method: reconcile.Complete, M: m, K: 4, OneWay: true}, u, reconcile.NewSet(n), nil)
	if err != nil {
		return nil, err
	}
	if err := s.Start(); err != nil {
		return nil, err
	}
	ms := s.Ready()
	if len(ms) == 0 {
		return nil, errors.New("flood: session sent nothing")
	}
	return ms[0].MarshalBinary()
}

// frame prefixes b with its uvarint length.
func frame(b []byte) []byte {
	out := binary.AppendUvarint(nil, uint64(len(b)))
	return append(out, b...)
}
