// Package words maps the enums of the admin and telemetry APIs to the words
// people read in the CLI (text and `--output json`) and the console: the
// words of ROUTING.md and DESIGN.md §3. Protobuf enum names such as
// ATTEMPT_OUTCOME_FAILED_OVER belong to the admin API's wire format only
// (ROUTING R-SEE-2); everything a person reads goes through this package.
//
// The words, by enum:
//
//   - attempt outcomes (R-SEE-2): answered, failed_over, failed, skipped;
//   - call outcomes: answered, failed, unknown (R-FAIL-7), refused (R-CAP-3),
//     cancelled (R-FAIL-10);
//   - failure and cooldown kinds (R-OBS-1): the edge's names, also stored in
//     call_attempts.kind: none, rate_limited, quota_spent, server_error,
//     transport, key_refused, unknown_outcome, client_error, timeout,
//     cancelled, mid_stream, key_unavailable, disabled;
//   - wire formats: openai, anthropic, bedrock (and gemini where the API has
//     it), from weir.dev/routing/formats;
//   - presets (`--preset`): openai, azure-openai, anthropic, bedrock, vllm
//     (and gemini, vertex where the API has them);
//   - auth kinds (`--auth-kind`): api-key, sigv4, oauth2, none (and
//     google-service-account where the API has it), from
//     weir.dev/routing/formats;
//   - record kinds: plain, pool; budget periods: day, month, total; roles:
//     cluster-admin, tenant-admin, provider-admin, cost-owner; doctor
//     severities: info, warning, error; model kinds: chat, embeddings;
//     headroom dimensions: requests, input-tokens, output-tokens, tokens;
//     headroom sources: headers, declared; usage granularities: call, hour,
//     day, month.
//
// An unspecified value is "". A value this build does not know by name (an
// enum value added to the API later) is spelled from its protobuf name by
// the same rule as its siblings: the type prefix cut, lower case, with '_'
// or '-' as the enum's words use (PRESET_GEMINI is "gemini",
// AUTH_KIND_GOOGLE_SERVICE_ACCOUNT is "google-service-account").
package words

import (
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"

	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	telemetryv1 "weir.dev/proto/gen/weir/telemetry/v1"
	"weir.dev/routing/formats"
)

// spelling is how the values of one enum type are written: the protobuf
// name's type prefix and the separator that replaces '_'.
type spelling struct {
	prefix string
	sep    string
}

// spellingOf returns how the enums people read are spelled, by full name;
// false for an enum not listed here (spelled by the default rule of Of).
func spellingOf(name protoreflect.FullName) (spelling, bool) {
	switch name {
	case telemetryv1.AttemptOutcome(0).Descriptor().FullName():
		return spelling{"ATTEMPT_OUTCOME_", "_"}, true
	case telemetryv1.CallOutcome(0).Descriptor().FullName():
		return spelling{"CALL_OUTCOME_", "_"}, true
	case telemetryv1.FailureKind(0).Descriptor().FullName():
		return spelling{"FAILURE_KIND_", "_"}, true
	case telemetryv1.Dimension(0).Descriptor().FullName():
		return spelling{"DIMENSION_", "-"}, true
	case telemetryv1.HeadroomSource(0).Descriptor().FullName():
		return spelling{"HEADROOM_SOURCE_", "-"}, true
	case configv1.ModelKind(0).Descriptor().FullName():
		return spelling{"MODEL_KIND_", "-"}, true
	case configv1.BudgetPeriod(0).Descriptor().FullName():
		return spelling{"BUDGET_PERIOD_", "-"}, true
	case adminv1.Preset(0).Descriptor().FullName():
		return spelling{"PRESET_", "-"}, true
	case adminv1.RecordKind(0).Descriptor().FullName():
		return spelling{"RECORD_KIND_", "-"}, true
	case adminv1.Role(0).Descriptor().FullName():
		return spelling{"ROLE_", "-"}, true
	case adminv1.Severity(0).Descriptor().FullName():
		return spelling{"SEVERITY_", "-"}, true
	case adminv1.UsageGranularity(0).Descriptor().FullName():
		return spelling{"USAGE_GRANULARITY_", "-"}, true
	}
	return spelling{}, false
}

