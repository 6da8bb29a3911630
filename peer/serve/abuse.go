package serve

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	manet "github.com/multiformats/go-multiaddr/net"
	"github.com/reconcile-p2p/reconcile/peer/admit"
	"github.com/reconcile-p2p/reconcile/peer/hostkit"
	"github.com/reconcile-p2p/reconcile/peer/wire"
)

// helloTimeout is the time a stream has to deliver its hello (a few dozen
// bytes) before the stream is reset.
const helloTimeout = 5 * time.Second

// The abuse scores of package admit, and the bounds of the deny-list and
// the score table.
const (
	strikeMalformed = admit.StrikeMalformed
	strikeRepeat    = admit.StrikeRepeat
	strikeSlow      = admit.StrikeSlow
	MaxBanned       = admit.MaxKeys
	maxScored       = admit.MaxKeys
)

// alreadyDone is a context that has ended: acquiring a share with it takes
// room only if there is some (or may be made) at once.
var alreadyDone = func() context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(fmt.Errorf("%w: no room for the stream", wire.ErrBusy))
	return ctx
}()

func isPeerKey(k string) bool { return len(k) > 5 && k[:5] == "peer/" }

// Streams opened per second: a remote peer may open streamRate streams of
// this service's protocols a second (StreamBurst at once); each stream
// beyond that is reset at once and earns strikeStreams points, so a peer
// that opens streams as fast as they are reset (a stream held past its share
// is reset, and an attacker opens the next at once: thousands a second,
// each a muxer, protocol negotiation and hello for the server) is banned
// within a second. A fetch opens a few streams a second to one peer (a
// reconciliation and a blocks stream per round).
const (
	streamRate    = 64
	StreamBurst   = 128
	strikeStreams = 2
)

// sweepEvery is how often the service gives back what no peer used lately:
// filter caches (so the memory a burst of unusual sessions made it build
// returns within two sweeps), decayed abuse scores and idle rate limiters.
const sweepEvery = 15 * time.Second

// Sweeper runs sweep every sweepEvery until the service closes.
func (p *Server) Sweeper() {
	t := p.clk.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-t.Chan():
			p.sweep(p.clk.Now())
		}
	}
}

func (p *Server) sweep(now time.Time) {
	contents := p.lib.All()
	p.guard.Sweep(now)
	for _, c := range contents {
		c.Recon.Trim()
		if alt := c.AltSet(); alt != nil {
			alt.Responder().Trim()
		}
	}
}

// shareKey is the key a connection's peer shares resources under: its IP
// prefix (/32 for IPv4, /48 for IPv6) when it connects from a public
// address, so that many identities on one host or network share one share;
// otherwise (loopback, private networks, relayed connections) its peer id.
func shareKey(c network.Conn) string {
	addr := c.RemoteMultiaddr()
	if addr != nil && !hostkit.IsRelayed(addr) && manet.IsPublicAddr(addr) {
		if ip, err := manet.ToIP(addr); err == nil {
			if v4 := ip.To4(); v4 != nil {
				return "ip4/" + v4.String()
			}
			return "ip6/" + ip.Mask(net.CIDRMask(48, 128)).String()
		}
	}
	return "peer/" + c.RemotePeer().String()
}
