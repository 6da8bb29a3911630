package transitstub

import (
	"errors"

	"github.com/reconcile-p2p/reconcile/sim/transitstub/topology"
)

// Sentinel errors of the package.
var (
	// ErrParams reports topology, overlay or experiment parameters that are
	// out of range: topology.ErrParams, so that errors.Is matches either.
	ErrParams = topology.ErrParams
	// ErrNoPeers reports an overlay or experiment that needs more peers than it has.
	ErrNoPeers = errors.New("transitstub: not enough peers")
)
