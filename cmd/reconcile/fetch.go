package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	ma "github.com/multiformats/go-multiaddr"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/cmd/internal/cliutil"
	"github.com/reconcile-p2p/reconcile/peer"
	"github.com/reconcile-p2p/reconcile/peer/hostkit"
	"github.com/reconcile-p2p/reconcile/reconcile"
)

func fetchCommand() *cli.Command {
	return &cli.Command{
		Name:        "fetch",
		Usage:       "download the content of a ticket from every peer that has it",
		ArgsUsage:   "TICKET|ROOT",
		Description: "Downloads from every peer that has it; run again to resume, or with a new ticket to update.",
		Flags: append(peerFlags(),
			&cli.StringFlag{Name: "out", Value: ".", Usage: "write the file at `PATH` (as curl -o), or into the folder PATH"},
			&cli.StringFlag{Name: "ticket-file", Usage: "read the ticket from `FILE` instead of the argument"},
			&cli.StringSliceFlag{Name: "peer", Usage: "also fetch from `ADDR`, a multiaddr ending in /p2p/ID (repeatable)"},
			&cli.StringFlag{Name: "method", Value: "complete", Usage: "`METHOD`: complete, ccbf, bitfield, iblt or byers"},
			&cli.BoolFlag{Name: "json", Usage: "print the summary as one JSON document"},
			&cli.BoolFlag{Name: "seed-after", Usage: "keep serving the content after the fetch, until interrupted"},
			&cli.StringSliceFlag{Name: "reuse", Usage: "also take blocks from local file or folder `PATH` (repeatable)"},
			&cli.BoolFlag{Name: "delete", Usage: "on update, remove the files the new version no longer has"},
			// Hidden: an A/B knob (docs/versions.md), not a user's choice.
			&cli.BoolFlag{Name: "no-deltas", Hidden: true, Usage: "on update, fetch the blocks an edit fell in whole, not as deltas against the older bytes there"},
			&cli.DurationFlag{Name: "no-peer-timeout", Value: 10 * time.Second, Category: categoryTuning, Usage: "give up after this long with no peer to download from"},
			&cli.IntFlag{Name: "sync-every", Category: categoryTuning, Usage: "`N` blocks per fsync (0: 8 MiB worth; 1: every block)"},
			&cli.IntFlag{Name: "window", Value: 16, Category: categoryTuning, Usage: "blocks asked of one peer at a time, at most"},
			&cli.StringFlag{Name: "rate", Category: categoryTuning, Usage: "cap the upload to other peers at `RATE` bytes per second (IEC: 4MiB)"},
			&cli.DurationFlag{Name: "stall-timeout", Value: 10 * time.Second, Category: categoryTuning, Usage: "longest wait for a peer's block (less beside others)"},
			// Hidden: a seed's stripe trees (seed --trees) on loopback or a
			// LAN, where fetches pull by default (peer.WithJoinNear).
			&cli.BoolFlag{Name: "join-near", Hidden: true, Usage: "join a seed's stripe trees even on loopback or a LAN"},
			cliutil.ProgressFlag(),
		),
		Action: runFetch,
	}
}

func readTicket(c *cli.Context) (peer.Ticket, error) {
	var s string
	switch {
	case c.String("ticket-file") != "" && c.NArg() > 0:
		return peer.Ticket{}, cliutil.Usagef("give the ticket as the argument or with --ticket-file, not both")
	case c.String("ticket-file") != "":
		b, err := os.ReadFile(c.String("ticket-file"))
		if err != nil {
			return peer.Ticket{}, fmt.Errorf("--ticket-file: %w", err)
		}
		s = string(b)
	case c.NArg() == 1:
		s = c.Args().First()
	default:
		return peer.Ticket{}, cliutil.Usagef("want one TICKET, got %d arguments", c.NArg())
	}
	if root, ok := parseRootArg(s); ok { // reach.go: reconcile fetch ROOT
		return peer.Ticket{Root: root}, nil
	}
	t, err := peer.ParseTicket(s)
	if err != nil { // a command-line mistake: exit 2
		return peer.Ticket{}, cliutil.Usagef("%v (copy the whole token printed by reconcile seed)", err)
	}
	return t, nil
}

