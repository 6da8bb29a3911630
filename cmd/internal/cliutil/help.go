package cliutil

import (
	"bytes"
	"io"
	"regexp"
	"strings"

	"github.com/urfave/cli/v2"
)

// HelpWidth is the width of every help page: a longer line (a flag's usage,
// a command's, a line of a description) is wrapped, its continuation lines
// indented to the column its text starts at.
const HelpWidth = 100

// printHelp is urfave/cli's help printer, wrapped to HelpWidth columns.
func printHelp(w io.Writer, templ string, data any) {
	var b bytes.Buffer
	cli.HelpPrinterCustom(&b, templ, data, nil)
	io.WriteString(w, wrapHelp(b.String(), HelpWidth))
}

// hangingText finds where the text of a help line starts after its name: a
// flag's usage after "--out FILE", a command's after "fetch", an item's
// explanation after "complete" (the first run of two spaces or more).
var hangingText = regexp.MustCompile(`^( *)\S.*?\S? {2,}(\S)`)

// wrapHelp wraps every line of text longer than width at spaces.
// Continuation lines are indented to where the line's text starts after its
// name (see hangingText), or else as the line is, plus two spaces.
func wrapHelp(text string, width int) string {
	lines := strings.Split(text, "\n")
	out := make([]string, 0, len(lines))
	for _, line := range lines {
		if len(line) <= width {
			out = append(out, line)
			continue
		}
		indent := len(line) - len(strings.TrimLeft(line, " "))
		hang := indent + 2
		if m := hangingText.FindStringSubmatchIndex(line); m != nil && m[4] <= 60 {
			hang = m[4]
		}
		out = append(out, wrapLine(line, width, strings.Repeat(" ", hang))...)
	}
	return strings.Join(out, "\n")
}

// wrapLine breaks line at spaces into lines of at most width columns (a
// word longer than that stays whole), the second and later after pad.
func wrapLine(line string, width int, pad string) []string {
	var out []string
	cur := line
	for len(cur) > width {
		cut := strings.LastIndex(cur[:width+1], " ")
		if cut <= len(pad) {
			// One word fills the line: break after it.
			next := strings.Index(cur[len(pad)+1:], " ")
			if next < 0 {
				break
			}
			cut = len(pad) + 1 + next
		}
		out = append(out, strings.TrimRight(cur[:cut], " "))
		cur = pad + strings.TrimLeft(cur[cut:], " ")
	}
	return append(out, cur)
}

// defaultFlagString is urfave/cli's own rendering of a flag in help.
var defaultFlagString = cli.FlagStringer

// repeatHint is how urfave/cli shows that a flag may be given again:
// "--peer value [ --peer value ]".
var repeatHint = regexp.MustCompile(` \[ -[^\]]* \]`)

// flagString renders a flag in help as urfave/cli does, without its
// repetition ("[ --peer ADDR ]": the usage says "repeatable") and without
// "(default: false)" after a bool flag.
func flagString(f cli.Flag) string {
	s := repeatHint.ReplaceAllString(defaultFlagString(f), "")
	return strings.Replace(s, " (default: false)", "", 1)
}

// commandHelpTemplate is the help page of a command: urfave/cli's, without
// the CATEGORY section (reconcile --help shows it), and with flag
// categories headed by their name alone.
const commandHelpTemplate = `NAME:
   {{template "helpNameTemplate" .}}

USAGE:
   {{template "usageTemplate" .}}{{if .Description}}

DESCRIPTION:
   {{template "descriptionTemplate" .}}{{end}}{{if .VisibleFlagCategories}}

OPTIONS:` + flagCategories + `{{else if .VisibleFlags}}

OPTIONS:{{template "visibleFlagTemplate" .}}{{end}}
`

// subcommandHelpTemplate is the help page of a command with subcommands.
const subcommandHelpTemplate = `NAME:
   {{template "helpNameTemplate" .}}

USAGE:
   {{template "usageTemplate" .}}{{if .Description}}

DESCRIPTION:
   {{template "descriptionTemplate" .}}{{end}}{{if .VisibleCommands}}

COMMANDS:{{template "visibleCommandCategoryTemplate" .}}{{end}}{{if .VisibleFlagCategories}}

OPTIONS:` + flagCategories + `{{else if .VisibleFlags}}

OPTIONS:{{template "visibleFlagTemplate" .}}{{end}}
`

// flagCategories lists the flags without a category, then each category
// after a blank line and its name.
const flagCategories = `{{range .VisibleFlagCategories}}{{if .Name}}

   {{.Name}}{{end}}{{range .Flags}}
   {{.}}{{end}}{{end}}`
