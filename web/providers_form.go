package web

import (
	"strconv"

	"weir.dev/routing/formats"
)

// AuthForm is the auth inputs of a record or member form, named
// spec.auth.<field>. Secrets are referred to by name only.
type AuthForm struct {
	// Kind is "" or an auth kind's word (formats.AuthKinds: "api-key",
	// "sigv4", ...); "" on a member means the record's auth.
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

// AuthKindOptions are the auth kinds a form offers (formats.AuthKinds),
// each label starting with the kind's word (`--auth-kind`); inherit, when
// not empty, labels the empty choice (a member's "the record's auth").
func AuthKindOptions(selected, inherit string) []Option {
	empty := "(not set)"
	if inherit != "" {
		empty = inherit
	}
	vals := [][2]string{{"", empty}}
	for _, k := range formats.AuthKinds.All() {
		label := k.Word
		if k.Summary != "" {
			label += " (" + k.Summary + ")"
		}
		vals = append(vals, [2]string{k.Word, label})
	}
	return options(selected, vals)
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
	// RPD and MaxInFlight are a plain record's (R-HEAD-6, R-CAP-1);
	// DayZone, the IANA zone rpd counts in, any record's.
	RPD, MaxInFlight, DayZone string
	Internal                  bool
	Auth                      AuthForm
	Prices                    []PriceRow
	Recovery                  RecoveryForm

	Problems Problems
	// Warnings are R-SEC-4 warnings found before saving.
	Warnings []Warning
	// Preview, when not nil, is what saving the form would change.
	Preview *Preview
}

// RecoveryForm is a record's failover settings as typed
// (spec.recovery.<field>): "" is the default the edge applies. Durations
// are Go durations ("90s", "2m30s", "1h", "250ms") or plain seconds ("90",
// "1.5").
type RecoveryForm struct {
	MaxAttempts, CallDeadline, AttemptDeadline string
	CooldownBase, CooldownMax, MaxWait         string
}

// Defaults the edge applies to a record's recovery settings left unset
// (ROUTING.md; weir.config.v1.Recovery): shown as the inputs' placeholders.
const (
	DefaultMaxAttempts     = "8"
	DefaultCallDeadline    = "600s"
	DefaultAttemptDeadline = "120s"
	DefaultCooldownBase    = "10s"
	DefaultCooldownMax     = "1h"
	DefaultMaxWait         = "0s"
)

// recoveryInput is one recovery input: its proto field under
// spec.recovery, label, value, default and what it does.
type recoveryInput struct{ field, label, value, def, hint string }

// durationHint is how every recovery duration is typed.
const durationHint = "Go duration (90s, 2m30s, 250ms) or plain seconds (90, 1.5)."

func (r RecoveryForm) inputs() [][]recoveryInput {
	return [][]recoveryInput{{
		{"max_attempts", "Max attempts", r.MaxAttempts, DefaultMaxAttempts, "Attempts to members per call, failovers included (R-FAIL-13). Empty: 8."},
		{"call_deadline", "Call deadline", r.CallDeadline, DefaultCallDeadline, "The whole call, failovers included. " + durationHint + " Empty: 600s."},
		{"attempt_deadline", "Attempt deadline", r.AttemptDeadline, DefaultAttemptDeadline, "Wait for an attempt's response headers (R-FAIL-9); 0 disables it. " + durationHint + " Empty: 120s."},
	}, {
		{"cooldown_base", "Cooldown base", r.CooldownBase, DefaultCooldownBase, "A member's first cooldown after a 429 naming no time, doubled per refusal (R-FAIL-2). " + durationHint + " Empty: 10s."},
		{"cooldown_max", "Cooldown max", r.CooldownMax, DefaultCooldownMax, "Caps every cooldown. " + durationHint + " Empty: 1h."},
		{"max_wait", "Max wait", r.MaxWait, DefaultMaxWait, "How long a call may wait for a cooling member instead of answering 429 (R-END-1). " + durationHint + " Empty: 0s (no wait)."},
	}}
}

func recoveryPath(field string) string { return "spec.recovery." + field }

func (in recoveryInput) fieldOf(p Problems) Field {
	typ := "text"
	if in.field == "max_attempts" {
		typ = "number"
	}
	name := recoveryPath(in.field)
	return Field{Name: name, Label: in.label, Type: typ, Value: in.value, Hint: in.hint, Placeholder: "default: " + in.def,
		Problem: p.For(name), Autocomplete: "off"}
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
