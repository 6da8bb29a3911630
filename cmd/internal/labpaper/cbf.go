package labpaper

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/reconcile-p2p/reconcile/cbfalgebra"
	"github.com/reconcile-p2p/reconcile/cmd/internal/cliutil"
)

// cbfCommand is reconcile cbf and its subcommands.
func cbfCommand() *cli.Command {
	return &cli.Command{
		Name:  "cbf",
		Usage: "build, combine, query and inspect counting Bloom filter files",
		Description: "Items are read one per input line (the line's bytes without its line ending).\n\n" +
			"Example:\n" +
			"   printf 'a\\nb\\nc\\n' | reconcile cbf build --m 1024 --k 4 -o u.cbf\n" +
			"   printf 'a\\nb\\n' | reconcile cbf build --m 1024 --k 4 -o s.cbf\n" +
			"   reconcile cbf op complement --universe u.cbf s.cbf -o not-s.cbf\n" +
			"   printf 'a\\nc\\n' | reconcile cbf query not-s.cbf      # prints c",
		Subcommands: []*cli.Command{cbfBuildCommand(), cbfOpCommand(), cbfQueryCommand(), cbfInfoCommand()},
	}
}

func cbfBuildCommand() *cli.Command {
	return &cli.Command{
		Name:      "build",
		Usage:     "build a CBF from the items on standard input",
		ArgsUsage: "< items",
		Description: "Example:\n   reconcile cbf build --m 65536 --k 6 --hash sha1 -o words.cbf < words.txt\n\n" +
			"With --n and --fp instead of --m and --k, m is the smallest power of two for n items\n" +
			"at that false-positive rate and k = ln2·m/n.",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "m", Usage: "number of counters"},
			&cli.IntFlag{Name: "k", Usage: "number of hash functions"},
			&cli.IntFlag{Name: "n", Usage: "expected number of items (with --fp, instead of --m/--k)"},
			&cli.Float64Flag{Name: "fp", Usage: "target false-positive rate (with --n)", Value: 0.01},
			&cli.IntFlag{Name: "r", Usage: "bits per counter: 4, 8 or 16", Value: cbfalgebra.DefaultCounterBits},
			&cli.StringFlag{Name: "hash", Usage: "hash family: fast or sha1 (the paper's scheme; m a power of two)", Value: "fast"},
			&cli.Uint64Flag{Name: "seed", Usage: "hash seed (filters combine only with equal seeds)"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write the filter to `FILE`", Required: true},
		},
		Action: func(c *cli.Context) error {
			h, err := cbfalgebra.ParseHashFamily(c.String("hash"))
			if err != nil {
				return err
			}
			opts := []cbfalgebra.Option{cbfalgebra.WithCounterBits(c.Int("r")), cbfalgebra.WithHash(h), cbfalgebra.WithSeed(c.Uint64("seed"))}
			var f *cbfalgebra.CBF
			switch {
			case c.IsSet("m") || c.IsSet("k"):
				if !c.IsSet("m") || !c.IsSet("k") {
					return errors.New("cbf build: give both --m and --k (or --n and --fp)")
				}
				if c.IsSet("n") || c.IsSet("fp") {
					return errors.New("cbf build: give either --m and --k or --n and --fp, not both")
				}
				f, err = cbfalgebra.New(c.Int("m"), c.Int("k"), opts...)
			case c.IsSet("n"):
				f, err = cbfalgebra.NewForEstimate(c.Int("n"), c.Float64("fp"), opts...)
			default:
				return errors.New("cbf build: give --m and --k, or --n (and --fp)")
			}
			if err != nil {
				return err
			}
			if err := eachLine(c.App.Reader, func(item []byte) error { f.Insert(item); return nil }); err != nil {
				return fmt.Errorf("reading items: %w", err)
			}
			return writeFilterFile(c.String("output"), f)
		},
	}
}

func cbfOpCommand() *cli.Command {
	return &cli.Command{
		Name:      "op",
		Usage:     "combine homologous filters: union, intersect, subtract, xor or complement",
		ArgsUsage: "OP A.cbf [B.cbf]",
		Description: "The algebra of the paper, counter by counter, with U the universe filter:\n" +
			"   complement  U - A                     (one operand)\n" +
			"   intersect   min(A, B)                 (no universe needed)\n" +
			"   subtract    min(A, U - B)             A \\ B\n" +
			"   union       A + min(B, U - A)\n" +
			"   xor         min(A, U - B) + min(B, U - A)\n" +
			"Results have no false negatives. Filters must be homologous (same m, k, r, hash, seed).\n\n" +
			"Example:\n   reconcile cbf op subtract --universe u.cbf b.cbf a.cbf -o b-minus-a.cbf",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "universe", Aliases: []string{"u"}, Usage: "the universe filter CBF(U) `FILE`"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write the result to `FILE`", Required: true},
		},
		Action: func(c *cli.Context) error {
			args := c.Args().Slice()
			if len(args) < 2 {
				return errors.New("cbf op: usage: reconcile cbf op OP --universe U.cbf A.cbf [B.cbf] -o F")
			}
			op, files := args[0], args[1:]
			want := 2
			switch op {
			case "complement":
				want = 1
			case "intersect", "subtract", "union", "xor":
			default:
				return fmt.Errorf("cbf op: unknown operation %q (want union, intersect, subtract, xor or complement)", op)
			}
			if len(files) != want {
				return fmt.Errorf("cbf op %s: takes %d filter file(s), got %d", op, want, len(files))
			}
			var u *cbfalgebra.CBF
			if op != "intersect" {
				if c.String("universe") == "" {
					return fmt.Errorf("cbf op %s: needs --universe U.cbf", op)
				}
				var err error
				if u, err = readFilterFile(c.String("universe")); err != nil {
					return err
				}
			}
			fs := make([]*cbfalgebra.CBF, len(files))
			for i, name := range files {
				var err error
				if fs[i], err = readFilterFile(name); err != nil {
					return err
				}
			}
			var res *cbfalgebra.CBF
			var err error
			switch op {
			case "complement":
				res, err = cbfalgebra.Complement(u, fs[0])
			case "intersect":
				res, err = cbfalgebra.Intersect(fs[0], fs[1])
			case "subtract":
				res, err = cbfalgebra.Subtract(fs[0], fs[1], u)
			case "union":
				res, err = cbfalgebra.Union(fs[0], fs[1], u)
			case "xor":
				res, err = cbfalgebra.Xor(fs[0], fs[1], u)
			}
			if err != nil {
				return fmt.Errorf("cbf op %s: %w", op, err)
			}
			return writeFilterFile(c.String("output"), res)
		},
	}
}

