// Package apierr builds the admin API's errors: validation failures with
// every problem listed (InvalidArgument with a weir.admin.v1.ValidationError
// detail), store domain errors mapped to Connect codes, and internal errors
// that reveal nothing to the client. It is the only place below the handlers
// where Connect codes are chosen, and every admin service (the provider,
// pool and price services included) uses it.
package apierr

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"connectrpc.com/connect"

	"weir.dev/controlplane/internal/store"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
)

// Problem codes used by this package's validators and the admin services.
const (
	CodeRequired     = "required"
	CodeInvalidName  = "invalid_name"
	CodeInvalidValue = "invalid_value"
	CodeTooLong      = "too_long"
	CodeTooMany      = "too_many"
	CodeOutOfRange   = "out_of_range"
	CodeNegative     = "negative"
	CodeDuplicate    = "duplicate"
	CodeNotFound     = "not_found"
	CodeNotAllowed   = "not_allowed"
	CodeConflict     = "conflict"
)

// Problems collects the validation problems of one request. The zero value
// is ready to use.
type Problems struct {
	list []*adminv1.Problem
}

// Add records a problem of field (a proto field path such as
// "hosts[2]", "" for the request as a whole).
func (ps *Problems) Add(field, code, message string) {
	ps.list = append(ps.list, NewProblem(field, code, message))
}

// Addf is Add with a formatted message. The message must never quote a
// secret value.
func (ps *Problems) Addf(field, code, format string, args ...any) {
	ps.Add(field, code, fmt.Sprintf(format, args...))
}

// Len is the number of problems so far.
func (ps *Problems) Len() int { return len(ps.list) }

// Err returns nil when there is no problem, else Invalid with all of them.
func (ps *Problems) Err() error {
	if len(ps.list) == 0 {
		return nil
	}
	return Invalid(ps.list...)
}

// NewProblem returns one problem.
func NewProblem(field, code, message string) *adminv1.Problem {
	return &adminv1.Problem{Field: field, Code: code, Message: message}
}

// Invalid returns the InvalidArgument error of the API: its message lists
// every problem ("3 problems: name: …; hosts[0]: …") and it carries a
// ValidationError detail with all of them.
func Invalid(problems ...*adminv1.Problem) *connect.Error {
	parts := make([]string, 0, len(problems))
	for _, p := range problems {
		if p.GetField() == "" {
			parts = append(parts, p.GetMessage())
		} else {
			parts = append(parts, p.GetField()+": "+p.GetMessage())
		}
	}
	noun := "problems"
	if len(problems) == 1 {
		noun = "problem"
	}
	ce := connect.NewError(connect.CodeInvalidArgument,
		fmt.Errorf("invalid request, %d %s: %s", len(problems), noun, strings.Join(parts, "; ")))
	if d, err := connect.NewErrorDetail(&adminv1.ValidationError{Problems: problems}); err == nil {
		ce.AddDetail(d)
	}
	return ce
}

// ProblemsOf returns the problems of an InvalidArgument error's
// ValidationError detail (nil when there is none).
func ProblemsOf(err error) []*adminv1.Problem {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return nil
	}
	for _, d := range ce.Details() {
		v, err := d.Value()
		if err != nil {
			continue
		}
		if ve, ok := v.(*adminv1.ValidationError); ok {
			return ve.GetProblems()
		}
	}
	return nil
}

// internalError hides its cause from clients.
type internalError struct{ cause error }

func (e *internalError) Error() string { return "internal error" }
func (e *internalError) Unwrap() error { return e.cause }

// Internal returns an Internal error whose message is "internal error";
// Cause returns err for the log.
func Internal(err error) *connect.Error {
	return connect.NewError(connect.CodeInternal, &internalError{cause: err})
}

// Cause returns the error to log for err: the hidden cause of an Internal
// error, else err itself.
func Cause(err error) error {
	var ie *internalError
	if errors.As(err, &ie) {
		return ie.cause
	}
	return err
}

// FromStore maps an error of the store (or of anything below the handlers)
// to the admin API's Connect error. nil stays nil.
func FromStore(err error) error {
	if err == nil {
		return nil
	}
	var ce *connect.Error
	if errors.As(err, &ce) {
		return ce
	}
	var se *store.Error
	msg := err.Error()
	if errors.As(err, &se) {
		msg = se.Msg
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		return connect.NewError(connect.CodeNotFound, errors.New(msg))
	case errors.Is(err, store.ErrConflict):
		return connect.NewError(connect.CodeAlreadyExists, errors.New(msg))
	case errors.Is(err, store.ErrInvalid):
		field, code := "", CodeInvalidValue
		if se != nil {
			field, code = se.Field, se.Code
		}
		return Invalid(NewProblem(field, code, msg))
	case errors.Is(err, store.ErrPrecondition):
		return connect.NewError(connect.CodeFailedPrecondition, errors.New(msg))
	case errors.Is(err, context.Canceled):
		return connect.NewError(connect.CodeCanceled, errors.New("request cancelled"))
	case errors.Is(err, context.DeadlineExceeded):
		return connect.NewError(connect.CodeDeadlineExceeded, errors.New("request deadline exceeded"))
	}
	return Internal(err)
}

// NotFound returns a NotFound error: "<kind> "<name>" not found".
func NotFound(kind, name string) *connect.Error {
	return connect.NewError(connect.CodeNotFound, fmt.Errorf("%s %s not found", kind, strconv.Quote(name)))
}
