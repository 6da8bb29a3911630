package flood

import (
	"context"
	"fmt"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/reconcile-p2p/reconcile/peer"
	"github.com/reconcile-p2p/reconcile/peer/wire"
)

// NewStaller starts a stalling source of the file at path: a peer (built
// by peer.New with opts) that seeds the file with blocks of blockSize
// bytes, so that it answers the manifest and the reconciliation honestly
// and claims every block, and then, through Stall, never sends one. Give
// its address to a fetch beside an honest seed (peer.WithPeers, or
// `reconcile fetch --peer`) to see whether the fetch routes around it and
// names it. The caller closes it.
func NewStaller(ctx context.Context, path string, blockSize int, opts ...peer.Option) (*peer.Peer, error) {
	p, err := peer.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("flood: stalling source: %w", err)
	}
	if _, err := p.Seed(ctx, path, peer.WithBlockSize(blockSize)); err != nil {
		p.Close()
		return nil, fmt.Errorf("flood: stalling source: %w", err)
	}
	Stall(p)
	return p, nil
}

// Stall turns p, once it seeds, into a stalling source: it replaces p's
// handler of the blocks protocol by one that reads the hello and the
// wants of every stream and never writes a byte, holding the stream until
// the fetcher ends it. The manifest and reconciliation protocols are left
// as they are. Call it after p's Seed, which may set the handler again.
func Stall(p *peer.Peer) {
	p.Host().SetStreamHandler(peer.ProtoBlocks, func(s network.Stream) {
		defer s.Reset()
		fr := wire.NewReader(s)
		for {
			// A hello or a want: they are far smaller than this.
			if _, err := fr.Next(1 << 20); err != nil {
				return
			}
		}
	})
}
