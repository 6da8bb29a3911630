package transitstub

import (
	"github.com/reconcile-p2p/reconcile/cbfalgebra"
	"github.com/reconcile-p2p/reconcile/reconcile"
)

// protoRunner holds what the swarm's exchanges share over a universe of u blocks:
// the k addresses of every block, CBF(U) and a scratch difference filter
// (complete), and buffers for sizing messages.
type protoRunner struct {
	f    FilterConfig
	u    int
	p    cbfalgebra.Params
	locs []uint32
	cu   *cbfalgebra.CBF // CBF(U), complete only
	diff *cbfalgebra.CBF
	zero []byte
	idx  []uint32
}

func newProtoRunner(f FilterConfig, u int, m reconcile.Method) (*protoRunner, error) {
	pr := &protoRunner{f: f, u: u, p: f.cbfParams(), locs: f.locTable(u), zero: make([]byte, u*f.BlockBytes)}
	if m == reconcile.Complete || m == reconcile.CCBF {
		var err error
		if pr.cu, err = cbfalgebra.NewFromParams(pr.p); err != nil {
			return nil, err
		}
		for i := range u {
			pr.cu.InsertLocations(pr.at(i))
		}
		pr.diff, _ = cbfalgebra.NewFromParams(pr.p)
	}
	return pr, nil
}

func (pr *protoRunner) at(i int) []uint32 { return pr.locs[i*pr.f.K : (i+1)*pr.f.K] }

// blocksBytes is the encoded size of a MsgBlocks message carrying the given sorted
// indices.
func (pr *protoRunner) blocksBytes(idx []uint32) int {
	msg := reconcile.Message{Type: reconcile.MsgBlocks, Indices: idx, BlockSize: pr.f.BlockBytes,
		Data: pr.zero[:len(idx)*pr.f.BlockBytes]}
	return msg.EncodedSize()
}

// filterBytes is the encoded size of a MsgFilter message with the given filter bytes.
func filterBytes(m reconcile.Method, p cbfalgebra.Params, universe, setSize int, data []byte) int {
	msg := reconcile.Message{Type: reconcile.MsgFilter, Filter: reconcile.FilterMsg{
		Method: m, Params: p, Universe: universe, SetSize: setSize, Data: data}}
	return msg.EncodedSize()
}
