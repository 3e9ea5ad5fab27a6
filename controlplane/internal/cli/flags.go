package cli

import (
	"errors"
	"flag"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"weir.dev/routing/rules"
)

// parseInterspersed parses args with fs and returns the positional arguments
// in order. Unlike flag.FlagSet.Parse it does not stop at the first
// positional argument, so flags may follow them ("provider create RECORD
// --preset openai"). A "--" ends the flags: everything after it is positional.
// Repeated flags are handled by their flag.Value (see listFlag and kvFlag).
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, dashDash(err)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// dashDash rewrites the flag package's messages, which name flags with one
// dash, to the two-dash spelling this CLI documents, and a refused value as
// the CLI's words: `--price gpt=abc: amount "abc" is not …`, the value
// given once.
func dashDash(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	msg := err.Error()
	// The flag package's message for a value its flag refused.
	badValue := regexp.MustCompile(`^invalid (?:boolean )?value ("(?:[^"\\]|\\.)*") for (?:flag )?-([^:]+): `)
	if m := badValue.FindStringSubmatchIndex(msg); m != nil {
		v, uerr := strconv.Unquote(msg[m[2]:m[3]])
		if uerr != nil {
			v = msg[m[2]:m[3]]
		}
		why := msg[m[1]:]
		if why == "parse error" { // a boolean flag's value
			why = "want true or false"
		}
		return errors.New("--" + msg[m[4]:m[5]] + " " + v + ": " + why)
	}
	msg = strings.Replace(msg, "flag -", "flag --", 1)
	msg = strings.Replace(msg, "defined: -", "defined: --", 1)
	msg = strings.Replace(msg, "argument: -", "argument: --", 1)
	return errors.New(msg)
}

// validName reports whether s is a valid name of a tenant, record, member,
// key, secret or budget: 1-64 characters of [a-z0-9_-].
func validName(s string) bool {
	if len(s) < 1 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// checkName returns a usage error naming what when s is not a valid name.
func checkName(what, s string) error {
	if !validName(s) {
		return fmt.Errorf("invalid %s name %q: want 1-64 characters of [a-z0-9_-]", what, s)
	}
	return nil
}

// checkRegion accepts a region name (rules.ValidRegion), and with glob
// also a region glob such as "eu-*" (rules.ValidRegionPattern), for data
// rules and allowed regions.
func checkRegion(s string, glob bool) error {
	switch {
	case glob && !rules.ValidRegionPattern(s):
		return fmt.Errorf("invalid region %q: want a region name or a glob, 1-64 characters of [A-Za-z0-9_*?-]", s)
	case !glob && !rules.ValidRegion(s):
		return fmt.Errorf("invalid region %q: want 1-64 characters of [A-Za-z0-9_-]", s)
	}
	return nil
}

// checkHost accepts a host name or name:port without scheme or path, as
// secrets are bound to (R-SEC-1). IPv6 literals are written in brackets.
func checkHost(s string) error {
	bad := func(why string) error { return fmt.Errorf("invalid host %q: %s", s, why) }
	if s == "" {
		return bad("empty")
	}
	if strings.Contains(s, "://") || strings.ContainsAny(s, "/?#@ \t") {
		return bad("want a host name or name:port, without scheme, user or path")
	}
	host, port := s, ""
	if strings.HasPrefix(s, "[") {
		end := strings.Index(s, "]")
		if end < 0 {
			return bad("unclosed '['")
		}
		host, port = s[1:end], strings.TrimPrefix(s[end+1:], ":")
		if s[end+1:] != "" && !strings.HasPrefix(s[end+1:], ":") {
			return bad("junk after ']'")
		}
	} else if h, p, ok := strings.Cut(s, ":"); ok {
		host, port = h, p
		if strings.Contains(p, ":") {
			return bad("IPv6 addresses are written in brackets")
		}
	}
	if host == "" {
		return bad("empty host name")
	}
	if strings.HasPrefix(s, ":") || strings.HasSuffix(s, ":") {
		return bad("empty port")
	}
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return bad("port must be 1-65535")
		}
	}
	return nil
}

