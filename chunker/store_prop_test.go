package chunker

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// TestStoreModel runs random sequences of operations against a store and a plain
// set, and checks after each that they agree and that every held block reads back
// right.
func TestStoreModel(t *testing.T) {
	for seed := range uint64(12) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 99))
			sizes := make([]int64, 1+r.IntN(4))
			for i := range sizes {
				sizes[i] = int64(r.IntN(6 * MinBlockSize))
			}
			m, data := testManifest(t, MinBlockSize, sizes...)
			if m.BlockCount() == 0 {
				return
			}
			dir := t.TempDir()
			opts := []StoreOption{WithSyncEvery(1 + r.IntN(4))}
			s, err := CreateStore(context.Background(), dir, m, opts...)
			if err != nil {
				t.Fatal(err)
			}
			model := map[int]bool{}
			for step := range 60 {
				i := r.IntN(m.BlockCount())
				switch op := r.IntN(10); {
				case op < 5: // put the right bytes
					if err := s.PutBlock(i, block(m, data, i)); err != nil {
						t.Fatal(err)
					}
					model[i] = true
				case op < 7: // put wrong bytes
					bad := bytes.Clone(block(m, data, i))
					bad[r.IntN(len(bad))] ^= 0x80
					if err := s.PutBlock(i, bad); err == nil {
						t.Fatalf("step %d: wrong bytes accepted for block %d", step, i)
					}
				case op < 9: // close and reopen
					if err := s.Close(); err != nil {
						t.Fatal(err)
					}
					if s, err = OpenStore(context.Background(), dir, opts...); err != nil {
						t.Fatal(err)
					}
				default: // damage a held block on disk and verify
					if !model[i] {
						continue
					}
					off, _ := m.BlockSpan(i)
					var damaged bool
					m.segments(i, func(g segment) error {
						if damaged {
							return nil
						}
						f, err := os.OpenFile(filepath.Join(dir, filepath.FromSlash(m.files[g.file].Path)), os.O_WRONLY, 0)
						if err != nil {
							return err
						}
						defer f.Close()
						_, err = f.WriteAt([]byte{data[off+int64(g.pos)] ^ 1}, g.off)
						damaged = err == nil
						return err
					})
					rep, err := s.Verify(context.Background())
					if err != nil || fmt.Sprint(rep.Corrupt) != fmt.Sprintf("[%d]", i) {
						t.Fatalf("step %d: damaged block %d, report %+v, %v", step, i, rep, err)
					}
					delete(model, i)
					// Restore the byte, as a later put would.
					if err := s.PutBlock(i, block(m, data, i)); err != nil {
						t.Fatal(err)
					}
					model[i] = true
				}
				if s.HeldCount() != len(model) {
					t.Fatalf("step %d: store holds %d, model %d", step, s.HeldCount(), len(model))
				}
				for j := range m.BlockCount() {
					if s.Has(j) != model[j] {
						t.Fatalf("step %d: Has(%d) = %v", step, j, s.Has(j))
					}
				}
			}
			checkStore(t, s, data)
			s.Close()
		})
	}
}

func TestChunkProgress(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	os.WriteFile(p, make([]byte, 10*MinBlockSize+1), 0o644)
	var last, calls int64
	_, err := ChunkPath(context.Background(), p, MinBlockSize, WithWorkers(1), WithProgress(func(done, total int64) {
		if total != 10*MinBlockSize+1 || done < last {
			t.Errorf("progress %d/%d after %d", done, total, last)
		}
		last = done
		calls++
	}))
	if err != nil || last != 10*MinBlockSize+1 || calls == 0 {
		t.Fatalf("err %v, last %d, calls %d", err, last, calls)
	}
}

func TestVerifyProgress(t *testing.T) {
	m, data := testManifest(t, MinBlockSize, 40*MinBlockSize+3)
	s, err := CreateStore(context.Background(), t.TempDir(), m, WithSyncEvery(64))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := 0; i < m.BlockCount(); i += 2 {
		s.PutBlock(i, block(m, data, i))
	}
	last, calls := -1, 0
	rep, err := s.VerifyProgress(context.Background(), func(done, total int) {
		if total != 21 || done < last || done > total {
			t.Errorf("progress %d/%d after %d", done, total, last)
		}
		last = done
		calls++
	})
	if err != nil || rep.Held != 21 || rep.Missing != 20 || len(rep.Corrupt) != 0 || last != 21 || calls != 22 {
		t.Fatalf("report %+v, %v, last %d, calls %d", rep, err, last, calls)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Verify(ctx); err == nil {
		t.Fatal("Verify with a cancelled context succeeded")
	}
}
