package cliutil

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"regexp"
	"strings"

	"github.com/urfave/cli/v2"
)

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

// Interrupted returns the error of work cut short by Ctrl-C or SIGTERM: msg
// says what is kept ("interrupted; every verified block is kept"), and it
// unwraps to err, the cause.
func Interrupted(msg string, err error) error { return &interruptedError{msg: msg, err: err} }

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
