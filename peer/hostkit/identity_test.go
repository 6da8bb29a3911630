package hostkit

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
)

func TestLoadOrCreateKey(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "key")
	k1, err := LoadOrCreateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v, want 0600", fi.Mode().Perm())
	}
	k2, err := LoadOrCreateKey(path)
	if err != nil || !k1.Equals(k2) {
		t.Fatalf("reload gave another key: %v", err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreateKey(path); !errors.Is(err, ErrKeyPermissions) {
		t.Fatalf("world-readable key: %v", err)
	}
	bad := filepath.Join(dir, "bad")
	os.WriteFile(bad, []byte("not a key"), 0o600)
	if _, err := LoadOrCreateKey(bad); err == nil {
		t.Fatal("garbage key file accepted")
	}
}

// TestLoadOrCreateKeyRace: processes (here goroutines) creating the key at
// once all end up with the same key.
func TestLoadOrCreateKeyRace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "key")
	keys := make([]crypto.PrivKey, 8)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k, err := LoadOrCreateKey(path)
			if err != nil {
				t.Error(err)
			}
			keys[i] = k
		}()
	}
	wg.Wait()
	for _, k := range keys[1:] {
		if k == nil || !k.Equals(keys[0]) {
			t.Fatal("racing creators got different keys")
		}
	}
}
