package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/urfave/cli/v2"
)

// appState is what one run of the app learns while parsing flags that
// runMain needs afterwards.
type appState struct {
	verbose bool
}

const stateKey = "reconcile.state"

// stateOf returns the state newApp stored in app's metadata.
func stateOf(app *cli.App) *appState {
	if st, ok := app.Metadata[stateKey].(*appState); ok {
		return st
	}
	return &appState{}
}

// noteVerbose records --verbose given to c's command or any command above it.
func (st *appState) noteVerbose(c *cli.Context) {
	for _, x := range c.Lineage() {
		if x.Bool("verbose") {
			st.verbose = true
		}
	}
	if st.verbose {
		libp2pLevel.Set(verboseLibp2pLevel)
	}
}

// VerboseFlag is --verbose, -v; every command has it, so it works before or
// after the command's name.
func VerboseFlag() cli.Flag {
	return &cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "on error print the whole wrapped error chain; show libp2p's own logs"}
}

// prepareCommands returns copies of the commands of the tree below parent
// with the shared behaviour: --verbose, one-line usage errors with a hint, a
// refusal of unexpected arguments and unknown subcommands, and errors that
// carry the command's name (see reportError). The registered commands are
// copied, not changed, so every newApp starts from the same tree.
func prepareCommands(cmds []*cli.Command, parent string, st *appState) []*cli.Command {
	out := make([]*cli.Command, 0, len(cmds))
	for _, orig := range cmds {
		cmd := new(cli.Command)
		*cmd = *orig
		path := parent + " " + cmd.Name
		// Required flags are checked here, not by urfave/cli, which prints
		// the whole help page for a missing one.
		var required []string
		cmd.Flags = make([]cli.Flag, 0, len(orig.Flags)+1)
		for _, f := range orig.Flags {
			if sf, ok := f.(*cli.StringFlag); ok && sf.Required {
				nf := *sf
				nf.Required = false
				f = &nf
				required = append(required, sf.Name)
			}
			cmd.Flags = append(cmd.Flags, f)
		}
		if FindFlag(cmd.Flags, "verbose") == nil {
			cmd.Flags = append(cmd.Flags, VerboseFlag())
		}
		cmd.OnUsageError = usageErrorHandler(path, cmd)
		before := orig.Before
		cmd.Before = func(c *cli.Context) error {
			st.noteVerbose(c)
			if before != nil {
				return before(c)
			}
			return nil
		}
		cmd.Subcommands = nil
		if len(orig.Subcommands) > 0 {
			cmd.Subcommands = prepareCommands(orig.Subcommands, path, st)
		}
		action, subs, takesArgs := orig.Action, cmd.Subcommands, cmd.ArgsUsage != ""
		cmd.Action = func(c *cli.Context) error {
			if c.NArg() > 0 && !takesArgs {
				if len(subs) > 0 {
					return unknownCommand(path, c.Args().First(), subs)
				}
				return &usageError{cmd: path, msg: fmt.Sprintf("unexpected argument %q: every setting is a flag", c.Args().First())}
			}
			for _, name := range required {
				if !c.IsSet(name) {
					return &usageError{cmd: path, msg: fmt.Sprintf("--%s is required", name)}
				}
			}
			if action == nil {
				return cli.ShowSubcommandHelp(c)
			}
			if err := action(c); err != nil {
				var ue *usageError
				if errors.As(err, &ue) {
					if ue.cmd == "" {
						ue.cmd = path
					}
					return err
				}
				return &commandError{cmd: path, err: err}
			}
			return nil
		}
		out = append(out, cmd)
	}
	return out
}

// usageError is a mistake on the command line: reported as one line with a
// hint to the command's help, exit code 2.
type usageError struct {
	cmd string // "reconcile fetch"
	msg string
}

func (e *usageError) Error() string { return e.msg }

// Usagef returns a usage error of the running command (prepareCommands fills
// in which): a flag value out of range, a missing argument.
func Usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// commandError is an error returned by a command's action, with the command.
type commandError struct {
	cmd string
	err error
}

func (e *commandError) Error() string { return e.err.Error() }
func (e *commandError) Unwrap() error { return e.err }

