package cli

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// flagSet is a flag.FlagSet that remembers the order its flags were
// registered in, so that usage lines, `-h` and docs/cli.md list a command's
// flags in the order its setup gives them (the order of DESIGN §3) from the
// one registration that also parses them.
//
// A flag's usage text names its value the way package flag does: the first
// `backquoted` word is the value's name in the usage line ("`DUR`" gives
// "--since DUR"), and is shown without the quotes in the help.
type flagSet struct {
	*flag.FlagSet
	order []string
}

// newFlagSet returns a silent flag set (errors are reported by fail).
func newFlagSet(name string) *flagSet {
	fs := &flagSet{FlagSet: flag.NewFlagSet(name, flag.ContinueOnError)}
	fs.SetOutput(io.Discard)
	return fs
}

// Var defines a flag with a custom value.
func (fs *flagSet) Var(v flag.Value, name, help string) {
	fs.FlagSet.Var(v, name, help)
	fs.order = append(fs.order, name)
}

// StringVar defines a string flag stored in p.
func (fs *flagSet) StringVar(p *string, name, value, help string) {
	fs.FlagSet.StringVar(p, name, value, help)
	fs.order = append(fs.order, name)
}

// String defines a string flag.
func (fs *flagSet) String(name, value, help string) *string {
	p := new(string)
	fs.StringVar(p, name, value, help)
	return p
}

// BoolVar defines a boolean flag stored in p.
func (fs *flagSet) BoolVar(p *bool, name string, value bool, help string) {
	fs.FlagSet.BoolVar(p, name, value, help)
	fs.order = append(fs.order, name)
}

// Bool defines a boolean flag.
func (fs *flagSet) Bool(name string, value bool, help string) *bool {
	p := new(bool)
	fs.BoolVar(p, name, value, help)
	return p
}

// flags returns the flags in registration order.
func (fs *flagSet) flags() []*flag.Flag {
	out := make([]*flag.Flag, 0, len(fs.order))
	for _, name := range fs.order {
		out = append(out, fs.Lookup(name))
	}
	return out
}

// repeatable is implemented by the values of flags that may be given more
// than once, each adding to the list.
type repeatable interface{ repeatable() bool }

// isBool reports whether f takes no value.
func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// valueName returns the name of f's value from its usage text (the first
// `backquoted` word), "" for a boolean flag or a usage without one.
func valueName(f *flag.Flag) string {
	if isBool(f) {
		return ""
	}
	_, rest, ok := strings.Cut(f.Usage, "`")
	if !ok {
		return ""
	}
	name, _, ok := strings.Cut(rest, "`")
	if !ok {
		return ""
	}
	return name
}

// helpText returns f's usage text without the backquotes, and without a
// leading "`NAME`: " that only repeats the value's name.
func helpText(f *flag.Flag) string {
	u := f.Usage
	if rest, ok := strings.CutPrefix(u, "`"+valueName(f)+"`: "); ok && valueName(f) != "" {
		u = rest
	}
	return strings.ReplaceAll(u, "`", "")
}

// defaultText returns f's default as shown in help, "" when it is the zero
// value (the help text then says what leaving it out means).
func defaultText(f *flag.Flag) string {
	switch f.DefValue {
	case "", "0", "0s", "false", "table":
		return ""
	}
	return f.DefValue
}

// flagSynopsis returns the synopsis word of f: "--since DUR", in brackets
// unless required, with "…" when it may be repeated.
func flagSynopsis(f *flag.Flag, required bool) string {
	s := "--" + f.Name
	if v := valueName(f); v != "" {
		s += " " + v
	}
	if !required {
		s = "[" + s + "]"
	}
	if r, ok := f.Value.(repeatable); ok && r.repeatable() {
		s += "…"
	}
	return s
}

// commandFlags registers every flag of cmd on a fresh flag set, as exec
// does: the command's own, then --tenant for tenant-scoped commands, then
// the global --output. It returns the set, the command's run function and
// the --tenant value (nil when the command takes none).
func commandFlags(cmd *command, output *outputMode) (*flagSet, runFunc, *string) {
	fs := newFlagSet(cmd.path)
	run := cmd.setup(fs)
	var tenant *string
	if cmd.tenant != noTenant {
		help := "tenant name `T` to act in (default: the tenant saved by weir login --tenant T)"
		if cmd.tenant == tenantOptional {
			help += `; --tenant "" for managed records and secrets, or the whole cluster (cluster admins)`
		}
		tenant = fs.String("tenant", "", help)
	}
	fs.Var(output, "output", outputHelp)
	return fs, run, tenant
}

// outputHelp is the help of the global --output flag.
const outputHelp = "`json` prints the answer as JSON (field names as in the admin API, enums as the words people read); table (the default) prints text"

// synopsisWords returns the words of cmd's usage line: "weir", the path, the
// positional arguments, then every flag of fs.
func (cmd *command) synopsisWords(fs *flagSet) []string {
	words := append([]string{"weir"}, strings.Fields(cmd.path)...)
	words = append(words, cmd.args...)
	required := map[string]bool{}
	for _, r := range cmd.required {
		required[r] = true
	}
	for _, f := range fs.flags() {
		words = append(words, flagSynopsis(f, required[f.Name]))
	}
	return words
}

// synopsisWidth is where usage lines wrap.
const synopsisWidth = 100

// synopsis returns cmd's usage line, wrapped at synopsisWidth with continuation
// lines indented as in DESIGN §3. Every flag of the command is in it.
func (cmd *command) synopsis() string {
	var dummy outputMode
	fs, _, _ := commandFlags(cmd, &dummy)
	return wrapWords(cmd.synopsisWords(fs), synopsisWidth, "     ")
}

// wrapWords joins words with spaces into lines of at most width
// characters (a longer word stands alone), continuation lines starting with
// indent.
func wrapWords(words []string, width int, indent string) string {
	var b strings.Builder
	line := 0
	for i, w := range words {
		n := len([]rune(w))
		switch {
		case i == 0:
		case line+1+n > width:
			b.WriteString("\n" + indent)
			line = len(indent)
		default:
			b.WriteByte(' ')
			line++
		}
		b.WriteString(w)
		line += n
	}
	return b.String()
}

// printHelp prints a command's usage line, what it does, and each flag
// with its meaning and default.
func printHelp(w io.Writer, cmd *command, fs *flagSet) {
	fmt.Fprintf(w, "usage: %s\n\n%s\n", wrapWords(cmd.synopsisWords(fs), synopsisWidth, "     "), cmd.summary)
	for _, n := range cmd.notes {
		fmt.Fprintf(w, "\n%s\n", wrapWords(strings.Fields(n), synopsisWidth, ""))
	}
	fmt.Fprintf(w, "\nflags:\n")
	for _, f := range fs.flags() {
		head := "--" + f.Name
		if v := valueName(f); v != "" {
			head += " " + v
		}
		text := helpText(f)
		if d := defaultText(f); d != "" {
			text += " (default " + d + ")"
		}
		fmt.Fprintf(w, "  %s\n        %s\n", head, wrapWords(strings.Fields(text), synopsisWidth-8, "        "))
	}
}
