package peer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/reconcile-p2p/reconcile/chunker"
	"github.com/reconcile-p2p/reconcile/peer/clock"
	"github.com/reconcile-p2p/reconcile/peer/serve"
	"github.com/reconcile-p2p/reconcile/peer/swarm"
)

// SeedOption configures Seed.
type SeedOption func(*seedConfig) error

type seedConfig struct {
	blockSize   int
	chunking    chunker.Chunking // content-defined blocks, when not zero
	sourceCheck time.Duration
	superSeed   bool
	trees       int // joined stripe trees (WithTrees), 0 for none
	progress    func(done, total int64)
	// alt, when set, makes the units served beside the store's blocks.
	alt altMaker
}

// WithSeedProgress calls fn as Seed reads the files to cut and hash them,
// with the bytes read so far and their total (chunker.WithProgress). fn runs
// on the reading goroutine and must be quick. Default: no calls.
func WithSeedProgress(fn func(done, total int64)) SeedOption {
	return func(c *seedConfig) error { c.progress = fn; return nil }
}

// defaultSourceCheck is how often a seed looks for changes of its source files.
const defaultSourceCheck = 2 * time.Second

// WithSourceCheck sets how often Seed looks at the size and modification time
// of the seeded files: a changed file has its blocks re-hashed, and those that
// no longer match are no longer served (nor offered) and logged, as a warning
// "source file F changed: ... no longer match; not serving them". A block read
// for a fetcher after its file changed is re-hashed whatever this period.
// Default 2 s; 0 turns the periodic check off.
func WithSourceCheck(every time.Duration) SeedOption {
	return func(c *seedConfig) error {
		if every < 0 {
			return errors.New("peer: WithSourceCheck: negative period")
		}
		c.sourceCheck = every
		return nil
	}
}

// WithBlockSize sets the block size Seed chunks with. Default
// chunker.DefaultBlockSize (256 KiB).
func WithBlockSize(n int) SeedOption {
	return func(c *seedConfig) error {
		if n < chunker.MinBlockSize || n > chunker.MaxBlockSize {
			return fmt.Errorf("peer: block size %d not in [%d, %d]: %w", n, chunker.MinBlockSize, chunker.MaxBlockSize, chunker.ErrBadBlockSize)
		}
		c.blockSize = n
		return nil
	}
}

// WithContentDefined makes Seed cut the content into content-defined
// blocks (chunker.WithChunking with c; chunker.DefaultChunking when c is
// zero): their boundaries follow the bytes, so that an insertion or a
// deletion changes only the blocks around it, the same bytes give the same
// blocks in any file and version, and no block spans two files. It
// excludes WithBlockSize, and the Byers baseline (WithByers), which needs
// fixed-size blocks. Default: fixed-size blocks.
func WithContentDefined(c chunker.Chunking) SeedOption {
	return func(sc *seedConfig) error {
		if c.IsZero() {
			c = chunker.DefaultChunking
		}
		if err := c.Check(); err != nil {
			return fmt.Errorf("peer: WithContentDefined: %w", err)
		}
		sc.chunking = c
		return nil
	}
}

// WithSuperSeeding makes Seed offer each fetcher only a few blocks at a time,
// those it has sent least often, rather than every block the fetcher lacks
// (BitTorrent's super-seeding): a seed with many fetchers then sends each
// block once before any twice, and the fetchers trade the rest. A fetcher
// that watches the seed (the default for one-round methods) is offered two
// blocks it has not asked for at a time, the next as soon as it asks, so a
// lone fetcher is served at its window's pace; one that does not watch gets
// four per reconciliation. Default: off.
func WithSuperSeeding() SeedOption {
	return func(c *seedConfig) error {
		c.superSeed = true
		return nil
	}
}

