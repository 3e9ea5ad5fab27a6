// Package cli is the `weir` command-line client of the admin API
// (DESIGN.md §3). Its commands, flags, output shapes and exit codes are a
// contract that scripts outside this repository drive:
//
//   - exit 0 on success, 1 when a request was refused or failed (the error and
//     every validation problem printed once on stderr, named by the flag that
//     set it), 2 on bad usage (the command's usage line on stderr);
//   - human tables on stdout by default, `--output json` on every command,
//     with every enum as the word people read (package words), never a
//     protobuf enum name;
//   - usage lines, `-h` and docs/cli.md are generated from the command table
//     (commands.go) and the flags each command registers (usage.go, docs.go),
//     so they list every flag;
//   - warnings returned with a change printed on stderr as "warning: …";
//   - secret values are read from stdin only and never printed.
//
// Flags may follow positional arguments and list flags may be repeated. Money
// is read and printed as exact decimal dollars and sent as integer micro- or
// nano-dollars (R-COST-5).
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"connectrpc.com/connect"
)

// Exit codes of the CLI contract.
const (
	exitOK      = 0
	exitFailed  = 1
	exitBadArgs = 2
)

// App is one run of the CLI with its environment. Tests build one with fake
// streams and environment; main builds one from the process's.
type App struct {
	// Getenv reads an environment variable (WEIR_URL, WEIR_TOKEN,
	// WEIR_CONFIG_DIR).
	Getenv func(string) string
	// Stdin is read by `weir secret set` only.
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// HTTPClient carries the Connect calls; nil means a default client.
	HTTPClient connect.HTTPClient
}

// Run runs the CLI with args (the program name left out) and returns the
// exit code. It never calls os.Exit.
func Run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	return (&App{Getenv: getenv, Stdin: stdin, Stdout: stdout, Stderr: stderr}).Run(ctx, args)
}

// Run runs one command line and returns the exit code.
func (o *App) Run(ctx context.Context, args []string) int {
	a := &app{App: *o, output: outputTable}
	if a.Getenv == nil {
		a.Getenv = func(string) string { return "" }
	}
	if a.HTTPClient == nil {
		a.HTTPClient = defaultHTTPClient()
	}
	return a.run(ctx, args)
}

// app is the state of one run: the options, the output mode and, once a
// command needs them, the config and clients.
type app struct {
	App
	output  outputMode
	cfg     *Config
	clients *clients
	// fieldWords, set by commands whose flags fill a request's spec, names
	// the request field of a validation problem in the CLI's words (the
	// flag that set it); nil leaves field paths as they are.
	fieldWords func(string) string
}

// scope says whether a command takes --tenant and whether it needs one.
type scope int

const (
	// noTenant commands take no --tenant scope.
	noTenant scope = iota
	// tenantOptional commands accept an empty tenant: managed records and
	// secrets, or the whole cluster (cluster admins).
	tenantOptional
	// tenantRequired commands need a tenant.
	tenantRequired
)

// command is one leaf command such as "provider pool add".
type command struct {
	// path is the words after "weir".
	path string
	// args are the positional arguments' names; each is a name (1-64 of
	// [a-z0-9_-]) checked before the command runs, except CALL_ID.
	args []string
	// summary says what the command does, in one line.
	summary string
	// notes are further paragraphs of `-h` and docs/cli.md.
	notes []string
	// required names the flags the command needs (shown without brackets
	// in its usage line).
	required []string
	tenant   scope
	// setup registers the command's flags and returns the function that
	// runs it once the flags are parsed. The usage line, `-h` and
	// docs/cli.md are generated from the same registration.
	setup func(fs *flagSet) runFunc
}

// runFunc runs a parsed command.
type runFunc func(ctx context.Context, c *call) error

// call is one parsed invocation of a command.
type call struct {
	*app
	cmd *command
	// args are the positional arguments, already checked.
	args []string
	// given names the flags present on the command line.
	given map[string]bool
	// tenant is the resolved --tenant scope ("" for managed or cluster-wide).
	tenant string
}

// badArgsError is a command line the CLI cannot run (bad usage): exit 2,
// printing synopsis, the command's usage line, when set.
type badArgsError struct {
	msg      string
	synopsis string
}

