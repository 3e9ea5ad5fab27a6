package cli

import (
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestParseInterspersed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		args     []string
		wantPos  []string
		wantTags map[string]string
		wantList []string
		wantBool bool
		wantStr  string
	}{
		{name: "flags after positionals",
			args:    []string{"azure-eu", "sweden", "--preset", "azure-openai", "--internal"},
			wantPos: []string{"azure-eu", "sweden"}, wantStr: "azure-openai", wantBool: true},
		{name: "flags between positionals",
			args:    []string{"--tag", "a=1", "rec", "--tag=b=2", "mem", "--region", "eu", "--region", "us"},
			wantPos: []string{"rec", "mem"}, wantTags: map[string]string{"a": "1", "b": "2"}, wantList: []string{"eu", "us"}},
		{name: "double dash ends flags",
			args:    []string{"rec", "--", "--preset", "x"},
			wantPos: []string{"rec", "--preset", "x"}},
		{name: "single dash is positional",
			args:    []string{"-", "--preset=openai"},
			wantPos: []string{"-"}, wantStr: "openai"},
		{name: "bool then positional",
			args:    []string{"--internal", "rec"},
			wantPos: []string{"rec"}, wantBool: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fs := flag.NewFlagSet("x", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			tags := &kvFlag{want: "K=V"}
			list := &listFlag{}
			fs.Var(tags, "tag", "")
			fs.Var(list, "region", "")
			b := fs.Bool("internal", false, "")
			s := fs.String("preset", "", "")
			pos, err := parseInterspersed(fs, tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantPos, pos, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("positionals (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantTags, tags.m, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("tags (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantList, list.vals, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("list (-want +got):\n%s", diff)
			}
			if *b != tt.wantBool || *s != tt.wantStr {
				t.Errorf("internal=%v preset=%q, want %v %q", *b, *s, tt.wantBool, tt.wantStr)
			}
		})
	}
}

func TestListFlagSplitsAndRepeats(t *testing.T) {
	t.Parallel()
	l := &listFlag{split: true}
	for _, v := range []string{"a,b", "c", ""} {
		if err := l.Set(v); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]string{"a", "b", "c"}, l.vals); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if err := l.Set("a,,b"); err == nil {
		t.Error(`Set("a,,b") accepted an empty item`)
	}
}

func TestCheckHost(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"acme-sweden.openai.azure.com", "localhost:8443", "10.0.0.1", "[::1]:443", "[fd00::1]"} {
		if err := checkHost(ok); err != nil {
			t.Errorf("checkHost(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "https://a.com", "a.com/path", "a.com:", ":443", "a.com:99999", "::1", "user@a.com", "[::1"} {
		if err := checkHost(bad); err == nil {
			t.Errorf("checkHost(%q) accepted it", bad)
		}
	}
}

func TestValidName(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"a", "azure-eu", "key_1", strings.Repeat("x", 64)} {
		if !validName(ok) {
			t.Errorf("validName(%q) = false", ok)
		}
	}
	for _, bad := range []string{"", "Azure", "a b", "a.b", "é", strings.Repeat("x", 65)} {
		if validName(bad) {
			t.Errorf("validName(%q) = true", bad)
		}
	}
}

