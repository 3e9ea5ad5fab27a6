package compile

import (
	"errors"
	"fmt"
)

// ErrInvalid is wrapped by every error Compile returns for a snapshot that
// breaks a rule. Such an error also wraps one *Problem per broken rule; list
// them with Problems.
var ErrInvalid = errors.New("invalid snapshot")

// Problem is one reason a snapshot was refused.
type Problem struct {
	// Where names the object at fault, e.g. `record "azure-gpt" member
	// "france"`, `key "ci"`, `data_rules`. An object without a usable name is
	// named by its position, e.g. `record #2`.
	Where string
	// Field is the path of the proto field at fault within that object, with
	// list indexes and map keys in brackets (e.g. "base_url",
	// "auth.aws_region", "prices[0].output_micros", "tags[team]"), or "" when
	// the problem is the object as a whole.
	Field string
	// Code is one of the Code* constants for a problem of a provider record
	// (CheckRecord's), "" for the snapshot's other problems.
	Code string
	// Msg says what is wrong, in a phrase a person can act on.
	Msg string
}

// Error formats the problem as "<where>: <field>: <msg>".
func (p *Problem) Error() string {
	if p.Field == "" {
		return p.Where + ": " + p.Msg
	}
	return p.Where + ": " + p.Field + ": " + p.Msg
}

// Problems returns every *Problem wrapped by err, in the order Compile found
// them (the order of the snapshot), or nil when err holds none.
func Problems(err error) []*Problem { return Collect[*Problem](err) }

// Collect returns every error of type T that err wraps, through %w chains
// and errors.Join trees, in order (depth first), or nil when it wraps none.
// A T found is not looked into further.
func Collect[T error](err error) []T {
	var out []T
	var walk func(error)
	walk = func(e error) {
		if t, ok := e.(T); ok {
			out = append(out, t)
			return
		}
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				walk(x)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	if err != nil {
		walk(err)
	}
	return out
}

// problems collects every problem of one compilation.
type problems struct {
	list []error
}

func (ps *problems) add(where, field, format string, args ...any) {
	ps.list = append(ps.list, &Problem{Where: where, Field: field, Msg: fmt.Sprintf(format, args...)})
}

// err wraps the collected problems into one error, or returns nil when there
// are none.
func (ps *problems) err(tenantID string) error {
	if len(ps.list) == 0 {
		return nil
	}
	noun := "problems"
	if len(ps.list) == 1 {
		noun = "problem"
	}
	return fmt.Errorf("compile tenant %q: %w, %d %s:\n%w", tenantID, ErrInvalid, len(ps.list), noun, errors.Join(ps.list...))
}
