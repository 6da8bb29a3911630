package peer

import (
	"errors"
	"fmt"
	"time"

	lpeer "github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/reconcile-p2p/reconcile/peer/swarm"
	"github.com/reconcile-p2p/reconcile/reconcile"
)

// FetchOption configures Fetch.
type FetchOption func(*swarm.FetchConfig) error

// newFetchConfig applies opts to the defaults.
func newFetchConfig(opts []FetchOption) (swarm.FetchConfig, error) {
	fc := swarm.FetchConfig{Method: reconcile.Complete, NoPeer: 10 * time.Second}
	for _, o := range opts {
		if err := o(&fc); err != nil {
			return fc, err
		}
	}
	return fc, nil
}

// WithStripes places the fetching peer in the content's stripe trees
// (Service.Push) as the fetch starts, once the content is served, unless
// it has its place already: the fetch then takes the blocks its parents
// push and asks its sources only for what they do not bring.
func WithStripes(st Stripes) FetchOption {
	return func(c *swarm.FetchConfig) error { c.Stripes = &st; return nil }
}

// WithProgress sets a callback called after every stored block (calls are
// serialized; keep it quick).
func WithProgress(fn func(Progress)) FetchOption {
	return func(c *swarm.FetchConfig) error { c.Progress = fn; return nil }
}

// WithPeers adds peers to fetch from, as full multiaddrs ending in /p2p/ID.
func WithPeers(addrs ...ma.Multiaddr) FetchOption {
	return func(c *swarm.FetchConfig) error { c.Peers = append(c.Peers, addrs...); return nil }
}

// WithOutFile makes Fetch's out name the output file when the content is a
// single file, as curl -o does: the file is written at out whatever its name
// in the manifest, and the fetch's state (manifest, held log, and the file
// itself until it is complete) lives beside it in out+".reconcile"
// (chunker.CreateFileStore), so that the download resumes, and an update
// (the same fetch with a newer version's ticket) knows what out holds. The
// state of a complete download is its manifest and record alone; removing
// it (chunker.Store.RemoveState) leaves just the file. Content of several
// files is written under out as a folder, as without the option; an out that
// is an existing folder, or ends in a slash, is always used as one. Default:
// out is a folder.
func WithOutFile() FetchOption {
	return func(c *swarm.FetchConfig) error { c.OutFile = true; return nil }
}

// WithCheckProgress sets a callback for the re-hashing of the blocks already
// on disk when a fetch resumes a store (see chunker.WithCheckProgress): it is
// called with (0, total) first, then after every block checked. Default: none.
func WithCheckProgress(fn func(done, total int)) FetchOption {
	return func(c *swarm.FetchConfig) error { c.Check = fn; return nil }
}

// WithSources adds peers to fetch from by id: peers the host is connected to
// already, or whose addresses its peerstore holds (an application that
// found them by its own means, or a testnet that linked them).
func WithSources(ids ...lpeer.ID) FetchOption {
	return func(c *swarm.FetchConfig) error { c.Sources = append(c.Sources, ids...); return nil }
}

// WithMethod sets the reconciliation method. reconcile.Complete (the
// default), reconcile.CCBF, reconcile.Bitfield and reconcile.IBLT download the
// blocks of the content and every peer serves them all (the server takes the
// method from the fetcher's first message); reconcile.Byers downloads coded
// blocks instead (the seed must serve them, see WithByers).
func WithMethod(m reconcile.Method) FetchOption {
	return func(c *swarm.FetchConfig) error {
		if !m.Valid() {
			return fmt.Errorf("peer: method %v: %w", m, reconcile.ErrMethod)
		}
		c.Method = m
		return nil
	}
}

// WithBlockChoice sets how a fetch chooses which of a source's offered
// blocks to ask it for first. Default BlockRarest.
func WithBlockChoice(c BlockChoice) FetchOption {
	return func(fc *swarm.FetchConfig) error {
		if c != BlockRarest && c != BlockInOrder && c != BlockRandom && c != BlockRarestFilters {
			return fmt.Errorf("peer: WithBlockChoice: unknown choice %d", int(c))
		}
		fc.Choice = c
		return nil
	}
}

// WithEndgame makes the endgame start after 2 s without a block as well.
// Every fetch runs an endgame: once the few blocks it still lacks (8 at
// most) are all requested and no block has arrived for twice the median of
// its sources' block times (at least three round trips of the source
// asking), a source with nothing else to give also asks for those whose
// claimant takes four times as long as it does for a block (with
// WithEndgame: whatever their claimant), and the first copy to arrive is
// kept (the other is counted in Summary.Redundant,
// or is cut off in flight when the fetch ends): the last blocks no longer
// wait on a slow source. A 200-peer swarm keeps its figures with it (12 of
// 203,788 blocks twice in the stripe-tree run). Default: that alone.
func WithEndgame() FetchOption {
	return func(fc *swarm.FetchConfig) error { fc.Endgame = true; return nil }
}

// WithNoPeerTimeout sets how long a fetch goes on with no peer left to
// download from, or with peers that have none of the missing blocks, before
// it fails with ErrNoPeers. Default 10 s.
func WithNoPeerTimeout(d time.Duration) FetchOption {
	return func(c *swarm.FetchConfig) error {
		if d <= 0 {
			return errors.New("peer: WithNoPeerTimeout: duration must be positive")
		}
		c.NoPeer = d
		return nil
	}
}

// WithFetchEvents sets a callback for what happens to the fetch's peers (a
// corrupt block, a peer banned, a given peer not reached at the first
// dial), for a program to show above its progress.
// Calls are serialized with those of WithProgress; keep it quick. Default:
// none (the service's logger still logs them).
func WithFetchEvents(fn func(FetchEvent)) FetchOption {
	return func(c *swarm.FetchConfig) error { c.Events = fn; return nil }
}

// WithReuse names more local files or folders whose blocks a fetch takes
// instead of downloading them (chunker.Store.Reuse): any file holding bytes of
// the content, such as an older version kept elsewhere. The output itself (the
// older version a fetch replaces) is always read. Default: none.
func WithReuse(paths ...string) FetchOption {
	return func(c *swarm.FetchConfig) error { c.Reuse = append(c.Reuse, paths...); return nil }
}

// WithDelete makes a fetch into a folder remove, once the new version is
// complete and in place, the files of the content's top folder that the new
// version does not have (as rsync --delete). Default: they stay.
func WithDelete() FetchOption {
	return func(c *swarm.FetchConfig) error { c.Delete = true; return nil }
}

// WithoutDeltas makes a fetch into an older version fetch the blocks an
// edit fell in whole. By default it first asks its sources for each run of
// them as a delta against the older bytes that stood there (rsync's
// algorithm, package delta; ProtoDelta), so that a few bytes inserted cost
// a few bytes, not the block they fell in: a run no source answers so is
// fetched as usual.
func WithoutDeltas() FetchOption {
	return func(c *swarm.FetchConfig) error { c.NoDeltas = true; return nil }
}

// WithReuseProgress sets a callback for the reading of local files
// (WithReuse, and the older version at the output), called with the bytes
// read so far and the total. Default: none.
func WithReuseProgress(fn func(done, total int64)) FetchOption {
	return func(c *swarm.FetchConfig) error { c.ReuseProgress = fn; return nil }
}
