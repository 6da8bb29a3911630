package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"
	"lukechampine.com/blake3"

	ma "github.com/multiformats/go-multiaddr"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/cmd/internal/cliutil"
	"github.com/reconcile-p2p/reconcile/cmd/internal/samplefile"
	"github.com/reconcile-p2p/reconcile/peer"
	"github.com/reconcile-p2p/reconcile/reconcile"
)

func demoCommand() *cli.Command {
	return &cli.Command{
		Name:  "demo",
		Usage: "seed a file to a few fetchers that each hold another part of it, on this machine",
		Description: "Shows the main job on one machine, over real loopback connections: makes a file,\n" +
			"seeds it, starts --fetchers peers that each already hold a different part of it (the\n" +
			"file is cut into fetchers+1 parts; the last one only the seed holds), lets\n" +
			"them reconcile with the seed and with each other (complete reconciliation by default:\n" +
			"each peer sends only blocks the other lacks) and fetch in parallel, then prints who\n" +
			"sent what, the reconciliation bytes against the block bytes, and checks that every\n" +
			"copy is identical. --method ccbf, bitfield and iblt start from the same parts, so\n" +
			"their figures compare with complete's; with --method byers the fetchers start empty\n" +
			"and use the Byers baseline (coded blocks) instead.\n\n" +
			"Example:\n" +
			"   reconcile demo\n" +
			"   reconcile demo --size 64MiB --fetchers 4 --json\n" +
			"   reconcile demo --method iblt",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "size", Value: "16MiB", Usage: "size of the demo file"},
			&cli.StringFlag{Name: "block-size", Value: "64KiB", Usage: "block size, 1KiB to 16MiB"},
			&cli.IntFlag{Name: "fetchers", Value: 3, Usage: "number of fetchers (1 to 16)"},
			&cli.StringFlag{Name: "method", Value: "complete", Usage: "reconciliation method: complete, ccbf, bitfield, iblt or byers (see reconcile fetch --help)"},
			&cli.StringFlag{Name: "dir", Usage: "work folder (default: a temporary folder, removed afterwards)"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "random seed of the file's bytes"},
			&cli.BoolFlag{Name: "json", Usage: "print the results as one JSON document"},
		},
		Action: runDemo,
	}
}

// demoReport is the JSON form of the demo's results.
type demoReport struct {
	Method    string                    `json:"method"`
	FileBytes int64                     `json:"file_bytes"`
	Blocks    int                       `json:"blocks"`
	Peers     []string                  `json:"peers"`
	Sent      map[string]map[string]int `json:"blocks_sent"` // sender -> receiver -> blocks
	Fetchers  []demoFetcher             `json:"fetchers"`
	Identical bool                      `json:"identical"`
	Seconds   float64                   `json:"seconds"`
}

type demoFetcher struct {
	Name        string        `json:"name"`
	HeldAtStart int           `json:"held_at_start"`
	Summary     *peer.Summary `json:"summary"`
	Identical   bool          `json:"identical"`
}

