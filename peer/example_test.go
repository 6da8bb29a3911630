package peer_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	lpeer "github.com/libp2p/go-libp2p/core/peer"
	rcmgr "github.com/libp2p/go-libp2p/p2p/host/resource-manager"

	"github.com/reconcile-p2p/reconcile/peer"
	"github.com/reconcile-p2p/reconcile/reconcile"
)

// A seed serves a file; a fetcher downloads it with the ticket, verifying every
// block, and could go on serving it to others.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "peer-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "hello.txt")
	if err := os.WriteFile(file, bytes.Repeat([]byte("hello, swarm\n"), 10000), 0o644); err != nil {
		log.Fatal(err)
	}

	seed, err := peer.New(ctx, peer.WithListenAddrs("/ip4/127.0.0.1/tcp/0"))
	if err != nil {
		log.Fatal(err)
	}
	defer seed.Close()
	ticket, err := seed.Seed(ctx, file, peer.WithBlockSize(16<<10))
	if err != nil {
		log.Fatal(err)
	}

	fetcher, err := peer.New(ctx, peer.WithListenAddrs("/ip4/127.0.0.1/tcp/0"))
	if err != nil {
		log.Fatal(err)
	}
	defer fetcher.Close()
	out := filepath.Join(dir, "downloads")
	last := peer.Progress{}
	sum, err := fetcher.Fetch(ctx, ticket, out, peer.WithProgress(func(p peer.Progress) { last = p }))
	if err != nil {
		log.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(out, "hello.txt"))
	want, _ := os.ReadFile(file)
	fmt.Printf("fetched %d of %d blocks, %d bytes, identical: %v\n", sum.Fetched, sum.Blocks, last.Bytes, bytes.Equal(got, want))
	// Output: fetched 8 of 8 blocks, 130000 bytes, identical: true
}

// A ticket is one token: the content's root id and the peers that serve it.
func ExampleParseTicket() {
	ctx := context.Background()
	p, err := peer.New(ctx, peer.WithListenAddrs("/ip4/127.0.0.1/tcp/0"))
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	t := peer.Ticket{Peers: []peer.AddrInfo{p.AddrInfo()}}
	t.Root[0] = 0xab
	parsed, err := peer.ParseTicket(t.String())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(parsed.Root.String()[:4], parsed.Peers[0].ID == p.ID())
	// Output: ab00 true
}

// A fetch may use any reconciliation method of package reconcile: every peer
// serves complete, ccbf, bitfield and iblt, taking the method from the
// fetcher's first message. The exact methods send no redundant block.
func ExampleWithMethod() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "peer-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "data.txt")
	if err := os.WriteFile(file, bytes.Repeat([]byte("exact reconciliation\n"), 5000), 0o644); err != nil {
		log.Fatal(err)
	}
	seed, err := peer.New(ctx, peer.WithListenAddrs("/ip4/127.0.0.1/tcp/0"))
	if err != nil {
		log.Fatal(err)
	}
	defer seed.Close()
	ticket, err := seed.Seed(ctx, file, peer.WithBlockSize(8<<10))
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range []reconcile.Method{reconcile.Bitfield, reconcile.IBLT} {
		fetcher, err := peer.New(ctx, peer.WithListenAddrs("/ip4/127.0.0.1/tcp/0"))
		if err != nil {
			log.Fatal(err)
		}
		sum, err := fetcher.Fetch(ctx, ticket, filepath.Join(dir, m.String()), peer.WithMethod(m))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: fetched %d of %d blocks, %d false offers\n", sum.Method, sum.Fetched, sum.Blocks, sum.FalseOffers)
		fetcher.Close()
	}
	// Output:
	// bitfield: fetched 13 of 13 blocks, 0 false offers
	// iblt: fetched 13 of 13 blocks, 0 false offers
}