func runFetch(c *cli.Context) error {
	method, err := reconcile.ParseMethod(c.String("method"))
	if err != nil {
		return cliutil.Usagef("--method %q: want complete, ccbf, bitfield, iblt or byers", c.String("method"))
	}
	if d := c.Duration("no-peer-timeout"); d <= 0 {
		return cliutil.Usagef("--no-peer-timeout %v: want a positive duration such as 10s", d)
	}
	if c.String("out") == "" {
		return cliutil.Usagef("--out is empty: want a folder")
	}
	var extra []ma.Multiaddr
	for _, s := range c.StringSlice("peer") {
		a, err := ma.NewMultiaddr(s)
		if err != nil {
			return cliutil.Usagef("--peer %q: %v", s, err)
		}
		extra = append(extra, a)
	}
	pr, err := cliutil.NewProgress(c, "fetch", true)
	if err != nil {
		return err
	}
	popts, err := peerOptions(c, pr) // logs go above the bar
	if err != nil {
		return err
	}
	stopProfile, err := cliutil.StartCPUProfile(c) // profile.go
	if err != nil {
		return err
	}
	defer stopProfile()
	tk, err := readTicket(c)
	if err != nil {
		return err
	}
	sum, onDisk := completeOutput(c.String("out"), tk, method)
	if sum != nil && !c.Bool("seed-after") {
		if c.Bool("json") {
			return cliutil.WriteJSON(c.App.Writer, sum)
		}
		fmt.Fprintf(c.App.Writer, "%s already holds all %d blocks (%s) of %s: nothing to fetch\n", sum.Out, sum.Blocks, cliutil.HumanBytes(sum.Bytes), sum.Root)
		return nil
	}
	ctx, stop := cliutil.SignalContext()
	defer stop()
	p, err := newCLIPeer(ctx, c, popts, ticketRelays(tk)...)
	if err != nil {
		return cliutil.OneLine(err)
	}
	defer p.Close()
	connecting := fmt.Sprintf("connecting to %s", cliutil.Count(len(tk.Peers)+len(extra), "peer"))
	rootOnly := len(tk.Peers) == 0 && len(extra) == 0
	if rootOnly {
		connecting = "looking for peers that have " + tk.Root.String()[:16] + "… (DHT, LAN)"
	}
	opts := []peer.FetchOption{peer.WithPeers(extra...), peer.WithMethod(method), peer.WithNoPeerTimeout(c.Duration("no-peer-timeout")), peer.WithOutFile(),
		peer.WithCheckProgress(checkProgress(pr, onDisk, connecting)),
		peer.WithFetchEvents(func(ev peer.FetchEvent) { pr.Println(fetchEventLine(ev)) }),
		peer.WithReuse(c.StringSlice("reuse")...), peer.WithReuseProgress(reuseProgress(pr, "asking peers for the rest"))}
	if c.Bool("delete") {
		opts = append(opts, peer.WithDelete())
	}
	if c.Bool("no-deltas") {
		opts = append(opts, peer.WithoutDeltas())
	}
	if c.Bool("join-near") {
		opts = append(opts, peer.WithJoinNear())
	}
	// A fetch by root looks its peers up; a fetch whose ticket's peers are
	// all gone does too.
	opts = append(opts, peer.WithLookupProgress(lookupProgress(pr, tk.Root.String()[:16], rootOnly)))
	pr.Status(connecting)
	progress := func(x peer.Progress) { pr.Update(fetchProgress(x)) }
	var ttfbLog io.Writer // -v logs the time to the first block, off a bar
	if cliutil.Verbose(c.App) && pr.Mode() != cliutil.ProgressBar {
		ttfbLog = c.App.ErrWriter
	}
	ttfb := newFirstBlock(processStart, ttfbLog) // reach.go
	opts = append(opts, peer.WithProgress(ttfb.wrap(progress)))
	if rootOnly { // reach.go: a root id alone, found through the DHT or mDNS
		sum, err = p.FetchRoot(ctx, tk.Root, c.String("out"), opts...)
	} else {
		sum, err = p.Fetch(ctx, tk, c.String("out"), opts...)
	}
	pr.Finish(err != nil) // an interrupted fetch keeps its bar: it shows how far it got
	if err != nil {
		if ctx.Err() != nil { // interrupted, whatever the step cut short made of it ("could not connect")
			return cliutil.Interrupted("interrupted; every verified block is kept, run the same command to resume", err)
		}
		if rootOnly && errors.Is(err, peer.ErrNoPeers) {
			return cliutil.OneLine(fmt.Errorf("%w (give the ticket reconcile seed printed, or --peer ADDR)", err))
		}
		if sum == nil && errors.Is(err, peer.ErrNoPeers) {
			return cliutil.OneLine(fmt.Errorf("%w (is reconcile seed still running there, with the same ticket?)", err))
		}
		if errors.Is(err, chunker.ErrLocked) {
			return cliutil.OneLine(err)
		}
		if errors.Is(err, chunker.ErrNoSpace) {
			// The output file's space is reserved as it is created.
			return cliutil.OneLine(fmt.Errorf("%w (free some space and run again, or choose another --out)", err))
		}
		if sum != nil && sum.Resumed+sum.Fetched+sum.ReusedBlocks+sum.DeltaBlocks > 0 {
			return cliutil.OneLine(fmt.Errorf("%w (verified blocks are kept in %s; run again to resume)", err, c.String("out")))
		}
		return cliutil.OneLine(err)
	}
	if c.Bool("json") {
		out := struct {
			*peer.Summary
			FirstBlockSeconds float64 `json:"first_block_seconds,omitempty"` // time to the first block since the command started
		}{sum, ttfb.seconds()}
		if err := cliutil.WriteJSON(c.App.Writer, out); err != nil {
			return err
		}
	} else {
		printSummary(c.App.Writer, sum)
	}
	if c.Bool("seed-after") {
		fmt.Fprintln(c.App.ErrWriter, "seeding the content; ticket:")
		fmt.Fprintln(c.App.ErrWriter, p.Ticket(tk.Root).String())
		<-ctx.Done()
	}
	return cliutil.OneLine(p.Close())
}

