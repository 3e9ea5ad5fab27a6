package console

import (
	"net/http"
	"slices"

	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	"weir.dev/web"
)

// Previews and R-SEC-4 warnings before saving, from the admin API.
//
// The provider and pool mutations (CreateProvider, UpdateProvider,
// AddPoolMember, UpdatePoolMember) take validate_only: the API then checks
// the request completely, the expected revision included, writes nothing,
// and answers with every problem (instead of an InvalidArgument error), the
// warnings the record would have and the changes, field by field. The
// console asks it that way, with the very request it would save, so it
// never works out a record's warnings or resolves a preset itself:
//
//   - "Preview changes" (a submit named web.PreviewFieldName) on the record
//     and member forms sends the request with validate_only and re-renders
//     the form with the values kept: the changes above the save button, the
//     problems next to their fields, the R-SEC-4 warnings with "Save
//     anyway". Nothing is saved.
//   - "Save" (and the create form's "Create") asks the same way first,
//     unless the form confirms (name confirm, "Save anyway"): problems are
//     shown as a refused save shows them; R-SEC-4 warnings the change
//     raises are shown with "Save anyway"; otherwise the request is sent
//     again without validate_only, and the API's warnings after saving come
//     as flashes.
//
// Only R-SEC-4's warnings (members sharing a key secret or a host) stop a
// save, and only those the change raises: naming a member it adds or edits,
// or (a record's settings) not on the record already, so that a record
// already warned about does not ask again for every change.

// The admin API's warning codes of R-SEC-4 (weir.admin.v1.Warning.code).
const (
	warnSharedKeySecret = "shared_key_secret"
	warnSharedHost      = "shared_host"
)

func isSec4(w *adminv1.Warning) bool {
	return w.GetCode() == warnSharedKeySecret || w.GetCode() == warnSharedHost
}

// vetted is the admin API's answer to a mutation sent with validate_only.
type vetted interface {
	GetProblems() []*adminv1.Problem
	GetWarnings() []*adminv1.Warning
	GetChanges() []*adminv1.Change
}

// review is what a form shows of a validate_only answer.
type review struct {
	// problems are the API's problems (none: the change would be saved).
	problems web.Problems
	// warnings are the R-SEC-4 warnings the change raises (see sec4Naming
	// and sec4New): the form offers "Save anyway".
	warnings []web.Warning
	// preview is set when the form asked for a preview.
	preview *web.Preview
}

// reviewOf reads a validate_only answer; preview says whether the form asked
// for a preview; raised picks the R-SEC-4 warnings the change raises.
func reviewOf(a vetted, preview bool, raised func([]*adminv1.Warning) []web.Warning) review {
	var rv review
	if ps := a.GetProblems(); len(ps) > 0 {
		lead := "The request was refused"
		if preview {
			lead = "The change would be refused"
		}
		rv.problems = problemList(ps, lead)
	}
	if len(rv.problems.List) == 0 || preview {
		rv.warnings = raised(a.GetWarnings())
	}
	if preview {
		rv.preview = &web.Preview{Refused: len(rv.problems.List) > 0}
		for _, c := range a.GetChanges() {
			rv.preview.Changes = append(rv.preview.Changes, web.Change{Field: c.GetField(), Before: c.GetBefore(), After: c.GetAfter()})
		}
	}
	return rv
}

// stop reports whether the form is shown again instead of saved: a preview,
// a change the API refuses, or one raising R-SEC-4 warnings.
func (rv review) stop() bool {
	return rv.preview != nil || len(rv.problems.List) > 0 || len(rv.warnings) > 0
}

// status is the HTTP status of the form shown again.
func (rv review) status() int {
	if len(rv.problems.List) > 0 {
		return http.StatusUnprocessableEntity
	}
	return http.StatusOK
}

// asksPreview reports whether a form was submitted with "Preview changes".
func asksPreview(r *http.Request) bool {
	return r.PostFormValue(web.PreviewFieldName) != ""
}

// confirmed reports whether a form was submitted with "Save anyway".
func confirmed(r *http.Request) bool { return r.PostFormValue("confirm") != "" }

// sec4Naming returns a function picking the R-SEC-4 warnings that name one
// of members: those a change adding or editing them raises.
func sec4Naming(members ...string) func([]*adminv1.Warning) []web.Warning {
	return func(ws []*adminv1.Warning) []web.Warning {
		var out []web.Warning
		for _, w := range ws {
			if isSec4(w) && slices.ContainsFunc(w.GetMembers(), func(m string) bool { return slices.Contains(members, m) }) {
				out = append(out, webWarning(w))
			}
		}
		return out
	}
}

// sec4New returns a function picking the R-SEC-4 warnings that are not
// among had (a record's current warnings, by code and message).
func sec4New(had []*adminv1.Warning) func([]*adminv1.Warning) []web.Warning {
	return func(ws []*adminv1.Warning) []web.Warning {
		var out []web.Warning
		for _, w := range ws {
			if isSec4(w) && !slices.ContainsFunc(had, func(h *adminv1.Warning) bool {
				return h.GetCode() == w.GetCode() && h.GetMessage() == w.GetMessage()
			}) {
				out = append(out, webWarning(w))
			}
		}
		return out
	}
}