// Error implements error.
func (e *badArgsError) Error() string { return e.msg }

// badArgsf returns a badArgsError of the call's command.
func (c *call) badArgsf(format string, args ...any) error {
	return &badArgsError{msg: fmt.Sprintf(format, args...), synopsis: c.cmd.synopsis()}
}

// run dispatches args to a command and returns the exit code.
func (a *app) run(ctx context.Context, args []string) int {
	gfs := newFlagSet("weir")
	gfs.Var(&a.output, "output", outputHelp)
	// Global flags (--output) may come before the command; gfs.Parse stops
	// at the first command word.
	err := gfs.Parse(args)
	rest := gfs.Args()
	cmds := a.commands()
	switch {
	case errors.Is(err, flag.ErrHelp):
		a.printOverview(a.Stdout, cmds, "")
		return exitOK
	case err != nil:
		return a.fail(&badArgsError{msg: dashDash(err).Error(), synopsis: "weir [--output json] COMMAND [ARGS] [FLAGS]"})
	case len(rest) == 0:
		a.printOverview(a.Stderr, cmds, "")
		return exitBadArgs
	case rest[0] == "help":
		prefix := strings.Join(rest[1:], " ")
		if cmd := findCommand(cmds, rest[1:]); cmd != nil && len(strings.Fields(cmd.path)) == len(rest)-1 {
			fs, _, _ := commandFlags(cmd, &a.output)
			printHelp(a.Stdout, cmd, fs)
			return exitOK
		}
		a.printOverview(a.Stdout, cmds, prefix)
		return exitOK
	}
	cmd := findCommand(cmds, rest)
	if cmd == nil {
		return a.unknown(cmds, rest)
	}
	return a.exec(ctx, cmd, rest[len(strings.Fields(cmd.path)):])
}

// findCommand returns the command whose path is the longest prefix of words.
func findCommand(cmds []*command, words []string) *command {
	var best *command
	bestLen := 0
	for _, cmd := range cmds {
		p := strings.Fields(cmd.path)
		if len(p) > len(words) || len(p) <= bestLen {
			continue
		}
		match := true
		for i := range p {
			match = match && p[i] == words[i]
		}
		if match {
			best, bestLen = cmd, len(p)
		}
	}
	return best
}

// unknown reports a command line that names no command: the commands of
// the group it starts, if any, with exit 0 for -h and 2 otherwise.
func (a *app) unknown(cmds []*command, words []string) int {
	var group []string
	for _, w := range words {
		if strings.HasPrefix(w, "-") {
			break
		}
		group = append(group, w)
	}
	prefix := strings.Join(group, " ")
	for len(group) > 0 && !hasPrefix(cmds, prefix) {
		group = group[:len(group)-1]
		prefix = strings.Join(group, " ")
	}
	for _, w := range words {
		if w == "-h" || w == "-help" || w == "--help" {
			a.printOverview(a.Stdout, cmds, prefix)
			return exitOK
		}
	}
	if prefix != "" && prefix == strings.Join(words, " ") {
		fmt.Fprintf(a.Stderr, "error: weir %s needs a subcommand\n", prefix)
	} else {
		fmt.Fprintf(a.Stderr, "error: unknown command %q\n", "weir "+strings.Join(words, " "))
	}
	a.printOverview(a.Stderr, cmds, prefix)
	return exitBadArgs
}

// hasPrefix reports whether some command's path starts with the words of
// prefix.
func hasPrefix(cmds []*command, prefix string) bool {
	for _, cmd := range cmds {
		if cmd.path == prefix || strings.HasPrefix(cmd.path, prefix+" ") {
			return true
		}
	}
	return false
}

// exec parses a command's flags and arguments and runs it.
func (a *app) exec(ctx context.Context, cmd *command, args []string) int {
	fs, run, tenant := commandFlags(cmd, &a.output)
	pos, err := parseInterspersed(fs.FlagSet, args)
	if errors.Is(err, flag.ErrHelp) {
		printHelp(a.Stdout, cmd, fs)
		return exitOK
	}
	if err != nil {
		return a.fail(&badArgsError{msg: err.Error(), synopsis: cmd.synopsis()})
	}
	c := &call{app: a, cmd: cmd, args: pos, given: givenFlags(fs.FlagSet)}
	if err := c.checkArgs(); err != nil {
		return a.fail(err)
	}
	if tenant != nil {
		if err := c.resolveTenant(*tenant); err != nil {
			return a.fail(err)
		}
	}
	return a.fail(run(ctx, c))
}