// TestBadUsageExitsTwo runs command lines that are bad usage: each must exit
// 2, say what is wrong on stderr with a usage line, print nothing on stdout
// and send no request.
func TestBadUsageExitsTwo(t *testing.T) {
	t.Parallel()
	f, url := startFake(t)
	e := newEnv(t, url, "tok")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"provider", "pool", "add", "r", "m", "--base-url", "https://x", "--weight", "0"}, "--weight 0: must be 1-10000"},
		{[]string{"provider", "pool", "add", "r", "m", "--weight", "ten"}, "--weight ten: not an integer"},
		{[]string{"provider", "pool", "add", "r", "m", "--order", "101"}, "--order 101: must be 1-100"},
		{[]string{"provider", "create", "r", "--preset", "gemini", "--rpd", "1000000001"}, "--rpd 1000000001: must be 0-1000000000"},    // R-HEAD-6
		{[]string{"provider", "pool", "add", "r", "m", "--max-in-flight", "1000001"}, "--max-in-flight 1000001: must be 0-1000000"},     // R-CAP-1
		{[]string{"provider", "create", "r", "--preset", "vertex", "--day-zone", "Mars/Olympus"}, "--day-zone: want an IANA time zone"}, // R-HEAD-6
		{[]string{"provider", "pool", "set", "r", "m", "--day-zone", "UTC"}, "day-zone"},
		{[]string{"provider", "pool", "add", "r", "m", "--price", "gpt=abc"}, `--price gpt=abc: amount "abc" is not a decimal`},
		{[]string{"provider", "pool", "add", "r", "m", "--price", "gpt=0.0000001,1"}, "more than 6 decimal places"},
		{[]string{"provider", "pool", "add", "r", "m", "--price", "gpt=1,2", "--price", "gpt=3,4"}, `"gpt" priced twice`},
		{[]string{"provider", "pool", "add", "r", "m", "--retains-data=maybe"}, "--retains-data maybe: want true or false"},
		{[]string{"provider", "pool", "add", "r", "m", "--tag", "novalue"}, "--tag novalue: want K=V"},
		{[]string{"provider", "pool", "add", "r", "m", "--tag", "a=1", "--tag", "a=2"}, `"a" given twice`},
		{[]string{"provider", "pool", "add", "r", "m", "--model", "gpt"}, "--model gpt: want CALLER=MEMBER"},
		{[]string{"provider", "pool", "add", "r", "m", "--auth-kind", "magic"}, "--auth-kind: want api-key"},
		{[]string{"provider", "pool", "add", "r", "m", "--preset", "azure"}, "--preset: want openai"},
		{[]string{"provider", "pool", "add", "r", "m", "--region", "eu north"}, "invalid region"},
		{[]string{"provider", "pool", "add", "r", "m", "--key-secret", "Bad.Secret"}, "invalid secret name"},
		{[]string{"provider", "pool", "add", "r", "m", "--base-url", "acme.com"}, "--base-url: want an absolute"},
		{[]string{"provider", "pool", "add", "r"}, "missing MEMBER"},
		{[]string{"provider", "pool", "add", "r", "m", "extra"}, `unexpected argument "extra"`},
		{[]string{"provider", "pool", "add", "R", "m"}, "invalid record name"},
		{[]string{"provider", "pool", "set", "r", "m", "--off", "--on"}, "--off and --on exclude each other"},
		{[]string{"provider", "pool", "set", "r", "m"}, "nothing to change"},
		{[]string{"provider", "pool", "set", "r", "m", "--record-member", "x"}, "not defined: --record-member"},
		{[]string{"provider", "create", "r", "--preset", "openai", "--max-wait", "5"}, "--max-wait 5: want a Go duration"},
		{[]string{"provider", "create", "r", "--preset", "openai", "--max-wait", "-5s"}, "must not be negative"},
		{[]string{"provider", "create", "r", "--preset", "openai", "--rate-limit-header", "foo=x"}, "unknown rate-limit dimension"},
		{[]string{"provider", "create", "r", "--base-url", "https://x"}, "--preset is required"},
		{[]string{"provider", "create", "r", "--preset", "openai", "--weight", "2"}, "not defined: --weight"},
		{[]string{"provider", "set", "r"}, "nothing to change"},
		{[]string{"provider", "share", "r"}, "--tenant is required"},
		{[]string{"tenant", "create", "Acme"}, "invalid tenant name"},
		{[]string{"tenant", "rules", "set", "--tenant", "acme", "--allow-region", "eu/1"}, "invalid region"},
		{[]string{"key", "create", "ci", "--tenant", "acme", "--allow-provider", "No"}, "invalid record name"},
		{[]string{"key", "list"}, "no tenant"},
		{[]string{"key", "list", "--tenant", "Bad"}, "invalid tenant name"},
		{[]string{"secret", "set", "s"}, "at least one --host"},
		{[]string{"secret", "set", "s", "--host", "https://a.com"}, "invalid host"},
		{[]string{"budget", "set", "b", "--tenant", "acme", "--limit", "1.0000000001", "--period", "day"}, "more than 9 decimal places"},
		{[]string{"budget", "set", "b", "--tenant", "acme", "--limit", "0", "--period", "day"}, "must be more than 0"},
		{[]string{"budget", "set", "b", "--tenant", "acme", "--limit", "5", "--period", "week"}, "--period: want day, month or total"},
		{[]string{"budget", "set", "b", "--tenant", "acme", "--period", "day"}, "--limit and --period are required"},
		{[]string{"usage", "export", "--from", "2026-13-01", "--to", "2026-01-31"}, "--from: want YYYY-MM-DD"},
		{[]string{"usage", "export", "--from", "2026-02-01", "--to", "2026-01-31"}, "--from must be before --to"},
		{[]string{"usage", "export", "--from", "2026-01-01", "--to", "2026-01-31", "--format", "xml"}, "--format: want csv or json"},
		{[]string{"calls", "list", "--tenant", "acme", "--since", "yesterday"}, "--since yesterday: want a Go duration"},
		{[]string{"tenant", "list", "--output", "yaml"}, "--output yaml: want table or json"},
		{[]string{"--output", "yaml", "tenant", "list"}, "--output yaml: want table or json"},
		{[]string{"login", "--url", "ftp://x", "--token", "t"}, "invalid URL"},
		{[]string{"tenant", "frobnicate"}, "unknown command"},
		{[]string{"provider"}, "needs a subcommand"},
		{[]string{}, "usage: weir"},
	}
	for _, tt := range tests {
		r := e.run(t, nil, tt.args...)
		if r.code != exitBadArgs {
			t.Errorf("weir %s: exit %d, want 2\nstderr: %s", strings.Join(tt.args, " "), r.code, r.stderr)
			continue
		}
		if !strings.Contains(r.stderr, tt.want) {
			t.Errorf("weir %s: stderr %q, want it to say %q", strings.Join(tt.args, " "), r.stderr, tt.want)
		}
		if !strings.Contains(r.stderr, "usage: weir") {
			t.Errorf("weir %s: stderr has no usage line: %q", strings.Join(tt.args, " "), r.stderr)
		}
		if r.stdout != "" {
			t.Errorf("weir %s: stdout %q, want nothing", strings.Join(tt.args, " "), r.stdout)
		}
	}
	if reqs := f.requests(); len(reqs) != 0 {
		t.Errorf("bad usage sent requests: %v", procedures(reqs))
	}
}

