package peer

import (
	"errors"
	"fmt"

	"github.com/reconcile-p2p/reconcile/peer/hostkit"
	"github.com/reconcile-p2p/reconcile/peer/wire"
)

// Sentinel errors callers can test with errors.Is.
var (
	// ErrKeyPermissions means an identity key file can be read or written by
	// users other than its owner. It is hostkit.ErrKeyPermissions.
	ErrKeyPermissions = hostkit.ErrKeyPermissions
	// ErrBadTicket means a ticket string could not be decoded.
	ErrBadTicket = errors.New("peer: bad ticket")
	// ErrFrameTooLarge means a peer announced a frame longer than the limit for
	// its stream; the stream is reset. It is wire.ErrFrameTooLarge.
	ErrFrameTooLarge = wire.ErrFrameTooLarge
	// ErrMalformed means a peer sent bytes that do not decode as the message the
	// protocol expects; the stream is reset. It is wire.ErrMalformed.
	ErrMalformed = wire.ErrMalformed
	// ErrNoPeers means no peer could be reached or none had what was needed.
	ErrNoPeers = wire.ErrNoPeers
	// ErrManifestMismatch means a manifest does not hash to the ticket's root id,
	// or an existing output was made for another manifest.
	ErrManifestMismatch = wire.ErrManifestMismatch
	// ErrUnknownRoot means the remote peer does not serve the requested
	// content. It is wire.ErrUnknownRoot.
	ErrUnknownRoot = wire.ErrUnknownRoot
	// ErrBusy means the remote had no room for the request (its reconcile
	// slots, or this peer's share of them, were taken); it is retried later
	// and not taken for a failure. It is wire.ErrBusy.
	ErrBusy = wire.ErrBusy
	// ErrBadBlock means a peer sent a block whose hash does not match the
	// manifest; the block is discarded and asked of other peers, and a peer
	// that sent three is dropped and banned.
	ErrBadBlock = wire.ErrBadBlock
	// ErrRemote means the remote peer answered a request with an error. It is
	// wire.ErrRemote.
	ErrRemote = wire.ErrRemote
	// ErrClosed means the peer was closed.
	ErrClosed = wire.ErrClosed
)

// anyOf words the peers a fetch tried: "the 1 peer", "any of 3 peers".
func anyOf(n int) string {
	if n == 1 {
		return "the 1 peer"
	}
	return fmt.Sprintf("any of %d peers", n)
}