func runDemo(c *cli.Context) error {
	size, err := cliutil.FlagSize(c, "size", 1, 0)
	if err != nil {
		return err
	}
	bs, err := cliutil.FlagSize(c, "block-size", chunker.MinBlockSize, chunker.MaxBlockSize)
	if err != nil {
		return err
	}
	nf := c.Int("fetchers")
	if nf < 1 || nf > 16 {
		return cliutil.Usagef("--fetchers %d: want 1 to 16", nf)
	}
	method, err := reconcile.ParseMethod(c.String("method"))
	if err != nil {
		return cliutil.Usagef("--method %q: want complete, ccbf, bitfield, iblt or byers", c.String("method"))
	}
	if method == reconcile.Byers && size > peer.MaxByersBytes {
		return cliutil.Usagef("--size %s: the byers baseline keeps coded blocks in memory; use at most %s", c.String("size"), cliutil.ExactSize(peer.MaxByersBytes))
	}
	dir, done, err := cliutil.WorkFolder(c, "demo")
	if err != nil {
		return err
	}
	defer done()
	ctx, stop := cliutil.SignalContext()
	defer stop()
	quiet := c.Bool("json")
	w := c.App.Writer
	say := func(format string, args ...any) {
		if !quiet {
			fmt.Fprintf(w, format, args...)
		}
	}

	file := filepath.Join(dir, "demo.bin")
	if err := samplefile.Write(file, size, c.Uint64("seed")); err != nil {
		return err
	}
	m, err := chunker.ChunkPath(ctx, file, int(bs))
	if err != nil {
		return cliutil.OneLine(err)
	}
	say("made %s: %.1f MiB in %d blocks of %d KiB\n", file, cliutil.MiB(size), m.BlockCount(), bs>>10)

	loop := peer.WithListenAddrs("/ip4/127.0.0.1/tcp/0")
	seed, err := peer.New(ctx, loop)
	if err != nil {
		return cliutil.OneLine(err)
	}
	defer seed.Close()
	var sopts []peer.SeedOption
	sopts = append(sopts, peer.WithBlockSize(int(bs)))
	if method == reconcile.Byers {
		sopts = append(sopts, peer.WithByers(peer.ByersParams{}))
	}
	tk, err := seed.Seed(ctx, file, sopts...)
	if err != nil {
		return cliutil.OneLine(err)
	}
	names := map[string]string{seed.ID().String(): "seed"}
	order := []string{"seed"}
	say("seed      %s  serves it; ticket:\n          %s\n", seed.ID(), tk)

	fetchers := make([]*peer.Peer, nf)
	res := make([]demoFetcher, nf)
	for j := range fetchers {
		p, err := peer.New(ctx, loop)
		if err != nil {
			return cliutil.OneLine(err)
		}
		defer p.Close()
		fetchers[j] = p
		name := fmt.Sprintf("fetcher-%d", j+1)
		names[p.ID().String()] = name
		order = append(order, name)
		res[j].Name = name
		out := filepath.Join(dir, name)
		if method != reconcile.Byers {
			// Fetcher j starts with part j of nf+1: a different part each,
			// and one part only the seed holds.
			lo, hi := j*m.BlockCount()/(nf+1), (j+1)*m.BlockCount()/(nf+1)
			n, err := samplefile.Prefill(file, m, out, lo, hi)
			if err != nil {
				return cliutil.OneLine(err)
			}
			res[j].HeldAtStart = n
			say("%-9s %s  holds blocks [%d, %d)\n", name, p.ID(), lo, hi)
		} else {
			say("%-9s %s  starts empty\n", name, p.ID())
		}
	}

	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, nf)
	for j, p := range fetchers {
		var others []ma.Multiaddr
		for k, q := range fetchers {
			if k != j {
				others = append(others, q.Addrs()...)
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[j].Summary, errs[j] = p.Fetch(ctx, tk, filepath.Join(dir, res[j].Name), peer.WithPeers(others...), peer.WithMethod(method))
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	for j, err := range errs {
		if err != nil {
			return cliutil.OneLine(fmt.Errorf("%s: %w", res[j].Name, err))
		}
	}

	want, err := hashFile(file)
	if err != nil {
		return err
	}
	rep := demoReport{Method: method.String(), FileBytes: size, Blocks: m.BlockCount(), Peers: order,
		Sent: map[string]map[string]int{}, Identical: true, Seconds: elapsed.Seconds()}
	for j := range res {
		got, err := hashFile(filepath.Join(dir, res[j].Name, "demo.bin"))
		res[j].Identical = err == nil && bytes.Equal(got, want)
		rep.Identical = rep.Identical && res[j].Identical
		for _, ps := range res[j].Summary.Peers {
			from := names[ps.Peer]
			if from == "" {
				from = ps.Peer
			}
			if rep.Sent[from] == nil {
				rep.Sent[from] = map[string]int{}
			}
			rep.Sent[from][res[j].Name] += ps.Blocks
		}
	}
	rep.Fetchers = res
	if quiet {
		return cliutil.WriteJSON(w, rep)
	}
	printDemo(w, rep, elapsed)
	if !rep.Identical {
		return fmt.Errorf("demo: a copy differs from the source")
	}
	return nil
}

func printDemo(w io.Writer, rep demoReport, elapsed time.Duration) {
	unit := "blocks"
	if rep.Method == reconcile.Byers.String() {
		unit = "coded blocks"
	}
	fmt.Fprintf(w, "\nall fetchers done in %.2f s (%s reconciliation)\n\nwho sent what (%s; rows send, columns receive):\n", elapsed.Seconds(), rep.Method, unit)
	tw := tabwriter.NewWriter(w, 4, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "\t")
	for _, f := range rep.Fetchers {
		fmt.Fprintf(tw, "%s\t", f.Name)
	}
	fmt.Fprintln(tw)
	for _, from := range rep.Peers {
		fmt.Fprintf(tw, "%s\t", from)
		for _, f := range rep.Fetchers {
			if from == f.Name {
				fmt.Fprint(tw, "-\t")
			} else {
				fmt.Fprintf(tw, "%d\t", rep.Sent[from][f.Name])
			}
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nper fetcher:")
	tw = tabwriter.NewWriter(w, 4, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  fetcher\theld at start\tfetched\tblock bytes\tfilter bytes\tfilter/block\tfalse offers\tredundant\tidentical")
	for _, f := range rep.Fetchers {
		s := f.Summary
		ratio := 0.0
		if s.Received > 0 {
			ratio = float64(s.FilterBytes) / float64(s.Received)
		}
		fmt.Fprintf(tw, "  %s\t%d\t%d\t%.2f MiB\t%.1f KiB\t%.4f%%\t%d\t%d\t%v\n", f.Name, f.HeldAtStart, s.Fetched,
			cliutil.MiB(s.Received), float64(s.FilterBytes)/1024, 100*ratio, s.FalseOffers, s.Redundant, f.Identical)
	}
	tw.Flush()
	if rep.Identical {
		fmt.Fprintf(w, "\nevery copy is byte-identical to the source (%d bytes, BLAKE3 checked)\n", rep.FileBytes)
	} else {
		fmt.Fprintln(w, "\nA COPY DIFFERS FROM THE SOURCE")
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, strings.TrimSpace(`
try it across hosts:   reconcile seed FILE --ticket-file t      (host 1)
                       reconcile fetch --ticket-file t --out FILE  (host 2, 3, ...)`))
}

func hashFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := blake3.New(32, nil)
	if _, err := io.Copy(h, f); err != nil {
		return nil, err
	}
	return h.Sum(nil), nil
}