// An application mounts the service on a libp2p host of its own, next to
// its own protocols, as go-libp2p's ping service mounts on any host. The
// host stays the application's: closing the service leaves it (and its
// connections) up. ResourceLimits bounds the streams of the service's
// protocols in the host's resource manager.
func ExampleNewService() {
	ctx := context.Background()
	newHost := func() host.Host {
		rm, err := rcmgr.NewResourceManager(rcmgr.NewFixedLimiter(peer.ResourceLimits(peer.DefaultLimits)))
		if err != nil {
			log.Fatal(err)
		}
		h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.ResourceManager(rm))
		if err != nil {
			log.Fatal(err)
		}
		return h
	}
	appHost, otherHost := newHost(), newHost()
	defer appHost.Close()
	defer otherHost.Close()
	// The application's own protocol.
	appHost.SetStreamHandler("/myapp/hello/1", func(s network.Stream) {
		s.Write([]byte("hello from the app"))
		s.Close()
	})

	dir, err := os.MkdirTemp("", "peer-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(file, bytes.Repeat([]byte("embedded\n"), 3000), 0o644); err != nil {
		log.Fatal(err)
	}
	svc, err := peer.NewService(appHost)
	if err != nil {
		log.Fatal(err)
	}
	ticket, err := svc.Seed(ctx, file, peer.WithBlockSize(4<<10))
	if err != nil {
		log.Fatal(err)
	}
	other, err := peer.NewService(otherHost)
	if err != nil {
		log.Fatal(err)
	}
	defer other.Close()
	sum, err := other.Fetch(ctx, ticket, filepath.Join(dir, "copy"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("fetched %d of %d blocks\n", sum.Fetched, sum.Blocks)

	// Closing the service leaves the application's host and protocol alone.
	svc.Close()
	s, err := otherHost.NewStream(ctx, appHost.ID(), "/myapp/hello/1")
	if err != nil {
		log.Fatal(err)
	}
	msg, _ := io.ReadAll(s)
	fmt.Println(string(msg))
	// Output:
	// fetched 7 of 7 blocks
	// hello from the app
}

// Stripe trees: the seed pushes each block once down its stripe's tree and
// every fetcher passes the blocks it gains on to its children, so that
// nobody asks for a block the trees bring. Here two stripes over two
// fetchers: a is the root of stripe 0 and b's parent in it, b the root of
// stripe 1 and a's parent in it.
func ExampleService_Push() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "peer-push")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "data.bin")
	data := make([]byte, 256<<10)
	for i := range data {
		data[i] = byte(i * 31 % 251)
	}
	if err := os.WriteFile(file, data, 0o644); err != nil {
		log.Fatal(err)
	}
	var peers [3]*peer.Peer
	for i := range peers {
		if peers[i], err = peer.New(ctx, peer.WithListenAddrs("/ip4/127.0.0.1/tcp/0")); err != nil {
			log.Fatal(err)
		}
		defer peers[i].Close()
	}
	seed, a, b := peers[0], peers[1], peers[2]
	ticket, err := seed.Seed(ctx, file, peer.WithBlockSize(16<<10))
	if err != nil {
		log.Fatal(err)
	}
	places := map[*peer.Peer]peer.Stripes{
		// The grandparents adopt a peer whose parent leaves or lies.
		a: {Parents: []lpeer.ID{seed.ID(), b.ID()}, Grandparents: []lpeer.ID{"", seed.ID()}, Children: [][]lpeer.ID{{b.ID()}}},
		b: {Parents: []lpeer.ID{a.ID(), seed.ID()}, Grandparents: []lpeer.ID{seed.ID(), ""}, Children: [][]lpeer.ID{nil, {a.ID()}}},
	}
	sums := make(chan *peer.Summary, 2)
	for _, f := range []*peer.Peer{a, b} {
		go func() {
			other := a
			if f == a {
				other = b
			}
			sum, err := f.Fetch(ctx, ticket, filepath.Join(dir, f.ID().String()), peer.WithStripes(places[f]), peer.WithPeers(other.Addrs()...))
			if err != nil {
				log.Fatal(err)
			}
			sums <- sum
		}()
	}
	// The seed's place last: a peer refuses pushes until it has its own
	// (the seed tries again a repair time later).
	for !a.Pushing(ticket.Root) || !b.Pushing(ticket.Root) {
		time.Sleep(time.Millisecond)
	}
	if err := seed.Push(ticket.Root, peer.Stripes{Parents: make([]lpeer.ID, 2), Children: [][]lpeer.ID{{a.ID()}, {b.ID()}}}); err != nil {
		log.Fatal(err)
	}
	// Most blocks come down the trees (all of them, but on a loaded
	// machine, where a fetch may pull a few before the seed's pushes
	// start).
	for range 2 {
		sum := <-sums
		fmt.Printf("%d blocks, all stored: %v, most pushed: %v\n", sum.Blocks, sum.Fetched == sum.Blocks, 2*sum.Pushed >= sum.Blocks)
	}
	// Output:
	// 16 blocks, all stored: true, most pushed: true
	// 16 blocks, all stored: true, most pushed: true
}