func cbfQueryCommand() *cli.Command {
	return &cli.Command{
		Name:        "query",
		Usage:       "print the items on standard input that may be members of the filter",
		ArgsUsage:   "F.cbf < items",
		Description: "Example:\n   reconcile cbf query words.cbf < candidates.txt",
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return errors.New("cbf query: usage: reconcile cbf query F.cbf < items")
			}
			f, err := readFilterFile(c.Args().First())
			if err != nil {
				return err
			}
			w := bufio.NewWriter(c.App.Writer)
			err = eachLine(c.App.Reader, func(item []byte) error {
				if !f.Contains(item) {
					return nil
				}
				if _, err := w.Write(item); err != nil {
					return err
				}
				return w.WriteByte('\n')
			})
			if err != nil {
				return fmt.Errorf("reading items: %w", err)
			}
			return w.Flush()
		},
	}
}

// cbfInfo is the JSON form of "reconcile cbf info".
type cbfInfo struct {
	M         int      `json:"m"`
	K         int      `json:"k"`
	R         int      `json:"r"`
	Hash      string   `json:"hash"`
	Seed      uint64   `json:"seed"`
	N         int      `json:"n"`
	Fill      float64  `json:"fill"`
	Saturated int      `json:"saturated"`
	Bytes     int      `json:"bytes"`
	Counters  []uint16 `json:"counters,omitempty"` // r <= 16: a quarter of the memory of []int
}

func cbfInfoCommand() *cli.Command {
	return &cli.Command{
		Name:        "info",
		Usage:       "print a filter's parameters, element count, fill ratio and saturated counters",
		ArgsUsage:   "F.cbf",
		Description: "Example:\n   reconcile cbf info --json --counters words.cbf",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print one JSON document"},
			&cli.BoolFlag{Name: "counters", Usage: "also print every counter value in order"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return errors.New("cbf info: usage: reconcile cbf info [--json] [--counters] F.cbf")
			}
			f, err := readFilterFile(c.Args().First())
			if err != nil {
				return err
			}
			p := f.Params()
			info := cbfInfo{M: p.M, K: p.K, R: p.R, Hash: p.Hash.String(), Seed: p.Seed, N: f.Len(),
				Fill: f.FillRatio(), Saturated: f.Saturated(), Bytes: f.EncodedSize()}
			if c.Bool("counters") {
				info.Counters = make([]uint16, p.M)
				for i := range info.Counters {
					info.Counters[i] = uint16(f.Counter(i))
				}
			}
			if c.Bool("json") {
				return cliutil.WriteJSON(c.App.Writer, info)
			}
			w := c.App.Writer
			fmt.Fprintf(w, "m %d  k %d  r %d  hash %s  seed %d\n", info.M, info.K, info.R, info.Hash, info.Seed)
			fmt.Fprintf(w, "elements %d  fill %.4f  saturated %d  encoded %d bytes\n", info.N, info.Fill, info.Saturated, info.Bytes)
			if info.Counters != nil {
				for i, v := range info.Counters {
					sep := " "
					if i%32 == 31 || i == len(info.Counters)-1 {
						sep = "\n"
					}
					fmt.Fprintf(w, "%x%s", v, sep)
				}
			}
			return nil
		},
	}
}

// eachLine calls fn with every line of r, without its line ending ("\n" or
// "\r\n"). A last line without a newline counts too.
func eachLine(r io.Reader, fn func([]byte) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			line = bytes.TrimSuffix(line, []byte("\n"))
			line = bytes.TrimSuffix(line, []byte("\r"))
			if ferr := fn(line); ferr != nil {
				return ferr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// readFilterFile reads one CBF file. The size limit is the file's own size
// (at least the default), so that every filter "cbf build" writes can be read
// back; the decoder allocates only as the bytes arrive.
func readFilterFile(name string) (*cbfalgebra.CBF, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	limit := int64(cbfalgebra.DefaultMaxEncodedSize)
	if st, err := f.Stat(); err == nil {
		limit = max(limit, st.Size())
	}
	c, err := cbfalgebra.ReadCBF(f, int(min(limit, math.MaxInt)))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	// A valid file holds exactly one filter.
	var one [1]byte
	if n, _ := f.Read(one[:]); n != 0 {
		return nil, fmt.Errorf("%s: %w: trailing bytes after the filter", name, cbfalgebra.ErrCorrupt)
	}
	return c, nil
}

// writeFilterFile writes c to name atomically (a temporary file renamed into place).
func writeFilterFile(name string, c *cbfalgebra.CBF) error {
	b, err := c.MarshalBinary()
	if err != nil {
		return err
	}
	return writeFileAtomic(name, b)
}

// writeFileAtomic writes data to name through a temporary file in the same
// folder, synced and renamed, so a crash never leaves a half-written file.
func writeFileAtomic(name string, data []byte) error {
	tmp := name + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, name)
}