// unknownCommand is the usage error for "reconcile frobnicate".
func unknownCommand(path, name string, cmds []*cli.Command) error {
	var names []string
	for _, c := range cmds {
		names = append(names, c.Names()...)
	}
	msg := fmt.Sprintf("unknown command %q", name)
	if s := suggest(name, names); s != "" {
		msg += fmt.Sprintf("; did you mean %q?", s)
	}
	return &usageError{cmd: path, msg: msg}
}

var (
	reUndefinedFlag = regexp.MustCompile(`^flag provided but not defined: -+(.*)$`)
	reNeedsArg      = regexp.MustCompile(`^flag needs an argument: -+(.*)$`)
	reInvalidValue  = regexp.MustCompile(`^invalid value "(.*)" for flag -+([^:]*)`)
	reInvalidBool   = regexp.MustCompile(`^invalid boolean (?:value "(.*)" )?for -+([^:]*)`)
	reNoHelpTopic   = regexp.MustCompile(`^No help topic for '(.*)'$`)
)

// usageErrorHandler turns urfave/cli's flag parsing errors (which it would
// follow with the whole help page) into one usageError of the command at path.
func usageErrorHandler(path string, cmd *cli.Command) cli.OnUsageErrorFunc {
	return func(c *cli.Context, err error, _ bool) error {
		var flags []cli.Flag
		if cmd != nil {
			flags = cmd.Flags
		} else if c.App != nil {
			flags = c.App.Flags
		}
		return &usageError{cmd: path, msg: flagErrorMessage(err.Error(), flags)}
	}
}

// flagErrorMessage rewords a flag package error for people.
func flagErrorMessage(msg string, flags []cli.Flag) string {
	if m := reUndefinedFlag.FindStringSubmatch(msg); m != nil {
		name := strings.SplitN(m[1], "=", 2)[0]
		out := "unknown flag " + dashes(name)
		var names []string
		for _, f := range flags {
			names = append(names, f.Names()...)
		}
		if s := suggest(name, names); s != "" {
			out += "; did you mean " + dashes(s) + "?"
		}
		return out
	}
	if m := reNeedsArg.FindStringSubmatch(msg); m != nil {
		return dashes(m[1]) + " needs a value"
	}
	if m := reInvalidValue.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("%s %q: %s", dashes(m[2]), m[1], wantFor(FindFlag(flags, m[2])))
	}
	if m := reInvalidBool.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("%s takes no value (or =true, =false)", dashes(m[2]))
	}
	return msg
}

// wantFor says what a flag's value should look like.
func wantFor(f cli.Flag) string {
	switch f.(type) {
	case *cli.IntFlag, *cli.Int64Flag, *cli.UintFlag, *cli.Uint64Flag, *cli.IntSliceFlag:
		return "want a whole number"
	case *cli.Float64Flag:
		return "want a number"
	case *cli.DurationFlag:
		return "want a duration such as 10s, 1m30s or 500ms"
	case *cli.BoolFlag:
		return "want true or false"
	}
	return "invalid value"
}