// completeOutput returns the summary of a fetch that has nothing to do, when
// out already holds every block of the ticket's content, and nil otherwise
// (no store there, another content, blocks missing: the fetch finds out).
// It also returns the manifest of the ticket's content when out holds a store
// of it (the checking bar of a resume shows its bytes). It needs no network:
// the summary's WireBytesReceived and WireBytesSent are 0.
func completeOutput(out string, tk peer.Ticket, method reconcile.Method) (*peer.Summary, *chunker.Manifest) {
	// Looking touches nothing: a store whose files are gone is the fetch's.
	st, err := chunker.OpenFileStore(context.Background(), out, chunker.WithoutRepair())
	if err != nil {
		st, err = chunker.OpenStore(context.Background(), out, chunker.WithID(tk.Root), chunker.WithoutRepair())
	}
	if err != nil {
		return nil, nil
	}
	defer st.Close()
	m := st.Manifest()
	if m.ID() != tk.Root {
		return nil, nil
	}
	if st.HeldCount() != m.BlockCount() || st.Staged() {
		return nil, m // a staged store is published by the fetch
	}
	return &peer.Summary{Root: tk.Root.String(), Method: method.String(), Out: out, Blocks: m.BlockCount(),
		Bytes: m.TotalSize(), Resumed: m.BlockCount(), Peers: []peer.PeerShare{}}, m
}

// fetchProgress is the progress line of a fetch: bytes held of the content's
// bytes; the rate and the time left come from the bytes received in this run
// only (blocks resumed from disk were not transferred).
func fetchProgress(x peer.Progress) cliutil.ProgressState {
	return cliutil.ProgressState{Done: x.Bytes, Total: x.TotalBytes, Session: x.Received,
		Extra: fmt.Sprintf("%d/%d blocks, %s", x.Blocks, x.TotalBlocks, cliutil.Count(x.Peers, "peer"))}
}

// dialReason words a failed dial on one line: libp2p's "all dials failed"
// lists each address's failure on a line of its own ("  * [ADDR] why"),
// and those lines are what says why.
func dialReason(err error) string {
	if err == nil {
		return "no reason given"
	}
	lines := strings.Split(strings.TrimSpace(err.Error()), "\n")
	if len(lines) == 1 {
		return lines[0]
	}
	var why []string
	for _, l := range lines[1:] {
		if l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "*")); l != "" {
			why = append(why, l)
		}
	}
	return strings.Join(why, "; ")
}

// fetchEventLine words what happened to a peer of the fetch, for a line above
// the progress bar.
func fetchEventLine(ev peer.FetchEvent) string {
	id := shortID(ev.Peer.String())
	switch ev.Kind {
	case peer.FetchCorruptBlock:
		return fmt.Sprintf("fetch: peer %s sent a corrupt block (block %d); asking other peers for it", id, ev.Block)
	case peer.FetchPeerBanned:
		return fmt.Sprintf("fetch: peer %s sent %d corrupt blocks: dropped and banned", id, ev.Corrupt)
	case peer.FetchPeerStillBanned:
		return fmt.Sprintf("fetch: peer %s, banned by an earlier run of this fetch, stays banned until %s", id, ev.Until.Local().Format("15:04:05"))
	case peer.FetchPeerUnreachable:
		return fmt.Sprintf("fetch: cannot reach peer %s yet (%s); trying again for up to %.0f s", id, dialReason(ev.Err), peer.DialRetryFor.Seconds())
	}
	return fmt.Sprintf("fetch: peer %s: %s", id, ev.Kind)
}

