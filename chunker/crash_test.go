package chunker

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

const (
	crashDirEnv   = "CHUNKER_CRASH_DIR"
	crashRoundEnv = "CHUNKER_CRASH_ROUND"
)

// crashManifest is the manifest the crash test's writer and checker share.
func crashManifest(t testing.TB) (*Manifest, []byte) {
	return testManifest(t, MinBlockSize, 200<<10, 0, 123, 150<<10+7)
}

// crashWriter runs in the helper process: it resumes the store and puts the missing
// blocks in a random order, mixing in wrong bytes, until it is killed.
func crashWriter(t *testing.T, dir string, round int) {
	m, data := crashManifest(t)
	r := rand.New(rand.NewPCG(uint64(round), 7))
	var opts []StoreOption
	if round%2 == 1 {
		opts = append(opts, WithSyncEvery(1+r.IntN(16)))
	}
	s, err := OpenOrCreateStore(context.Background(), dir, m, opts...)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range r.Perm(m.BlockCount()) {
		if r.IntN(4) == 0 {
			bad := bytes.Clone(block(m, data, i))
			bad[r.IntN(len(bad))]++
			if s.PutBlock(i, bad) == nil {
				t.Fatalf("bad block %d accepted", i)
			}
		}
		if err := s.PutBlock(i, block(m, data, i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestStoreCrash kills a writer process (kill -9) at random moments and checks after
// each kill that the reopened store holds only blocks whose bytes are right, that it
// never loses a block it had reopened with, and that writing resumes to completion.
func TestStoreCrash(t *testing.T) {
	if dir := os.Getenv(crashDirEnv); dir != "" {
		round, _ := strconv.Atoi(os.Getenv(crashRoundEnv))
		crashWriter(t, dir, round)
		return
	}
	trials, maxKills := 4, 8
	if testing.Short() {
		trials = 2
	}
	m, data := crashManifest(t)
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	for trial := range trials {
		dir := t.TempDir()
		prev, kills, midway := 0, 0, 0
		for round := 0; ; round++ {
			if round > 200 {
				t.Fatalf("trial %d: no progress after %d rounds", trial, round)
			}
			cmd := exec.Command(os.Args[0], "-test.run=^TestStoreCrash$", "-test.count=1")
			cmd.Env = append(os.Environ(), crashDirEnv+"="+dir, crashRoundEnv+"="+strconv.Itoa(round))
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Kill at a random moment: from process start-up to deep into the writing.
			delay := time.Duration(r.Float64() * float64(100*time.Millisecond))
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			var err error
			finished := false
			select {
			case err = <-done:
				finished = true
			case <-time.After(delay):
				if kills == maxKills { // enough: let this writer finish
					err = <-done
					finished = true
					break
				}
				cmd.Process.Kill() // SIGKILL
				err = <-done
				kills++
			}
			if finished && err != nil {
				t.Fatalf("writer failed: %v\n%s", err, out.String())
			}
			s, err := OpenStore(context.Background(), dir)
			if err != nil {
				if _, statErr := os.Stat(filepath.Join(dir, MetaDir, m.ID().String(), manifestFile)); statErr != nil {
					continue // killed before the store existed
				}
				t.Fatalf("trial %d round %d: reopen after kill: %v", trial, round, err)
			}
			n := s.HeldCount()
			var buf []byte
			for _, i := range s.Held() {
				if buf, err = s.ReadBlock(i, buf); err != nil {
					t.Fatal(err)
				}
				if err := VerifyBlock(m, i, buf); err != nil {
					t.Fatalf("trial %d round %d: held block %d has wrong bytes: %v", trial, round, i, err)
				}
				if !bytes.Equal(buf, block(m, data, i)) {
					t.Fatalf("held block %d differs", i)
				}
			}
			s.Close()
			if n < prev {
				t.Fatalf("trial %d round %d: %d blocks held, %d before", trial, round, n, prev)
			}
			prev = n
			if !finished && n > 0 && n < m.BlockCount() {
				midway++
			}
			if n == m.BlockCount() {
				t.Logf("trial %d: complete after %d rounds, %d kills, %d of them midway through the blocks", trial, round+1, kills, midway)
				break
			}
		}
		s, err := OpenStore(context.Background(), dir, WithVerify())
		if err != nil || !s.Complete() {
			t.Fatalf("trial %d: final verify: %v", trial, err)
		}
		s.Close()
	}
}