// listFlag collects the values of a repeatable flag. With split, each value
// is also split at commas ("--models a,b --models c"). An empty value adds
// nothing but still counts as given, which is how `set` commands clear a
// list ("--allow-region=").
type listFlag struct {
	vals  []string
	split bool
	check func(string) error
}

// String implements flag.Value.
func (l *listFlag) String() string { return strings.Join(l.vals, ",") }

// repeatable reports that the flag may be given again to add values; a
// comma-separated list flag is shown as one "M,M…" value instead.
func (l *listFlag) repeatable() bool { return !l.split }

// Set implements flag.Value.
func (l *listFlag) Set(s string) error {
	if s == "" {
		return nil
	}
	parts := []string{s}
	if l.split {
		parts = strings.Split(s, ",")
	}
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			return fmt.Errorf("empty item in the list")
		}
		if l.check != nil {
			if err := l.check(p); err != nil {
				return err
			}
		}
		l.vals = append(l.vals, p)
	}
	return nil
}

// kvFlag collects repeated KEY=VALUE flags into a map. A key given twice is
// an error. An empty value adds nothing but counts as given (see listFlag).
type kvFlag struct {
	m     map[string]string
	want  string // the syntax shown in errors, e.g. "K=V"
	check func(k, v string) error
}

// String implements flag.Value.
func (f *kvFlag) String() string {
	var b strings.Builder
	for k, v := range f.m {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k + "=" + v)
	}
	return b.String()
}

// repeatable reports that the flag may be given again to add pairs.
func (f *kvFlag) repeatable() bool { return true }

// Set implements flag.Value.
func (f *kvFlag) Set(s string) error {
	if s == "" {
		return nil
	}
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" || v == "" {
		return fmt.Errorf("want %s", f.want)
	}
	if f.check != nil {
		if err := f.check(k, v); err != nil {
			return err
		}
	}
	if f.m == nil {
		f.m = map[string]string{}
	}
	if _, dup := f.m[k]; dup {
		return fmt.Errorf("%q given twice", k)
	}
	f.m[k] = v
	return nil
}

// checkTag accepts a tag or required tag: key and value 1-64 printable
// characters (rules.ValidTagText).
func checkTag(k, v string) error {
	if !rules.ValidTagText(k) || !rules.ValidTagText(v) {
		return fmt.Errorf("tag %s=%s: key and value must be 1-%d printable characters", k, v, rules.MaxTagLen)
	}
	return nil
}

// checkRateLimitHeader accepts DIM=NAME where DIM is one of the keys
// rules.RateLimitKeys (R-HEAD-2) and NAME a header name.
func checkRateLimitHeader(dim, name string) error {
	if !rules.ValidRateLimitKey(dim) {
		return fmt.Errorf("unknown rate-limit dimension %q: want %s", dim, rules.RateLimitKeys)
	}
	if !rules.ValidHeaderName(name) {
		return fmt.Errorf("invalid header name %q", name)
	}
	return nil
}

// intFlag is an integer flag with inclusive bounds, so that a value out of
// range is a usage error naming the range.
type intFlag[T int32 | int64 | uint32] struct {
	v        T
	min, max int64
}

// String implements flag.Value.
func (f *intFlag[T]) String() string { return strconv.FormatInt(int64(f.v), 10) }

// Set implements flag.Value.
func (f *intFlag[T]) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("not an integer")
	}
	if n < f.min || n > f.max {
		return fmt.Errorf("must be %d-%d", f.min, f.max)
	}
	f.v = T(n)
	return nil
}

// durFlag is a Go duration flag ("30s", "2m"). An empty value counts as
// given with no duration, which `set` commands send as "clear".
type durFlag struct {
	d     time.Duration
	empty bool
}

// String implements flag.Value.
func (f *durFlag) String() string {
	if f.empty {
		return ""
	}
	return f.d.String()
}

// Set implements flag.Value.
func (f *durFlag) Set(s string) error {
	if s == "" {
		f.empty, f.d = true, 0
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want a Go duration such as 30s or 2m")
	}
	if d < 0 {
		return fmt.Errorf("must not be negative")
	}
	f.d, f.empty = d, false
	return nil
}

// givenFlags returns the names of the flags set on the command line.
func givenFlags(fs *flag.FlagSet) map[string]bool {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	return given
}
