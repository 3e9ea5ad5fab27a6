package web

// Change is one field a change sets, as the admin API lists it when asked
// with validate_only (weir.admin.v1.Change): the field's path in the
// request's field names ("spec.region", "spec.prices[gpt-4o]",
// "members[eu]") and its value before and after, each one line of text,
// "" when unset. Secrets appear by name only.
type Change struct {
	Field, Before, After string
}

// Preview is what saving a form would do, as the admin API answered the
// same request with validate_only: nothing is saved. It is shown above the
// form's save button; the form keeps the values entered.
type Preview struct {
	// Changes are the fields saving would change, field by field; none:
	// saving changes nothing.
	Changes []Change
	// Refused is set when the API refuses the change: the form's problems
	// say why, next to their fields.
	Refused bool
}

// PreviewFieldName is the name (and PreviewFieldValue the value) of the
// submit button that asks for a preview instead of saving.
const (
	PreviewFieldName  = "preview"
	PreviewFieldValue = "1"
)

func (p *Preview) summary() string {
	switch {
	case p.Refused:
		return "Preview: this change would be refused; see the problems. Nothing was saved."
	case len(p.Changes) == 0:
		return "Preview: saving this form changes nothing."
	case len(p.Changes) == 1:
		return "Preview: saving this form makes 1 change. Nothing is saved yet."
	}
	return "Preview: saving this form makes " + itoaInt(len(p.Changes)) + " changes. Nothing is saved yet."
}
