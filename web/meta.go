package web

import (
	"regexp"
	"strings"
	"time"
)

// PageMeta is what the layout of a signed-in page shows: the title, the
// active navigation item, who is signed in, the tenant being looked at and
// the CSRF token every POST form must carry.
type PageMeta struct {
	// Title is the page's heading and the document title's first part.
	Title string
	// Nav is the Key of the active NavItem ("" for none).
	Nav string
	// Admin is the signed-in admin's name; Role describes its roles for
	// people ("cluster admin", "tenant admin of a").
	Admin string
	Role  string
	// Cluster is true for cluster admins: they get the tenant switcher and
	// the cluster-only links.
	Cluster bool
	// Tenant is the tenant the tenant-scoped pages show ("" when the admin
	// has none); Tenants are those the switcher offers.
	Tenant  string
	Tenants []string
	// CSRF is the session's CSRF token (see CSRFInput).
	CSRF string
	// Path is the current path and query: the switcher and logout come back
	// to it.
	Path string
	// Flashes are one-time messages of the previous request (after a
	// redirect) or of this one.
	Flashes []Flash
}

// Flash kinds.
const (
	FlashOK    = "ok"
	FlashInfo  = "info"
	FlashWarn  = "warn"
	FlashError = "error"
)

// Flash is a one-time message shown at the top of a page.
type Flash struct {
	Kind string // FlashOK, FlashInfo, FlashWarn or FlashError
	Text string
}

// NavItem is one link of the console's navigation.
type NavItem struct {
	Key, Label, Href string
	// ClusterOnly items are shown to cluster admins only.
	ClusterOnly bool
}

// Nav returns the console's navigation in order.
func Nav() []NavItem {
	return []NavItem{
		{Key: "health", Label: "Health", Href: "/console/"},
		{Key: "providers", Label: "Providers", Href: "/console/providers"},
		{Key: "tenants", Label: "Tenants", Href: "/console/tenants"},
		{Key: "keys", Label: "Keys", Href: "/console/keys"},
		{Key: "secrets", Label: "Secrets", Href: "/console/secrets"},
		{Key: "budgets", Label: "Budgets", Href: "/console/budgets"},
		{Key: "usage", Label: "Usage", Href: "/console/usage"},
		{Key: "calls", Label: "Calls", Href: "/console/calls"},
	}
}

func visibleNav(cluster bool) []NavItem {
	var out []NavItem
	for _, n := range Nav() {
		if !n.ClusterOnly || cluster {
			out = append(out, n)
		}
	}
	return out
}

func flashClass(kind string) string {
	switch kind {
	case FlashOK, FlashInfo, FlashWarn, FlashError:
		return "alert alert-" + kind
	}
	return "alert alert-info"
}

func flashRole(kind string) string {
	if kind == FlashError || kind == FlashWarn {
		return "alert"
	}
	return "status"
}

func docTitle(t string) string {
	if t == "" {
		return "Weir console"
	}
	return t + " · Weir console"
}

// Problems are what the API refused in a submitted form: a page-level
// message and every problem, keyed by the proto field path the API reported
// ("name", "hosts[2]", "members[0].base_url"). The zero value means none.
type Problems struct {
	// Message is shown above the form ("" for none).
	Message string
	// List is every problem in the API's order (for the summary).
	List []FieldProblem
	// Fields maps a field path to its problems joined with "; ".
	Fields map[string]string
}

// FieldProblem is one problem of one field ("" for the request as a whole).
type FieldProblem struct {
	Field, Message string
}

// For returns the problem of field ("" when none).
func (p Problems) For(field string) string { return p.Fields[field] }

// Any reports whether there is anything to show.
func (p Problems) Any() bool { return p.Message != "" || len(p.List) > 0 }

var nonID = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// FieldID is the HTML id of the input of a field path: "f-" and the path
// with every run of other characters than [A-Za-z0-9_-] turned into "-".
func FieldID(name string) string {
	return "f-" + strings.Trim(nonID.ReplaceAllString(name, "-"), "-")
}

// TestIDPart turns a name into a data-testid part the same way FieldID
// does, without the prefix.
func TestIDPart(name string) string { return strings.Trim(nonID.ReplaceAllString(name, "-"), "-") }

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func humanTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

// Remaining formats a duration the way console.js's countdowns do: "1h 02m",
// "3m 05s", "12s", "now".
func Remaining(d time.Duration) string {
	if d <= 0 {
		return "now"
	}
	s := int(d.Round(time.Second) / time.Second)
	if s == 0 {
		s = 1
	}
	h, m, sec := s/3600, s/60%60, s%60
	switch {
	case h > 0:
		return itoa(h) + "h " + pad2(m) + "m"
	case m > 0:
		return itoa(m) + "m " + pad2(sec) + "s"
	}
	return itoa(sec) + "s"
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}

func pad2(n int) string {
	if n < 10 {
		return "0" + itoa(n)
	}
	return itoa(n)
}

// Field is one labelled form input with its inline problem.
type Field struct {
	// Name is the input's name: the request's proto field path, so that the
	// API's problems for it land here (Problems.For(Name)).
	Name  string
	Label string
	// Type is an <input> type ("text" when empty, "password", "number",
	// "url", "checkbox"…), "textarea" or "select".
	Type  string
	Value string
	// Problem is shown next to the input and makes it aria-invalid.
	Problem string
	// Hint is help text under the label.
	Hint         string
	Placeholder  string
	Autocomplete string
	Required     bool
	// Checked applies to checkboxes; Options to selects.
	Checked bool
	Options []Option
	// TestID overrides the default data-testid "field-<name>" of the
	// wrapper (the input itself is "input-<name>", the problem
	// "problem-<name>").
	TestID string
}

// Option is one choice of a select.
type Option struct {
	Value, Label string
	Selected     bool
}

func (f Field) id() string { return FieldID(f.Name) }

func (f Field) testID() string {
	if f.TestID != "" {
		return f.TestID
	}
	return "field-" + TestIDPart(f.Name)
}

func (f Field) inputType() string {
	if f.Type == "" {
		return "text"
	}
	return f.Type
}

func (f Field) describedBy() string {
	var ids []string
	if f.Hint != "" {
		ids = append(ids, f.id()+"-hint")
	}
	if f.Problem != "" {
		ids = append(ids, f.id()+"-problem")
	}
	return strings.Join(ids, " ")
}

// Action is a form of one button (revoke, delete, reset, switch off), with
// optional hidden values and a confirmation question (asked by console.js).
type Action struct {
	URL, Label, CSRF string
	TestID           string
	Hidden           []Hidden
	// Confirm, when set, is asked before submitting (with JavaScript).
	Confirm string
	// Danger styles the button as destructive.
	Danger bool
}

// Hidden is one hidden form value.
type Hidden struct{ Name, Value string }

func buttonClass(danger bool) string {
	if danger {
		return "btn btn-danger"
	}
	return "btn"
}

func checkboxValue(v string) string {
	if v == "" {
		return "on"
	}
	return v
}
