package peer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/reconcile-p2p/reconcile/peer"
)

// A fetcher that knows only the root id finds the seed through the private
// DHT, bootstrapped from one peer (here the seed itself, on loopback). Peers
// on the internet would add WithReach(peer.DefaultReach()) and a relay.
func ExampleService_FetchRoot() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "peer-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "hello.txt")
	data := bytes.Repeat([]byte("found by its root\n"), 10000)
	if err := os.WriteFile(file, data, 0o644); err != nil {
		log.Fatal(err)
	}

	seed, err := peer.New(ctx, peer.WithListenAddrs("/ip4/127.0.0.1/tcp/0"),
		peer.WithDiscovery(peer.Discovery{DHT: peer.DHTServer}))
	if err != nil {
		log.Fatal(err)
	}
	defer seed.Close()
	ticket, err := seed.Seed(ctx, file)
	if err != nil {
		log.Fatal(err)
	}

	fetcher, err := peer.New(ctx, peer.WithListenAddrs("/ip4/127.0.0.1/tcp/0"),
		peer.WithDiscovery(peer.Discovery{DHT: peer.DHTClient, Bootstrap: []peer.AddrInfo{seed.AddrInfo()}}))
	if err != nil {
		log.Fatal(err)
	}
	defer fetcher.Close()
	var sum *peer.Summary
	for { // the seed announces its root within a second or so
		sum, err = fetcher.FetchRoot(ctx, ticket.Root, filepath.Join(dir, "out"))
		if !errors.Is(err, peer.ErrNoPeers) || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		log.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "out", "hello.txt"))
	fmt.Println("identical:", bytes.Equal(got, data), "path:", sum.Peers[0].Path)
	// Output: identical: true path: direct
}
