package hostkit_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	lpeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer/hostkit"
)

// Two hosts on loopback with no reachability parts: one keeps its identity
// in a key file, the other dials it directly.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "hostkit-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	keyFile := filepath.Join(dir, "identity.key")
	loop := []string{"/ip4/127.0.0.1/tcp/0"}

	a, err := hostkit.New(ctx, hostkit.Config{Listen: loop, KeyFile: keyFile})
	if err != nil {
		log.Fatal(err)
	}
	defer a.Close()
	b, err := hostkit.New(ctx, hostkit.Config{Listen: loop})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()

	fmt.Printf("before: %q\n", b.Path(a.ID()))
	if err := b.Connect(ctx, lpeer.AddrInfo{ID: a.ID(), Addrs: a.Addrs()}); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("after: %q\n", b.Path(a.ID()))

	key, err := hostkit.LoadOrCreateKey(keyFile)
	if err != nil {
		log.Fatal(err)
	}
	id, _ := lpeer.IDFromPrivateKey(key)
	fmt.Println("identity kept:", id == a.ID())
	// Output:
	// before: ""
	// after: "direct"
	// identity kept: true
}

// The CID under which a root is announced in the DHT.
func ExampleRootCID() {
	var root chunker.ID // the zero root, for the example
	fmt.Println(hostkit.RootCID(root))
	// Output: bafkr4iaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
}