// dashes writes a flag name as the user types it: -o, --out.
func dashes(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// suggest returns the candidate closest to name when it is close enough to be
// a typo (edit distance at most 2, or a prefix), else "".
func suggest(name string, candidates []string) string {
	best, bestD := "", 3
	for _, c := range candidates {
		if len(c) < 2 || c == "help" || c == "h" {
			continue
		}
		d := editDistance(name, c)
		if len(name) >= 3 && strings.HasPrefix(c, name) {
			d = min(d, 1)
		}
		if d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// reportError prints err (if any) as one line on w and returns the exit code.
// Without verbose the line is worded for people: the command, then the error
// without the internal package prefixes of the chain ("peer: seed: chunker:
// lstat /x: ..." becomes "/x: ..."); with verbose it is the whole chain.
func reportError(w io.Writer, err error, verbose bool) int {
	sig := caughtSignal()
	if err == nil {
		return ExitOK
	}
	cmd, inner := "reconcile", err
	var ce *commandError
	if errors.As(err, &ce) {
		cmd, inner = ce.cmd, ce.err
	}
	// "reconcile help frob": urfave/cli's own message, as a usage error.
	if m := reNoHelpTopic.FindStringSubmatch(err.Error()); m != nil {
		err = &usageError{cmd: "reconcile", msg: fmt.Sprintf("unknown command %q", m[1])}
	}
	var ue *usageError
	if errors.As(err, &ue) {
		if ue.cmd != "" {
			cmd = ue.cmd
		}
		fmt.Fprintf(w, "%s: %s (see %s --help)\n", cmd, oneLineString(ue.msg), cmd)
		return ExitUsage
	}
	if verbose {
		fmt.Fprintf(w, "%s: %s\n", cmd, oneLineString(inner.Error()))
	} else {
		msg := userMessage(inner, cmd)
		if sig != 0 && errors.Is(err, context.Canceled) && !strings.Contains(msg, "interrupt") {
			msg = "interrupted"
		}
		if strings.HasPrefix(msg, "--") { // a flag's value, found wanting by the command
			fmt.Fprintf(w, "%s: %s (see %s --help)\n", cmd, msg, cmd)
			return ExitUsage
		}
		fmt.Fprintf(w, "%s: %s\n", cmd, msg)
	}
	if sig != 0 {
		return 128 + sig
	}
	return ExitFailure
}

// internalPrefix matches the package prefixes of the library's errors.
var internalPrefix = regexp.MustCompile(`(^|: |; |\()(?:peer|chunker|reconcile|cbfalgebra|erasure|testnet|transitstub|paperexp|table3|methods): `)

// userMessage is err's message for people: one line, without the library's
// package prefixes, without a repetition of the command's own name, and with
// file system errors as "PATH: what went wrong".
func userMessage(err error, cmd string) string {
	msg := oneLineString(err.Error())
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Op != "" {
		msg = strings.Replace(msg, pe.Op+" "+pe.Path+": ", pe.Path+": ", 1)
	}
	for {
		next := internalPrefix.ReplaceAllString(msg, "$1")
		if next == msg {
			break
		}
		msg = next
	}
	// "reconcile sim table4" drops a leading "sim table4: ", "sim: " or "table4: ".
	words := strings.Fields(cmd)[1:]
	for changed := true; changed; {
		changed = false
		for i := range words {
			for j := len(words); j > i; j-- {
				p := strings.Join(words[i:j], " ") + ": "
				if strings.HasPrefix(msg, p) {
					msg, changed = strings.TrimPrefix(msg, p), true
				}
			}
		}
	}
	return msg
}

// oneLineString joins the lines of a message (errors.Join puts each error on
// its own line) and collapses runs of spaces.
func oneLineString(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", "; ")), " ")
}

// interruptedError is work cut short by a signal: its message says what is
// kept; it unwraps to the cause (context.Canceled).
type interruptedError struct {
	msg string
	err error
}

func (e *interruptedError) Error() string { return e.msg }
func (e *interruptedError) Unwrap() error { return e.err }

// flatError is an error shown on one line that still unwraps to the original
// (so errors.Is, errors.As and --verbose see the whole chain).
type flatError struct{ err error }

func (e *flatError) Error() string { return oneLineString(e.err.Error()) }
func (e *flatError) Unwrap() error { return e.err }

// OneLine flattens an error to one line (errors.Join puts each on its own).
func OneLine(err error) error {
	if err == nil {
		return nil
	}
	return &flatError{err}
}

// signalNumber is the first SIGINT or SIGTERM a SignalContext caught (0: none).
var signalNumber atomic.Int32

// caughtSignal returns the number of the interrupting signal, or 0.
func caughtSignal() int { return int(signalNumber.Load()) }

// SignalContext is cancelled on SIGINT or SIGTERM, which it records for the
// exit code (128 + the signal). After the first signal the default handling
// is back, so a second Ctrl-C ends the process at once.
func SignalContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case s := <-ch:
			if n, ok := s.(syscall.Signal); ok {
				signalNumber.CompareAndSwap(0, int32(n))
			}
			signal.Stop(ch)
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		cancel()
	}
}
