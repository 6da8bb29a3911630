package chunker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reconcile-p2p/reconcile/chunker/internal/pathrules"
)

// completeZeroStore makes a complete store of n zero blocks of bs bytes in a new
// folder (the sparse file already holds the right bytes) and closes it.
func completeZeroStore(t testing.TB, n, bs int) (string, *Manifest) {
	t.Helper()
	m := zeroManifest(t, n, bs)
	dir := t.TempDir()
	s, err := CreateStore(context.Background(), dir, m)
	if err != nil {
		t.Fatal(err)
	}
	s.held.SetAll(n)
	if err := s.log.Rewrite(s.held, n); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, m
}

// TestOpenCancelled checks that every constructor gives up at once, with an error
// wrapping context.Canceled, when its context is already cancelled, and leaves the
// store as it was.
func TestOpenCancelled(t *testing.T) {
	dir, m := completeZeroStore(t, 64, MinBlockSize)
	src := filepath.Join(dir, "zeros.bin")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name string
		open func() (*Store, error)
	}{
		{"OpenStore", func() (*Store, error) { return OpenStore(ctx, dir) }},
		{"OpenStore verify", func() (*Store, error) { return OpenStore(ctx, dir, WithVerify()) }},
		{"OpenOrCreateStore", func() (*Store, error) { return OpenOrCreateStore(ctx, dir, m) }},
		{"OpenOrCreateStore verify", func() (*Store, error) { return OpenOrCreateStore(ctx, dir, m, WithVerify()) }},
		{"CreateStore", func() (*Store, error) { return CreateStore(ctx, t.TempDir(), m) }},
		{"SeedStore verify", func() (*Store, error) { return SeedStore(ctx, src, m, WithVerify()) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := tc.open()
			if err == nil {
				s.Close()
				t.Fatal("opened with a cancelled context")
			}
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want one wrapping context.Canceled", err)
			}
		})
	}
	s, err := OpenStore(context.Background(), dir)
	if err != nil || !s.Complete() {
		t.Fatalf("reopen after the cancelled opens: %v", err)
	}
	s.Close()
}

// TestOpenVerifyCancel cancels the re-hashing of a big store midway and checks that
// OpenStore returns promptly, having checked few blocks, and that the held log is
// untouched.
func TestOpenVerifyCancel(t *testing.T) {
	const n = 4096
	dir, _ := completeZeroStore(t, n, 16<<10)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var cancelledAt atomic.Int64
	var last atomic.Int64
	progress := func(done, total int) {
		if total != n {
			t.Errorf("progress total %d, want %d", total, n)
		}
		last.Store(int64(done))
		if done == 10 {
			cancelledAt.Store(time.Now().UnixNano())
			cancel()
		}
	}
	s, err := OpenStore(ctx, dir, WithVerify(), WithCheckProgress(progress))
	if err == nil {
		s.Close()
		t.Fatal("a cancelled verify opened the store")
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want one wrapping context.Canceled", err)
	}
	if at := cancelledAt.Load(); at == 0 {
		t.Fatal("progress never reached 10")
	} else if d := time.Since(time.Unix(0, at)); d > 2*time.Second {
		t.Errorf("OpenStore returned %v after the cancel", d)
	}
	if got := last.Load(); got > n/2 {
		t.Errorf("%d of %d blocks checked after a cancel at 10", got, n)
	}
	s, err = OpenStore(context.Background(), dir)
	if err != nil || s.HeldCount() != n {
		t.Fatalf("reopen after a cancelled verify: %v (held %d of %d)", err, s.HeldCount(), n)
	}
	s.Close()
}

// TestCheckProgress checks the calls WithCheckProgress makes while opening and
// seeding with WithVerify.
func TestCheckProgress(t *testing.T) {
	const n = 37
	dir, m := completeZeroStore(t, n, MinBlockSize)
	for _, tc := range []struct {
		name string
		open func(opts ...StoreOption) (*Store, error)
	}{
		{"OpenStore", func(opts ...StoreOption) (*Store, error) { return OpenStore(context.Background(), dir, opts...) }},
		{"SeedStore", func(opts ...StoreOption) (*Store, error) {
			return SeedStore(context.Background(), filepath.Join(dir, "zeros.bin"), m, opts...)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls, last := 0, -1
			s, err := tc.open(WithVerify(), WithCheckProgress(func(done, total int) {
				if total != n || done < last || done > total || (calls == 0) != (done == 0) {
					t.Errorf("call %d: progress %d/%d after %d", calls, done, total, last)
				}
				calls++
				last = done
			}))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if calls != n+1 || last != n || !s.Complete() {
				t.Fatalf("%d calls, last %d, complete %v", calls, last, s.Complete())
			}
		})
	}
	calls := 0
	s, err := OpenStore(context.Background(), dir, WithCheckProgress(func(int, int) { calls++ }))
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if calls != 0 {
		t.Fatalf("progress called %d times without WithVerify", calls)
	}
}

// withRules runs the rest of the test with a store creating files as if on
// goos.
func withRules(t *testing.T, goos string) {
	old := hostRules
	hostRules = pathrules.For(goos)
	t.Cleanup(func() { hostRules = old })
}

// TestCreateStoreWindowsNames checks, through the rules a store checks on
// Windows, that a fetch of content named for another system fails before it
// writes anything, naming the file, and that the single-file layout checks the
// name it writes, not the seed's.
func TestCreateStoreWindowsNames(t *testing.T) {
	withRules(t, "windows")
	m, err := NewManifest([]File{{Path: "notes/aux.txt"}, {Path: "notes/ok.txt"}}, MinBlockSize, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	_, err = CreateStore(context.Background(), dir, m)
	if !errors.Is(err, ErrBadPath) || !strings.Contains(err.Error(), `"notes/aux.txt"`) {
		t.Fatalf("CreateStore: %v, want ErrBadPath naming notes/aux.txt", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("the refused store left %d entries in its folder", len(ents))
	}

	one, err := NewManifest([]File{{Path: "a:b"}}, MinBlockSize, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := CreateFileStore(context.Background(), filepath.Join(t.TempDir(), "renamed.txt"), one)
	if err != nil {
		t.Fatalf("CreateFileStore under a name Windows holds: %v", err)
	}
	s.Close()
	_, err = CreateFileStore(context.Background(), filepath.Join(t.TempDir(), "NUL"), one)
	if !errors.Is(err, ErrBadPath) || !strings.Contains(err.Error(), `"NUL"`) {
		t.Fatalf("CreateFileStore NUL: %v, want ErrBadPath naming NUL", err)
	}

	// A link whose target Windows cannot name.
	link, err := NewFixedManifest(Tree{Files: []File{{Path: "d/f"}}, Symlinks: []Symlink{{Path: "d/l", Target: "a:b"}}}, MinBlockSize, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = CreateStore(context.Background(), t.TempDir(), link)
	if !errors.Is(err, ErrBadPath) || !strings.Contains(err.Error(), `symbolic link "d/l" to "a:b" cannot be made on windows`) {
		t.Fatalf("CreateStore of a link to a:b: %v, want ErrBadPath naming the link", err)
	}
}