// printSummary prints a fetch's summary; sizes and rates in IEC units (MiB/s),
// the rate from the bytes received in this run (not the resumed ones).
func printSummary(w io.Writer, s *peer.Summary) {
	rate := int64(0)
	if s.Seconds > 0 {
		rate = int64(float64(s.Received) / s.Seconds)
	}
	fmt.Fprintf(w, "fetched %s into %s\n", s.Root, s.Out)
	if s.Received > 0 {
		fmt.Fprintf(w, "  time        %.2f s, %s/s (%s received in this run)\n", s.Seconds, cliutil.HumanBytes(rate), cliutil.HumanBytes(s.Received))
	} else {
		// Every block was held, local or rebuilt from a delta: no rate to give.
		fmt.Fprintf(w, "  time        %.2f s, no block received whole\n", s.Seconds)
	}
	fmt.Fprintf(w, "  blocks      %d total, %d resumed, %d fetched, %d redundant, %d rejected\n", s.Blocks, s.Resumed, s.Fetched, s.Redundant, s.Rejected)
	fmt.Fprintf(w, "  bytes       %s of content, %s of %s reconciliation (%d false offers)\n", cliutil.HumanBytes(s.Bytes), cliutil.HumanBytes(s.FilterBytes), s.Method, s.FalseOffers)
	fmt.Fprintf(w, "  network     %s received, %s sent (streams of this fetch, framing included)\n", cliutil.HumanBytes(s.WireBytesReceived), cliutil.HumanBytes(s.WireBytesSent))
	if s.RelayedBytes > 0 {
		fmt.Fprintf(w, "  relayed     %s of the blocks came through relays\n", cliutil.HumanBytes(s.RelayedBytes))
	}
	if s.ReusedBlocks > 0 {
		fmt.Fprintf(w, "  reused      %s (%s) from local files\n", cliutil.Count(s.ReusedBlocks, "block"), cliutil.HumanBytes(s.ReusedBytes))
	}
	if s.DeltaBlocks > 0 {
		fmt.Fprintf(w, "  deltas      %s (%s) rebuilt from the local bytes they replace\n", cliutil.Count(s.DeltaBlocks, "block"), cliutil.HumanBytes(s.DeltaBytes))
	}
	if s.Cells > 0 {
		fmt.Fprintf(w, "  iblt        %d cells sent\n", s.Cells)
	}
	if s.DecodeSeconds > 0 {
		fmt.Fprintf(w, "  decoding    %.3f s\n", s.DecodeSeconds)
	}
	peers := append([]peer.PeerShare(nil), s.Peers...)
	sort.SliceStable(peers, func(i, j int) bool { return peers[i].Bytes > peers[j].Bytes })
	total := 0
	for _, ps := range peers {
		total += ps.Blocks
	}
	for _, ps := range peers {
		share := 0.0
		if total > 0 {
			share = 100 * float64(ps.Blocks) / float64(total)
		}
		line := fmt.Sprintf("  peer %s  %5.1f%%  %s, %s, %s (%s)", shortID(ps.Peer), share, cliutil.Count(ps.Blocks, "block"), cliutil.HumanBytes(ps.Bytes), cliutil.Count(ps.Rounds, "round"), cliutil.Count(ps.RoundTrips, "round trip"))
		if ps.Rejected > 0 {
			line += fmt.Sprintf(", %d corrupt", ps.Rejected)
		}
		if ps.Path != "" {
			line += "  " + pathWords(ps)
		}
		if ps.Stalled > 0 && ps.Dropped == "" {
			line += fmt.Sprintf("  stalled %s (asked of others)", cliutil.Count(ps.Stalled, "request"))
		}
		if ps.Dropped != "" {
			line += "  dropped: " + ps.Dropped
		}
		fmt.Fprintln(w, line)
	}
}

