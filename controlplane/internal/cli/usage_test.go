package cli

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// usageFlags returns the flag names ("--since") that a usage line holds.
func usageFlags(usage string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.Fields(usage) {
		w = strings.TrimRight(strings.TrimLeft(w, "["), "]…")
		if strings.HasPrefix(w, "--") {
			for _, alt := range strings.Split(w, "|") {
				out[alt] = true
			}
		}
	}
	return out
}

// TestUsageListsEveryFlag checks, for every command, that its usage line
// (in `-h` and after bad usage) lists every flag the command registers, and
// that each flag that takes a value names it.
func TestUsageListsEveryFlag(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "", "")
	for _, cmd := range (&app{}).commands() {
		var out outputMode
		fs, _, _ := commandFlags(cmd, &out)
		var all []*flag.Flag
		fs.VisitAll(func(f *flag.Flag) { all = append(all, f) })
		if len(all) != len(fs.flags()) {
			t.Errorf("weir %s: %d flags registered, %d in order", cmd.path, len(all), len(fs.flags()))
		}
		help := e.run(t, nil, append(strings.Fields(cmd.path), "-h")...)
		if help.code != exitOK {
			t.Errorf("weir %s -h: exit %d", cmd.path, help.code)
			continue
		}
		usageLine, _, _ := strings.Cut(strings.TrimPrefix(help.stdout, "usage: "), "\n\n")
		bad := e.run(t, nil, append(strings.Fields(cmd.path), "--no-such-flag")...)
		_, badUsage, _ := strings.Cut(bad.stderr, "usage: ")
		for _, f := range all {
			if !usageFlags(usageLine)["--"+f.Name] {
				t.Errorf("weir %s -h: the usage line lacks --%s:\n%s", cmd.path, f.Name, usageLine)
			}
			if !usageFlags(badUsage)["--"+f.Name] {
				t.Errorf("weir %s after bad usage: the usage line lacks --%s:\n%s", cmd.path, f.Name, bad.stderr)
			}
			if !strings.Contains(help.stdout, "\n  --"+f.Name) {
				t.Errorf("weir %s -h does not describe --%s", cmd.path, f.Name)
			}
			if !isBool(f) && valueName(f) == "" {
				t.Errorf("weir %s --%s: the usage text names no value (a `backquoted` word)", cmd.path, f.Name)
			}
		}
		for _, r := range cmd.required {
			if fs.Lookup(r) == nil {
				t.Errorf("weir %s: required flag --%s is not registered", cmd.path, r)
			}
		}
	}
}

// TestCallsListUsage is the case of the issue: `weir calls list -h` showed
// 2 of its 6 flags.
func TestCallsListUsage(t *testing.T) {
	t.Parallel()
	r := newEnv(t, "", "").run(t, nil, "calls", "list", "-h")
	want := "usage: weir calls list [--since DUR] [--member M] [--record RECORD] [--limit N] [--tenant T]\n     [--output json]\n"
	if !strings.HasPrefix(r.stdout, want) {
		t.Errorf("calls list -h:\n%s\nwant it to start with\n%s", r.stdout, want)
	}
	if !strings.Contains(r.stdout, "  --limit N\n        list at most N calls, newest first (0: all) (default 100)\n") {
		t.Errorf("calls list -h does not give --limit's meaning and default:\n%s", r.stdout)
	}
}

func TestWrapWords(t *testing.T) {
	t.Parallel()
	got := wrapWords(strings.Fields("weir a bb ccc dddd"), 10, "  ")
	if want := "weir a bb\n  ccc dddd"; got != want {
		t.Errorf("wrap %q, want %q", got, want)
	}
}

// TestDocsAreCurrent checks that docs/cli.md is what `make docs` writes
// from the command table now (`make check-docs` checks the same in CI), and
// that it documents every command and flag.
func TestDocsAreCurrent(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	if err := WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	committed, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	if string(committed) != got {
		t.Errorf("docs/cli.md is stale: run make docs")
	}
	for _, cmd := range (&app{}).commands() {
		if !strings.Contains(got, "\n### weir "+cmd.path+"\n") {
			t.Errorf("docs/cli.md has no section for weir %s", cmd.path)
		}
		var out outputMode
		fs, _, _ := commandFlags(cmd, &out)
		_, section, _ := strings.Cut(got, "\n### weir "+cmd.path+"\n")
		section, _, _ = strings.Cut(section, "\n### ")
		for _, f := range fs.flags() {
			if !strings.Contains(section, "\n- `--"+f.Name) {
				t.Errorf("docs/cli.md: weir %s does not describe --%s", cmd.path, f.Name)
			}
		}
	}
	for _, v := range []string{"WEIR_CONFIG_DIR", "WEIR_URL", "WEIR_TOKEN", "--output json", "## Exit codes"} {
		if !strings.Contains(got, v) {
			t.Errorf("docs/cli.md does not mention %s", v)
		}
	}
}
