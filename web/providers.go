package web

import (
	"net/url"
	"strconv"
	"time"

	"weir.dev/routing/formats"
)

// ScopeManaged is the scope of managed records (cluster admins) in the
// providers pages' URLs and forms; "" is the current tenant.
const ScopeManaged = "managed"

// ProviderHref is the console path of a record's page.
func ProviderHref(name, scope string) string { return providerHref(name, scope) }

func providerHref(name, scope string) string {
	return withScope("/console/providers/"+url.PathEscape(name), scope)
}

// MemberHref is the console path of a member's page, or of one of its
// actions ("" for the edit page, "off", "on", "remove").
func MemberHref(record, member, scope, action string) string {
	p := "/console/providers/" + url.PathEscape(record) + "/members/" + url.PathEscape(member)
	if action != "" {
		p += "/" + action
	}
	return withScope(p, scope)
}

// RecordHref is the console path of one of a record's actions ("edit",
// "delete", "share", "unshare").
func RecordHref(name, scope, action string) string {
	return withScope("/console/providers/"+url.PathEscape(name)+"/"+action, scope)
}

func withScope(p, scope string) string {
	if scope == "" {
		return p
	}
	return p + "?scope=" + url.QueryEscape(scope)
}

// ProvidersView is the providers page's data: the records and the create
// form.
type ProvidersView struct {
	CSRF   string
	Tenant string
	// Records are the tenant's own records, then the managed ones shared
	// with it (read-only).
	Records []ProviderRow
	// Managed are the managed records (cluster admins only); ShowManaged
	// shows their table.
	Managed     []ProviderRow
	ShowManaged bool
	// CanCreate shows the create form.
	CanCreate bool
	Create    ProviderForm
}

// ProviderRow is one record of a list.
type ProviderRow struct {
	Name  string
	Scope string
	// Kind is "plain" or "pool"; Preset the preset's name ("" for none);
	// Wire the wire format.
	Kind, Preset, Wire string
	Members            int
	// Shared marks a managed record shared with the tenant.
	Shared   bool
	Revision uint64
	Updated  time.Time
}

// ProviderForm is the create form of a provider record (plain) or a pool.
// Its inputs are named after CreateProviderRequest's field paths.
type ProviderForm struct {
	CSRF string
	// Scopes, when not empty, lets a cluster admin pick the owner (the
	// tenant, or managed); Scope is the chosen one.
	Scopes []Option
	Scope  string
	Name   string
	// Kind is "plain" or "pool".
	Kind, Preset, Wire                 string
	BaseURL, KeySecret, Models, Region string
	RPM, InputTPM, OutputTPM           string
	// RPD and MaxInFlight are a plain record's daily and concurrency
	// limits (R-HEAD-6, R-CAP-1); DayZone the zone rpd counts in.
	RPD, MaxInFlight, DayZone string
	Recovery                  RecoveryForm
	// Members are the pool's member rows (blank rows are ignored).
	Members  []NewMember
	Problems Problems
	// Warnings are R-SEC-4 warnings found before saving; Confirm asks
	// to save anyway.
	Warnings []Warning
}

// NewMember is one member row of the create form.
type NewMember struct {
	Name, BaseURL, KeySecret, Weight string
}

// Warning is a warning about a record (R-SEC-4 and the others).
type Warning struct {
	Code, Message string
	Members       []string
}

// PresetOptions are the presets a form offers, value selected; each label
// starts with the preset's word (`--preset`).
func PresetOptions(selected string) []Option {
	return options(selected, [][2]string{
		{"", "(none)"}, {"openai", "openai (OpenAI)"}, {"azure-openai", "azure-openai (Azure OpenAI)"}, {"anthropic", "anthropic (Anthropic)"},
		{"bedrock", "bedrock (Amazon Bedrock)"}, {"vllm", "vllm (vLLM, OpenAI-compatible)"},
		{"gemini", "gemini (Gemini API)"}, {"vertex", "vertex (Vertex AI, service account)"},
	})
}

// WireOptions are the wire formats a form offers (formats.WireFormats),
// each by its word.
func WireOptions(selected string) []Option {
	vals := [][2]string{{"", "(from the preset)"}}
	for _, w := range formats.WireFormats.All() {
		vals = append(vals, [2]string{w.Word, w.Word})
	}
	return options(selected, vals)
}

// MemberWireOptions are the wire formats a member form offers: its own,
// or "" for the record's (R-FMT-4).
func MemberWireOptions(selected string) []Option {
	vals := [][2]string{{"", "(the record's, or the preset's)"}}
	for _, w := range formats.WireFormats.All() {
		vals = append(vals, [2]string{w.Word, w.Word})
	}
	return options(selected, vals)
}

// KindOptions are plain and pool.
func KindOptions(selected string) []Option {
	return options(selected, [][2]string{{"plain", "Plain record (one endpoint)"}, {"pool", "Pool (members)"}})
}

func options(selected string, vals [][2]string) []Option {
	out := make([]Option, 0, len(vals))
	for _, v := range vals {
		out = append(out, Option{Value: v[0], Label: v[1], Selected: v[0] == selected})
	}
	return out
}

func memberPath(i int, field string) string {
	return "members[" + strconv.Itoa(i) + "]." + field
}

func u64s(n uint64) string { return strconv.FormatUint(n, 10) }

func providerRowID(r ProviderRow) string {
	if r.Scope == ScopeManaged && !r.Shared {
		return "provider-managed-" + TestIDPart(r.Name)
	}
	return "provider-" + TestIDPart(r.Name)
}