// Seed chunks the file or tree at path, serves it in place (read-only, without
// copying) and returns its ticket, naming this peer and its addresses. It
// serves until Close or Unserve. Entries of the tree the content cannot hold
// (symbolic links out of the tree, devices, sockets, named pipes) are left
// out, each with a warning on the service's log that names it.
func (p *Service) Seed(ctx context.Context, path string, opts ...SeedOption) (Ticket, error) {
	sc := seedConfig{sourceCheck: defaultSourceCheck}
	for _, o := range opts {
		if err := o(&sc); err != nil {
			return Ticket{}, err
		}
	}
	var copts []chunker.ChunkOption
	if !sc.chunking.IsZero() {
		if sc.blockSize != 0 {
			return Ticket{}, errors.New("peer: seed: WithBlockSize and WithContentDefined exclude each other")
		}
		copts = append(copts, chunker.WithChunking(sc.chunking))
	}
	if sc.progress != nil {
		copts = append(copts, chunker.WithProgress(sc.progress))
	}
	// What the content leaves out (a link out of the tree, a named pipe) is
	// said, by name: a fetcher would otherwise miss it without a word.
	copts = append(copts, chunker.WithSkipped(func(path, reason string) {
		p.log.Warn("left out of the content", "path", path, "reason", reason)
	}))
	m, err := chunker.ChunkPath(ctx, path, sc.blockSize, copts...)
	if err != nil {
		return Ticket{}, fmt.Errorf("peer: seed: %w", err)
	}
	s, err := chunker.SeedStore(ctx, path, m)
	if err != nil {
		return Ticket{}, fmt.Errorf("peer: seed: %w", err)
	}
	c, err := serve.NewContent(m, s)
	if err != nil {
		s.Close()
		return Ticket{}, err
	}
	if sc.alt != nil {
		alt, err := sc.alt(ctx, s)
		if err != nil {
			s.Close()
			return Ticket{}, err
		}
		c.SetAlt(alt)
	}
	if sc.superSeed {
		c.Super = serve.NewSuperSeed(p.clk, m.BlockCount())
	}
	if err := p.lib.Add(c); err != nil {
		s.Close()
		return Ticket{}, err
	}
	if sc.trees > 0 {
		if err := p.nd.Place(m.ID(), sc.trees); err != nil {
			p.lib.Remove(m.ID())
			s.Close()
			return Ticket{}, fmt.Errorf("peer: seed: %w", err)
		}
	}
	if sc.sourceCheck > 0 {
		p.goroutine(func() { watchSources(p.ctx, c, p.clk, p.log, sc.sourceCheck) })
	}
	return p.Ticket(m.ID()), nil
}

// watchSources checks the source files of the seeded content c every period
// (chunker.Store.CheckSources) and logs what changed, until the service
// closes or the content's store is closed (Unserve).
func watchSources(ctx context.Context, c *serve.Content, clk clock.Clock, log *slog.Logger, every time.Duration) {
	t := clk.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.Chan():
		}
		ch, err := c.Store.CheckSources(ctx)
		switch {
		case errors.Is(err, chunker.ErrClosed) || ctx.Err() != nil:
			return
		case err != nil:
			log.Warn("checking the source files failed", "root", c.Man.ID(), "err", err)
		case len(ch.Dropped) > 0 || len(ch.Restored) > 0:
			log.Warn(sourceChangeText(c.Man, ch))
		case ch.Changed():
			log.Info(sourceChangeText(c.Man, ch))
		}
	}
}

// sourceChangeText words a change of a seed's source files in one line:
// "source file movie.mkv changed: 15 of 16 blocks no longer match (blocks
// 0-14); not serving them".
func sourceChangeText(m *chunker.Manifest, ch chunker.SourceChange) string {
	var s string
	switch len(ch.Files) {
	case 0:
		s = "a source file changed"
	case 1:
		s = "source file " + ch.Files[0] + " changed"
	default:
		s = fmt.Sprintf("%d source files changed (%s)", len(ch.Files), strings.Join(ch.Files[:min(3, len(ch.Files))], ", "))
		if len(ch.Files) > 3 {
			s = s[:len(s)-1] + ", …)"
		}
	}
	var parts []string
	switch n := len(ch.Dropped); {
	case n == 1:
		parts = append(parts, fmt.Sprintf("block %d no longer matches; not serving it", ch.Dropped[0]))
	case n > 1:
		parts = append(parts, fmt.Sprintf("%d of %d blocks no longer match (%s); not serving them", n, m.BlockCount(), swarm.BlockRanges(ch.Dropped, 8)))
	}
	switch n := len(ch.Restored); {
	case n == 1:
		parts = append(parts, fmt.Sprintf("block %d matches again; serving it again", ch.Restored[0]))
	case n > 1:
		parts = append(parts, fmt.Sprintf("%s match again; serving them again", swarm.BlockRanges(ch.Restored, 8)))
	}
	if len(parts) == 0 {
		if len(ch.Files) > 1 {
			return s + ", but their blocks still match"
		}
		return s + ", but its blocks still match"
	}
	return s + ": " + strings.Join(parts, "; ")
}