// tableWord returns the word of a wire format or an auth kind from the
// one table of their names (weir.dev/routing/formats); false for other
// enums and for a value the table lacks (spelled by the default rule of Of).
func tableWord(ed protoreflect.EnumDescriptor, n protoreflect.EnumNumber) (string, bool) {
	switch ed.FullName() {
	case configv1.WireFormat(0).Descriptor().FullName():
		x, ok := formats.WireFormats.ByEnum(configv1.WireFormat(n))
		return x.Word, ok
	case configv1.AuthKind(0).Descriptor().FullName():
		x, ok := formats.AuthKinds.ByEnum(configv1.AuthKind(n))
		return x.Word, ok
	}
	return "", false
}

// Of returns the word of any enum value: "" for the zero (unspecified)
// value, else the value's protobuf name without its type prefix, lower case,
// '_' replaced by the enum's separator. An enum this package does not list
// has its prefix taken from the unspecified value's name
// ("FOO_UNSPECIFIED" gives "FOO_") and '_' replaced by '-'.
func Of(e protoreflect.Enum) string {
	return word(e.Descriptor(), e.Number())
}

// word is Of for an enum descriptor and number.
func word(ed protoreflect.EnumDescriptor, n protoreflect.EnumNumber) string {
	if n == 0 {
		return ""
	}
	if w, ok := tableWord(ed, n); ok {
		return w
	}
	sp, ok := spellingOf(ed.FullName())
	if !ok {
		sp = spelling{sep: "-"}
		if z := ed.Values().ByNumber(0); z != nil {
			sp.prefix = strings.TrimSuffix(string(z.Name()), "UNSPECIFIED")
		}
	}
	v := ed.Values().ByNumber(n)
	if v == nil {
		// A number this build has no name for: still never an enum name.
		return "unknown"
	}
	s := strings.TrimPrefix(string(v.Name()), sp.prefix)
	return strings.ReplaceAll(strings.ToLower(s), "_", sp.sep)
}

// AttemptOutcome is answered, failed_over, failed or skipped (R-SEE-2).
func AttemptOutcome(o telemetryv1.AttemptOutcome) string { return Of(o) }

// CallOutcome is answered, failed, unknown, refused or cancelled.
func CallOutcome(o telemetryv1.CallOutcome) string { return Of(o) }

// FailureKind is the kind of an attempt's failure or of a member's
// cooldown: rate_limited, quota_spent, server_error, transport, key_refused,
// timeout, … (the edge's names, as stored).
func FailureKind(k telemetryv1.FailureKind) string { return Of(k) }

// CooldownKind is the kind of a member's cooldown in an edge view (R-OBS-1);
// the same words as FailureKind.
func CooldownKind(k telemetryv1.FailureKind) string { return Of(k) }

// WireFormat is openai, anthropic, bedrock or gemini.
func WireFormat(w configv1.WireFormat) string { return Of(w) }

// Preset is openai, azure-openai, anthropic, bedrock or vllm, as
// `--preset` takes them.
func Preset(p adminv1.Preset) string { return Of(p) }

// AuthKind is api-key, sigv4, oauth2 or none, as `--auth-kind` takes them.
func AuthKind(k configv1.AuthKind) string { return Of(k) }

// RecordKind is plain or pool.
func RecordKind(k adminv1.RecordKind) string { return Of(k) }

// BudgetPeriod is day, month or total, as `--period` takes them.
func BudgetPeriod(p configv1.BudgetPeriod) string { return Of(p) }

// Role is cluster-admin, tenant-admin, provider-admin or cost-owner.
func Role(r adminv1.Role) string { return Of(r) }

// Severity is info, warning or error.
func Severity(s adminv1.Severity) string { return Of(s) }

// Parse returns the value of enum type E whose word is s; false when s is
// no word of E (the empty word included). It is the inverse of Of:
//
//	p, ok := words.Parse[adminv1.Preset]("azure-openai")
func Parse[E interface {
	protoreflect.Enum
	~int32
}](s string) (E, bool) {
	var zero E
	if s == "" {
		return zero, false
	}
	vals := zero.Descriptor().Values()
	for i := 0; i < vals.Len(); i++ {
		n := vals.Get(i).Number()
		if n != 0 && word(zero.Descriptor(), n) == s {
			return E(n), true
		}
	}
	return zero, false
}

// All returns the words of every specified value of enum type E, in
// declaration order: the choices a flag's help lists.
func All[E interface {
	protoreflect.Enum
	~int32
}]() []string {
	var zero E
	vals := zero.Descriptor().Values()
	out := make([]string, 0, vals.Len())
	for i := 0; i < vals.Len(); i++ {
		if n := vals.Get(i).Number(); n != 0 {
			out = append(out, word(zero.Descriptor(), n))
		}
	}
	return out
}
