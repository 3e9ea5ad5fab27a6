package console

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"connectrpc.com/connect"

	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	"weir.dev/web"
)

// problemsOf turns an admin API error into what a form shows: every
// validation problem keyed by its proto field path (name the form's inputs
// after the request's field paths and each problem lands next to its
// input), and a page-level message. status is the HTTP status to render
// the page with. The API's messages never contain secrets (the API
// guarantees it), so they are shown as they are; Internal errors say only
// "internal error".
func problemsOf(err error) (p web.Problems, status int) {
	if err == nil {
		return web.Problems{}, http.StatusOK
	}
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return web.Problems{Message: "Something went wrong; try again."}, http.StatusInternalServerError
	}
	status = httpStatus(ce.Code())
	if ce.Code() == connect.CodeInvalidArgument {
		if list := validationProblems(ce); len(list) > 0 {
			return problemList(list, "The request was refused"), status
		}
	}
	p.Message = codeMessage(ce)
	return p, status
}

// problemList is what a form shows of the API's validation problems (an
// InvalidArgument error's, or those a validate_only answer lists), keyed by
// field path; its message is lead and the number of problems ("The request
// was refused: 2 problems.").
func problemList(list []*adminv1.Problem, lead string) web.Problems {
	p := web.Problems{Fields: map[string]string{}}
	for _, vp := range list {
		f, m := vp.GetField(), vp.GetMessage()
		p.List = append(p.List, web.FieldProblem{Field: f, Message: m})
		if f == "" {
			continue
		}
		if old, ok := p.Fields[f]; ok {
			p.Fields[f] = old + "; " + m
		} else {
			p.Fields[f] = m
		}
	}
	if len(list) == 1 {
		p.Message = lead + ": 1 problem."
	} else {
		p.Message = fmt.Sprintf("%s: %d problems.", lead, len(list))
	}
	return p
}

// validationProblems returns the problems of an InvalidArgument error's
// weir.admin.v1.ValidationError detail.
func validationProblems(ce *connect.Error) []*adminv1.Problem {
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

// codeMessage is the page-level message of a non-validation error.
func codeMessage(ce *connect.Error) string {
	msg := ce.Message()
	switch ce.Code() {
	case connect.CodeInternal, connect.CodeUnknown, connect.CodeDataLoss:
		return "Internal error; the control plane's log has the details."
	case connect.CodeUnavailable, connect.CodeDeadlineExceeded:
		return "The admin API did not answer in time; try again."
	case connect.CodePermissionDenied:
		return "Not allowed: " + msg
	case connect.CodeUnauthenticated:
		return "Your session has ended; sign in again."
	}
	if msg == "" {
		return strings.ReplaceAll(ce.Code().String(), "_", " ")
	}
	return capitalize(msg)
}

// httpStatus maps a Connect code to the status of the page showing it.
func httpStatus(code connect.Code) int {
	switch code {
	case connect.CodeInvalidArgument, connect.CodeFailedPrecondition, connect.CodeOutOfRange:
		return http.StatusUnprocessableEntity
	case connect.CodeNotFound:
		return http.StatusNotFound
	case connect.CodeAlreadyExists, connect.CodeAborted:
		return http.StatusConflict
	case connect.CodePermissionDenied:
		return http.StatusForbidden
	case connect.CodeUnauthenticated:
		return http.StatusUnauthorized
	case connect.CodeResourceExhausted:
		return http.StatusTooManyRequests
	case connect.CodeUnavailable:
		return http.StatusServiceUnavailable
	case connect.CodeDeadlineExceeded:
		return http.StatusGatewayTimeout
	case connect.CodeCanceled:
		return 499
	}
	return http.StatusInternalServerError
}

// fail renders an error page for an API error of a page that cannot show
// it inline (a failed list, a detail that is not found). An Unauthenticated
// error (the token was revoked mid-request) ends the session.
func (c *base) fail(w http.ResponseWriter, r *http.Request, s *session, err error) {
	if connect.CodeOf(err) == connect.CodeUnauthenticated {
		c.clearCookie(w, r, sessionCookie)
		c.toLoginWith(w, r, web.Flash{Kind: web.FlashInfo, Text: "Your session has ended; sign in again."})
		return
	}
	p, status := problemsOf(err)
	if status >= 500 {
		c.d.Log.Error("console: api", "path", r.URL.Path, "err", err)
	}
	c.page(w, r, s, status, http.StatusText(status), "", web.ErrorBody(status, p.Message))
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// editRefusal reads the API's refusal of an edit form's request. Unless it
// shows the refusal as an error page itself (not signed in, or the record
// gone: shown reports false), it returns the problems to show beside the
// form and the status to answer with; a stale expected_revision gets a
// message saying to reload.
func (c *base) editRefusal(w http.ResponseWriter, r *http.Request, s *session, err error) (p web.Problems, status int, shown bool) {
	if connect.CodeOf(err) == connect.CodeUnauthenticated || connect.CodeOf(err) == connect.CodeNotFound {
		c.fail(w, r, s, err)
		return p, 0, true
	}
	p, status = problemsOf(err)
	if connect.CodeOf(err) == connect.CodeAborted {
		p.Message = "The record was changed meanwhile (by someone else?): reload the page to see its current values, then edit again."
	}
	return p, status, false
}