// checkArgs checks the number of positional arguments and that each names a
// valid name.
func (c *call) checkArgs() error {
	want := c.cmd.args
	switch {
	case len(c.args) < len(want):
		return c.badArgsf("missing %s", strings.Join(want[len(c.args):], " "))
	case len(c.args) > len(want):
		return c.badArgsf("unexpected argument %q", c.args[len(want)])
	}
	for i, name := range want {
		if name == "CALL_ID" {
			if c.args[i] == "" {
				return c.badArgsf("empty call id")
			}
			continue
		}
		what := strings.ToLower(name)
		if name == "NAME" {
			what = strings.Fields(c.cmd.path)[0]
		}
		if err := checkName(what, c.args[i]); err != nil {
			return c.badArgsf("%v", err)
		}
	}
	return nil
}

// resolveTenant sets c.tenant from --tenant, else from the saved config.
func (c *call) resolveTenant(flagValue string) error {
	t := flagValue
	if !c.given["tenant"] {
		cfg, err := c.config()
		if err != nil {
			return err
		}
		t = cfg.Tenant
	}
	if t != "" {
		if err := checkName("tenant", t); err != nil {
			return c.badArgsf("%v", err)
		}
	}
	if t == "" && c.cmd.tenant == tenantRequired {
		return c.badArgsf("no tenant: give --tenant T, or save a default with weir login --tenant T")
	}
	c.tenant = t
	return nil
}

// config loads the saved config once and applies WEIR_URL and WEIR_TOKEN
// over it.
func (a *app) config() (*Config, error) {
	if a.cfg != nil {
		return a.cfg, nil
	}
	cfg, err := loadConfig(a.Getenv)
	if err != nil {
		return nil, err
	}
	if u := a.Getenv("WEIR_URL"); u != "" {
		cfg.URL = u
	}
	if t := a.Getenv("WEIR_TOKEN"); t != "" {
		cfg.Token = t
	}
	a.cfg = &cfg
	return a.cfg, nil
}

// api returns the admin API clients, built from the config on first use.
func (a *app) api() (*clients, error) {
	if a.clients != nil {
		return a.clients, nil
	}
	cfg, err := a.config()
	if err != nil {
		return nil, err
	}
	if cfg.URL == "" || cfg.Token == "" {
		return nil, &badArgsError{msg: "not logged in: run weir login --url URL --token TOKEN, or set WEIR_URL and WEIR_TOKEN"}
	}
	if err := checkURL(cfg.URL); err != nil {
		return nil, &badArgsError{msg: err.Error()}
	}
	a.clients = newClients(a.HTTPClient, cfg.URL, cfg.Token)
	return a.clients, nil
}

// printOverview lists the commands whose path starts with prefix.
func (a *app) printOverview(w io.Writer, cmds []*command, prefix string) {
	fmt.Fprintln(w, "usage: weir [--output json] COMMAND [ARGS] [FLAGS]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	lines := make([]string, 0, len(cmds))
	for _, cmd := range cmds {
		if prefix == "" || cmd.path == prefix || strings.HasPrefix(cmd.path, prefix+" ") {
			lines = append(lines, fmt.Sprintf("  %-44s %s", "weir "+cmd.path+" "+strings.Join(cmd.args, " "), cmd.summary))
		}
	}
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run weir COMMAND -h for a command's flags. Exit codes: 0 ok, 1 refused or failed, 2 bad usage.")
}

// fail prints err as the CLI contract says and returns its exit code.
func (a *app) fail(err error) int {
	if err == nil {
		return exitOK
	}
	var ue *badArgsError
	if errors.As(err, &ue) {
		fmt.Fprintf(a.Stderr, "error: %s\n", ue.msg)
		if ue.synopsis != "" {
			fmt.Fprintf(a.Stderr, "usage: %s\n", ue.synopsis)
		}
		return exitBadArgs
	}
	a.printError(err)
	return exitFailed
}
