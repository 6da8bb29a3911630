package peer_test

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/reconcile-p2p/reconcile/peer"
)

// A seed of a large file reports its chunking as it reads the file, and a
// fetch reports each peer it cannot reach at the first dial (here a peer
// that has left) while it fetches from the ones that answer.
func ExampleWithSeedProgress() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "peer-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "data.bin")
	if err := os.WriteFile(file, bytes.Repeat([]byte("0123456789abcdef"), 64<<10), 0o644); err != nil {
		log.Fatal(err)
	}
	seed, err := peer.New(ctx, peer.WithListenAddrs("/ip4/127.0.0.1/tcp/0"))
	if err != nil {
		log.Fatal(err)
	}
	defer seed.Close()
	var read, total int64
	ticket, err := seed.Seed(ctx, file, peer.WithBlockSize(64<<10), peer.WithSeedProgress(func(done, all int64) {
		read, total = done, all // a program would draw a bar
	}))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("chunked %d of %d bytes\n", read, total)

	gone, err := peer.New(ctx, peer.WithListenAddrs("/ip4/127.0.0.1/tcp/0"))
	if err != nil {
		log.Fatal(err)
	}
	dead := gone.Addrs()[0]
	gone.Close()
	fetcher, err := peer.New(ctx, peer.WithListenAddrs("/ip4/127.0.0.1/tcp/0"))
	if err != nil {
		log.Fatal(err)
	}
	defer fetcher.Close()
	sum, err := fetcher.Fetch(ctx, ticket, filepath.Join(dir, "out"), peer.WithPeers(dead),
		peer.WithFetchEvents(func(ev peer.FetchEvent) {
			if ev.Kind == peer.FetchPeerUnreachable {
				fmt.Println("a peer is not reachable yet; the fetch goes on with the others")
			}
		}))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("fetched %d of %d blocks\n", sum.Fetched, sum.Blocks)
	// Output:
	// chunked 1048576 of 1048576 bytes
	// a peer is not reachable yet; the fetch goes on with the others
	// fetched 16 of 16 blocks
}
