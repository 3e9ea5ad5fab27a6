package web

import "strconv"

// AuthForm is the auth inputs of a record or member form, named
// spec.auth.<field>. Secrets are referred to by name only.
type AuthForm struct {
	// Kind is "", "api-key", "sigv4", "oauth2" or "none"; "" on a member
	// means the record's auth.
	Kind, Header                           string
	AWSService, AWSRegion, AccessKeySecret string
	TokenURL, ClientID, ClientSecretSecret string
	// Scopes are the OAuth2 scopes, separated by commas or spaces.
	Scopes string
}

// PriceRow is one model's price as typed: dollars per million tokens for
// each part ("" for a part not given).
type PriceRow struct {
	Model, Input, Output, CacheRead, CacheWrite string
}

// AuthKindOptions are the auth kinds a form offers; inherit, when not
// empty, labels the empty choice (a member's "the record's auth").
func AuthKindOptions(selected, inherit string) []Option {
	empty := "(not set)"
	if inherit != "" {
		empty = inherit
	}
	return options(selected, [][2]string{
		{"", empty}, {"api-key", "API key in a header"}, {"sigv4", "AWS SigV4"},
		{"oauth2", "OAuth2 client credentials"}, {"none", "None"},
	})
}

// RetainsOptions are the choices of a retains-data select; inherit, when
// not empty, labels the empty choice (a member's "as the record").
func RetainsOptions(selected, inherit string) []Option {
	if inherit == "" {
		return options(selected, [][2]string{{"no", "No"}, {"yes", "Yes"}})
	}
	return options(selected, [][2]string{{"", inherit}, {"no", "No"}, {"yes", "Yes"}})
}

// RecordForm edits a record's own settings (UpdateProviderRequest): its
// inputs are named after the request's field paths (spec.<field>).
type RecordForm struct {
	CSRF, Scope, Action string
	Name                string
	// Kind is "plain" or "pool": base_url and limits are a plain record's.
	Kind string
	// Revision is sent back as expected_revision.
	Revision string
	// Cluster shows the cluster-only "internal" setting.
	Cluster bool

	Wire, BaseURL, KeySecret, Models, Region  string
	RetainsData, Tags, AllowedRegions         string
	RateLimitHeaders, Priority, DefaultMaxOut string
	Account, APIVersion                       string
	RPM, InputTPM, OutputTPM                  string
	Internal                                  bool
	Auth                                      AuthForm
	Prices                                    []PriceRow

	Problems Problems
	// Warnings are R-SEC-4 warnings found before saving.
	Warnings []Warning
}

// RecordEditView is the page of a record's settings form.
type RecordEditView struct {
	Record, Scope string
	Form          RecordForm
}

func (f RecordForm) field(name, label, typ, value, hint string) Field {
	return Field{Name: name, Label: label, Type: typ, Value: value, Hint: hint, Problem: f.Problems.For(name), Autocomplete: "off"}
}

// priceFields are a price row's inputs: the proto field path of the part,
// its label and the value typed.
type priceInput struct{ part, label, value string }

func (p PriceRow) inputs() []priceInput {
	return []priceInput{
		{"input_micros", "Input", p.Input}, {"output_micros", "Output", p.Output},
		{"cache_read_micros", "Cache read", p.CacheRead}, {"cache_write_micros", "Cache write", p.CacheWrite},
	}
}

func (p PriceRow) part(name string) string {
	switch name {
	case "input_micros":
		return p.Input
	case "output_micros":
		return p.Output
	case "cache_read_micros":
		return p.CacheRead
	case "cache_write_micros":
		return p.CacheWrite
	}
	return ""
}

func pricePath(i int, field string) string {
	p := "spec.prices[" + strconv.Itoa(i) + "]"
	if field != "" {
		p += "." + field
	}
	return p
}

// inheritPrice is the placeholder of a member's price part: the record's
// value for the row's model.
func inheritPrice(record map[string]PriceRow, model, part string) string {
	if model == "" {
		return ""
	}
	r, ok := record[model]
	if !ok {
		return ""
	}
	if v := r.part(part); v != "" {
		return "record: " + v
	}
	return ""
}
