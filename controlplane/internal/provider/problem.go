package provider

import (
	"errors"
	"fmt"
	"strconv"

	"weir.dev/routing/compile"
)

// ErrInvalid is wrapped by every error this package returns for a request
// that breaks a rule. Such an error also wraps one *Problem per broken rule;
// list them with Problems. The RPC layer turns it into InvalidArgument with
// a weir.admin.v1.ValidationError detail.
var ErrInvalid = errors.New("invalid request")

// Problem is one validation failure. It mirrors weir.admin.v1.Problem.
type Problem struct {
	// Field is the path of the offending request field in proto field
	// names, with list indexes and map keys in brackets (for example
	// "spec.prices[2].cache_read_micros", "members[1].spec.weight"), or ""
	// for a problem of the request as a whole.
	Field string
	// Code is a stable snake_case identifier such as "required" or
	// "price_not_whole" (see the Code* constants).
	Code string
	// Message is one sentence a person can act on. It never echoes a URL or
	// anything else that might hold a secret by mistake.
	Message string
}

// Error formats the problem as "<field>: <message>".
func (p *Problem) Error() string {
	if p.Field == "" {
		return p.Message
	}
	return p.Field + ": " + p.Message
}

// Problem codes. New codes may be added; clients show unknown ones with
// their message. The codes of a record's rules are the shared compiler's
// (compile.CheckRecord): the admin API returns them as they are.
const (
	CodeRequired       = compile.CodeRequired
	CodeInvalidName    = compile.CodeInvalidName
	CodeInvalidValue   = compile.CodeInvalidValue
	CodeTooMany        = compile.CodeTooMany
	CodeOutOfRange     = compile.CodeOutOfRange
	CodeNegative       = compile.CodeNegative
	CodeDuplicate      = compile.CodeDuplicate
	CodeNotHTTPS       = compile.CodeNotHTTPS
	CodePrivateAddress = compile.CodePrivateAddress
	CodeInvalidURL     = compile.CodeInvalidURL
	CodeUnknownSecret  = compile.CodeUnknownSecret
	CodePriceNotWhole  = compile.CodePriceNotWhole
	CodeNotAModel      = compile.CodeNotAModel
	CodeNotAllowed     = compile.CodeNotAllowed

	CodeTooLong      = "too_long"
	CodeUnknownPath  = "unknown_path"
	CodeWireMismatch = "wire_mismatch"
	CodeConflict     = "conflict"
)

// problems collects every problem of one validation.
type problems struct {
	list []error
}

func (ps *problems) add(field, code, format string, args ...any) {
	ps.list = append(ps.list, &Problem{Field: field, Code: code, Message: fmt.Sprintf(format, args...)})
}

// merge appends every problem of err (when it holds any) to ps.
func (ps *problems) merge(err error) {
	for _, p := range Problems(err) {
		ps.list = append(ps.list, p)
	}
}

// err wraps the collected problems into one error that wraps ErrInvalid and
// every *Problem, or returns nil when there are none.
func (ps *problems) err() error {
	if len(ps.list) == 0 {
		return nil
	}
	noun := "problems"
	if len(ps.list) == 1 {
		noun = "problem"
	}
	return fmt.Errorf("%w, %d %s:\n%w", ErrInvalid, len(ps.list), noun, errors.Join(ps.list...))
}

// Problems returns every *Problem wrapped by err, in the order they were
// found, or nil when err holds none.
func Problems(err error) []*Problem { return compile.Collect[*Problem](err) }

// join builds a field path: join("spec", "auth", "kind") is
// "spec.auth.kind"; empty parts are skipped.
func join(parts ...string) string {
	out := ""
	for _, p := range parts {
		if p == "" {
			continue
		}
		if out != "" && p[0] != '[' {
			out += "."
		}
		out += p
	}
	return out
}

// idx formats a list index for a field path: "[3]".
func idx(i int) string { return "[" + strconv.Itoa(i) + "]" }

// key formats a map key for a field path: "[gpt-x]".
func key(k string) string { return "[" + k + "]" }

func quote(s string) string { return strconv.Quote(s) }

func u64(v uint64) string { return strconv.FormatUint(v, 10) }