func TestHelpExitsZero(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "", "")
	for _, args := range [][]string{{"-h"}, {"help"}, {"help", "provider", "pool", "add"}, {"provider", "pool", "add", "-h"}, {"provider", "--help"}} {
		r := e.run(t, nil, args...)
		if r.code != 0 || !strings.Contains(r.stdout, "usage: weir") {
			t.Errorf("weir %s: exit %d, stdout %q", strings.Join(args, " "), r.code, r.stdout)
		}
	}
	r := e.run(t, nil, "provider", "pool", "add", "--help")
	for _, fl := range []string{"--preset", "--base-url", "--models", "--key-secret", "--region", "--retains-data", "--tag",
		"--weight", "--order", "--price", "--rpm", "--input-tpm", "--output-tpm", "--model", "--account", "--auth-kind",
		"--auth-header", "--aws-service", "--aws-region", "--access-key-secret", "--token-url", "--client-id",
		"--client-secret-secret", "--record-member", "--tenant", "--output"} {
		if !strings.Contains(r.stdout, "\n  "+fl+"\n") && !strings.Contains(r.stdout, "\n  "+fl+" ") {
			t.Errorf("pool add help lacks %s", fl)
		}
	}
}

// TestRefusedValueSaidOnce checks that a value a flag refuses is reported in
// the CLI's words, "--flag VALUE: why", with the value given once.
func TestRefusedValueSaidOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "", "")
	for _, tt := range []struct {
		args  []string
		value string
		want  string
	}{
		{[]string{"--price", "claude-x=3,abc"}, "claude-x=3,abc", `error: --price claude-x=3,abc: amount "abc" is not a decimal number of dollars such as 2.75` + "\n"},
		{[]string{"--price", "claude-x"}, "claude-x", "error: --price claude-x: want M=IN,OUT[,CR[,CW]] in dollars per million tokens\n"},
		{[]string{"--price", "claude-x=1,2,3,4,5"}, "claude-x=1,2,3,4,5", "error: --price claude-x=1,2,3,4,5: at most 4 amounts (input, output, cache read, cache write)\n"},
		{[]string{"--tag", "team"}, "team", "error: --tag team: want K=V\n"},
	} {
		r := e.run(t, nil, append([]string{"provider", "pool", "add", "r", "m"}, tt.args...)...)
		first, _, _ := strings.Cut(r.stderr, "usage: ")
		if r.code != exitBadArgs || first != tt.want || strings.Count(first, tt.value) != 1 {
			t.Errorf("%v: exit %d, stderr starts %q, want %q", tt.args, r.code, first, tt.want)
		}
	}
}
