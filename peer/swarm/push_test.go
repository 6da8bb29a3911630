package swarm

import (
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	lpeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/reconcile-p2p/reconcile/peer/clock"
	"github.com/reconcile-p2p/reconcile/peer/serve"
	"github.com/reconcile-p2p/reconcile/peer/wire"
)

// readStream is a stream that reads from r (and takes any deadline).
type readStream struct {
	network.Stream
	r io.Reader
}

func (s *readStream) Read(b []byte) (int, error) { return s.r.Read(b) }

func (s *readStream) SetReadDeadline(time.Time) error { return nil }

// FuzzReadPushes: whatever a parent pushes, the child never panics, stores
// only blocks that match the manifest, and takes a block only of the
// stripes the parent pushes (here stripe 0 of 2).
func FuzzReadPushes(f *testing.F) {
	dir := f.TempDir()
	src := writeRandomFile(f, dir, "data.bin", 64<<10, 5)
	m := manifestOf(f, src)
	data, err := os.ReadFile(src)
	if err != nil {
		f.Fatal(err)
	}
	frame := func(fr []byte) []byte { return append(binary.AppendUvarint(nil, uint64(len(fr))), fr...) }
	f.Add(frame(append(wire.AppendBlockHeader(nil, 0), data[:16<<10]...)))
	f.Add(frame(append(wire.AppendBlockHeader(nil, 2), data[32<<10:48<<10]...)))
	f.Add(frame(append(wire.AppendBlockHeader(nil, 1), data[16<<10:32<<10]...)))
	f.Add(frame(wire.AppendMissing(nil, 0)))
	f.Add(append(frame(wire.AppendHave(nil, []int{1, 2, 3})), frame(append(wire.AppendBlockHeader(nil, 0), data[:16<<10]...))...))
	f.Add(frame(wire.AppendHave(nil, []int{1 << 20})))
	f.Add(frame(append(wire.AppendBlockHeader(nil, 0), make([]byte, 16<<10)...)))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x0f})
	p := newTestNode(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		c := emptyContent(t, m, t.TempDir())
		st := c.Store
		tr := NewTrees(p, c, Stripes{Parents: []lpeer.ID{"remote", "other"}}, time.Second)
		c.SetPushes(tr)
		s := &readStream{r: bytes.NewReader(in)}
		ss := serve.NewStream(s, c, 0, clock.Real())
		_ = p.readPushes(ss, tr, "remote")
		for _, i := range st.Held() {
			if i%2 != 0 {
				t.Errorf("block %d of the other parent's stripe stored", i)
			}
			got, err := st.ReadBlock(i, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, data[i*m.BlockSize():][:m.BlockLen(i)]) {
				t.Errorf("block %d stored is not the file's", i)
			}
		}
	})
}
