// Package samplefile makes the content the commands that distribute a file
// on this machine work with (reconcile demo, bench, flood): a file of
// pseudo-random bytes, the same for the same seed, and block stores that
// hold a part of it, as a fetcher that was interrupted would.
package samplefile

import (
	"context"
	"io"
	"math/rand/v2"
	"os"

	"github.com/reconcile-p2p/reconcile/chunker"
)

// Write writes at path size pseudo-random bytes (deterministic for seed).
func Write(path string, size int64, seed uint64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	r := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), byte(seed >> 16), byte(seed >> 24), byte(seed >> 32), byte(seed >> 40), byte(seed >> 48), byte(seed >> 56)})
	if _, err := io.CopyN(f, r, size); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Prefill creates a store for m in out holding blocks [lo, hi) of file (which m
// describes) and returns how many blocks it holds.
func Prefill(file string, m *chunker.Manifest, out string, lo, hi int) (int, error) {
	src, err := chunker.SeedStore(context.Background(), file, m)
	if err != nil {
		return 0, err
	}
	defer src.Close()
	st, err := chunker.OpenOrCreateStore(context.Background(), out, m, chunker.WithSyncEvery(64))
	if err != nil {
		return 0, err
	}
	var buf []byte
	for i := lo; i < hi; i++ {
		if buf, err = src.ReadBlock(i, buf); err != nil {
			st.Close()
			return 0, err
		}
		if err := st.PutBlock(i, buf); err != nil {
			st.Close()
			return 0, err
		}
	}
	n := st.HeldCount()
	return n, st.Close()
}