// ServeOption configures Serve.
type ServeOption func(*serveConfig) error

type serveConfig struct {
	superSeed bool
	trees     int // joined stripe trees (WithServeTrees), 0 for none
	// alt, when set, makes the units served beside the store's blocks.
	alt altMaker
}

// altMaker makes the units a content of store s serves beside its blocks
// (the options of byers.go set it).
type altMaker func(ctx context.Context, s *chunker.Store) (serve.AltUnits, error)

// WithServeSuperSeeding is WithSuperSeeding for Serve: each reconciliation
// is answered with only the few blocks sent least often. Default: off.
func WithServeSuperSeeding() ServeOption {
	return func(c *serveConfig) error {
		c.superSeed = true
		return nil
	}
}

// Serve serves the blocks held by an open store (complete or not), for
// example one a fetch filled earlier, or one to fill with FetchServed. The
// service takes ownership of the store and closes it on Close or Unserve.
func (p *Service) Serve(s *chunker.Store, opts ...ServeOption) (Ticket, error) {
	var sc serveConfig
	for _, o := range opts {
		if err := o(&sc); err != nil {
			return Ticket{}, err
		}
	}
	var alt serve.AltUnits
	if sc.alt != nil {
		var err error
		if alt, err = sc.alt(p.ctx, s); err != nil {
			return Ticket{}, err
		}
	}
	if err := p.addContent(s, alt, sc.superSeed); err != nil {
		return Ticket{}, err
	}
	if sc.trees > 0 && s.Complete() {
		if err := p.nd.Place(s.Manifest().ID(), sc.trees); err != nil {
			return Ticket{}, fmt.Errorf("peer: serve: %w", err)
		}
	}
	return p.Ticket(s.Manifest().ID()), nil
}

// Unserve stops serving the content with the given root and closes its store.
// It reports whether the content was served.
func (p *Service) Unserve(root chunker.ID) (bool, error) {
	c := p.lib.Remove(root)
	if c == nil {
		return false, nil
	}
	return true, c.Close()
}

// ServedBytes returns, for the content with the given root, the block bytes
// this peer has sent to each remote peer (by peer id), or nil if the content
// is not served.
func (p *Service) ServedBytes(root chunker.ID) map[string]int64 {
	c := p.lib.Get(root)
	if c == nil {
		return nil
	}
	out := make(map[string]int64)
	for id, n := range c.SentTo() {
		out[id.String()] = n
	}
	return out
}

// Held reports, for the content with the given root, how many blocks this
// peer holds and how many the content has (ok false if it is not served).
func (p *Service) Held(root chunker.ID) (held, total int, ok bool) {
	c := p.lib.Get(root)
	if c == nil {
		return 0, 0, false
	}
	return c.Store.HeldCount(), c.Man.BlockCount(), true
}

// addContent serves the store st (and the units alt beside its blocks, if
// not nil), super-seeding its blocks if super is set.
func (p *Service) addContent(st *chunker.Store, alt serve.AltUnits, super bool) error {
	c, err := serve.NewContent(st.Manifest(), st)
	if err != nil {
		return err
	}
	if alt != nil {
		c.SetAlt(alt)
	}
	if super {
		c.Super = serve.NewSuperSeed(p.clk, st.Manifest().BlockCount())
	}
	return p.lib.Add(c)
}