// lookupProgress shows the search for a root's providers (fetch ROOT, or a
// fetch whose ticket's peers are gone) from its first second: on a bar, in
// its status; in plain mode, a line after a second and every 5 s. A DHT that
// knows no peer is said so, with the fix (the ticket too, for a fetch by
// root alone).
func lookupProgress(pr *cliutil.Progress, root string, rootOnly bool) func(peer.Lookup) {
	var mu sync.Mutex
	next := 1.0
	fix := "give --bootstrap ADDR of a reconcile relay"
	if rootOnly {
		fix += ", or the ticket"
	}
	return func(l peer.Lookup) {
		line := fmt.Sprintf("looking for peers that have %s…: %s asked, %s found, %.0f s", root, cliutil.Count(l.Asked, "DHT peer"), cliutil.Count(l.Found, "provider"), l.Seconds)
		if l.Known == 0 && l.Seconds >= 2 {
			line += " (the DHT knows no peer: " + fix + ")"
		}
		switch pr.Mode() {
		case cliutil.ProgressBar:
			pr.Status(line)
		case cliutil.ProgressPlain:
			mu.Lock()
			defer mu.Unlock()
			if l.Seconds >= next {
				pr.Println("fetch: " + line)
				next = l.Seconds + 5
			}
		}
	}
}

// pathWords says how a peer's blocks came: "direct over tcp", "hole-punched
// over quic", "relayed by 12D3Ko…abcdef over tcp".
func pathWords(ps peer.PeerShare) string {
	w := ps.Path
	if ps.Relay != "" {
		w += " by " + shortID(ps.Relay)
	}
	if ps.Transport != "" {
		w += " over " + ps.Transport
	}
	return w
}

// shortID abbreviates a peer id for tables ("12D3Ko…abcdef").
var shortID = hostkit.ShortID

// checkProgress draws the re-hashing of the blocks already on disk when a
// fetch resumes (the calls of peer.WithCheckProgress) with a bar of its own:
// "checking:  40% [=========>  ] 80 MiB / 200 MiB, 310 MiB/s, 1s left,
// 320/800 blocks on disk". In plain mode it prints a line when the check
// starts, every few seconds and when it ends. Once the check is over the
// fetch's progress pr takes over, showing the status after and counting its
// rate from then on. man is the manifest of the store on disk (for the
// bytes); nil shows the blocks only.
func checkProgress(pr *cliutil.Progress, man *chunker.Manifest, after string) func(done, total int) {
	step := stepProgress(pr, "checking", man != nil, after)
	return func(done, total int) {
		s := cliutil.ProgressState{Done: int64(done), Total: int64(total), Session: -1,
			Extra: fmt.Sprintf("%d/%d blocks on disk", done, total)}
		if man != nil {
			s.Done, s.Total = man.BytesOf(done), man.TotalSize()
			if done >= total {
				s.Done = s.Total
			}
		}
		step(s, fmt.Sprintf("fetch: checking %s on disk", cliutil.Count(total, "block")))
	}
}

// reuseProgress draws the reading of local files for blocks they share with
// the content (the older version at --out, and --reuse), as checkProgress
// draws its check.
func reuseProgress(pr *cliutil.Progress, after string) func(done, total int64) {
	step := stepProgress(pr, "reusing", true, after)
	return func(done, total int64) {
		step(cliutil.ProgressState{Done: done, Total: total, Session: -1, Extra: "read of local files"},
			fmt.Sprintf("fetch: reading %s of local files for blocks they share with the content", cliutil.HumanBytes(total)))
	}
}

// stepProgress draws a step before the download (a check, a reuse) with a bar
// of its own, named name, that ends when Done reaches Total; then pr takes
// over with the status after. first is the line plain mode prints as the step
// starts.
func stepProgress(pr *cliutil.Progress, name string, bytes bool, after string) func(s cliutil.ProgressState, first string) {
	var (
		cp   *cliutil.Progress
		done bool
	)
	return func(s cliutil.ProgressState, first string) {
		if pr.Mode() == cliutil.ProgressNone || done {
			return
		}
		if cp == nil {
			cp = pr.Sub(name, bytes)
			if pr.Mode() == cliutil.ProgressPlain {
				pr.Println(first)
			}
		}
		if s.Done < s.Total {
			cp.Update(s)
			return
		}
		if pr.Mode() == cliutil.ProgressPlain {
			cp.Println(cp.Line(s)) // the end, always
		} else {
			cp.Update(s)
		}
		cp.Finish(false)
		done = true
		pr.Restart()
		pr.Status(after)
	}
}
