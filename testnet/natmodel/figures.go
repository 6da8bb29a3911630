package natmodel

// Figures are what a run's NATs and relays did, as package testnet reports
// them (Result.NAT, and the command's --json).
type Figures struct {
	Config
	// NATed is the number of peers behind NATs.
	NATed int `json:"nated"`
	// Pairs counts the neighbour pairs by Path ("direct", "punched",
	// "relayed", "unreachable").
	Pairs map[string]int `json:"pairs"`
	// Circuits are the relayed connections' figures: Circuits.Bytes is
	// every payload byte the relays carried.
	Circuits CircuitStats `json:"circuits"`
	// RelayedBlockBytes is the part of Circuits.Bytes written on the
	// streams that carry blocks (served or pushed).
	RelayedBlockBytes int64 `json:"relayed_block_bytes"`
	// RelayedShare is Circuits.Bytes over all the block bytes the run's
	// peers wrote.
	RelayedShare float64 `json:"relayed_share"`
	// FetchRelayedBytes is the block bytes the fetches stored from sources
	// package peer saw reached through a relay only (the sum of
	// peer.Summary.RelayedBytes): what the peers themselves learnt of the
	// model's relayed connections.
	FetchRelayedBytes int64 `json:"fetch_relayed_bytes"`
}

// Figures returns the figures of the model alone, for its neighbour pairs
// (each an unordered pair of peers): the NATed peers and the pairs by
// path. The caller fills in what the run measured.
func (m *Model) Figures(pairs [][2]int) Figures {
	f := Figures{Config: m.cfg, NATed: m.CountNATed(), Pairs: map[string]int{}}
	for _, p := range pairs {
		f.Pairs[m.Path(p[0], p[1]).String()]++
	}
	return f
}
