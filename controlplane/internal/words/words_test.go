package words

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	telemetryv1 "weir.dev/proto/gen/weir/telemetry/v1"
)

func TestWords(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		e    protoreflect.Enum
		want string
	}{
		// ROUTING R-SEE-2.
		{telemetryv1.AttemptOutcome_ATTEMPT_OUTCOME_ANSWERED, "answered"},
		{telemetryv1.AttemptOutcome_ATTEMPT_OUTCOME_FAILED_OVER, "failed_over"},
		{telemetryv1.AttemptOutcome_ATTEMPT_OUTCOME_FAILED, "failed"},
		{telemetryv1.AttemptOutcome_ATTEMPT_OUTCOME_SKIPPED, "skipped"},
		{telemetryv1.AttemptOutcome_ATTEMPT_OUTCOME_UNSPECIFIED, ""},
		{telemetryv1.CallOutcome_CALL_OUTCOME_UNKNOWN, "unknown"},
		{telemetryv1.CallOutcome_CALL_OUTCOME_REFUSED, "refused"},
		{telemetryv1.CallOutcome_CALL_OUTCOME_CANCELLED, "cancelled"},
		// The edge's kind names (routing/outcome.go).
		{telemetryv1.FailureKind_FAILURE_KIND_RATE_LIMITED, "rate_limited"},
		{telemetryv1.FailureKind_FAILURE_KIND_QUOTA_SPENT, "quota_spent"},
		{telemetryv1.FailureKind_FAILURE_KIND_KEY_REFUSED, "key_refused"},
		{telemetryv1.FailureKind_FAILURE_KIND_TIMEOUT, "timeout"},
		// DESIGN §3.
		{configv1.WireFormat_WIRE_FORMAT_OPENAI, "openai"},
		{configv1.WireFormat_WIRE_FORMAT_BEDROCK, "bedrock"},
		{adminv1.Preset_PRESET_AZURE_OPENAI, "azure-openai"},
		{adminv1.Preset_PRESET_VLLM, "vllm"},
		{configv1.AuthKind_AUTH_KIND_API_KEY, "api-key"},
		{configv1.AuthKind_AUTH_KIND_SIGV4, "sigv4"},
		{configv1.AuthKind_AUTH_KIND_NONE, "none"},
		{configv1.BudgetPeriod_BUDGET_PERIOD_MONTH, "month"},
		{adminv1.RecordKind_RECORD_KIND_POOL, "pool"},
		{adminv1.Role_ROLE_CLUSTER_ADMIN, "cluster-admin"},
		{adminv1.Severity_SEVERITY_WARNING, "warning"},
		{telemetryv1.Dimension_DIMENSION_INPUT_TOKENS, "input-tokens"},
		{telemetryv1.AttemptOutcome(99), "unknown"},
	} {
		if got := Of(tc.e); got != tc.want {
			t.Errorf("Of(%v) = %q, want %q", tc.e, got, tc.want)
		}
	}
	if got := AttemptOutcome(telemetryv1.AttemptOutcome_ATTEMPT_OUTCOME_FAILED_OVER); got != "failed_over" {
		t.Errorf("AttemptOutcome = %q", got)
	}
	if got := CooldownKind(telemetryv1.FailureKind_FAILURE_KIND_SERVER_ERROR); got != "server_error" {
		t.Errorf("CooldownKind = %q", got)
	}
}

func TestParseAll(t *testing.T) {
	t.Parallel()
	if p, ok := Parse[adminv1.Preset]("azure-openai"); !ok || p != adminv1.Preset_PRESET_AZURE_OPENAI {
		t.Errorf("Parse azure-openai = %v, %v", p, ok)
	}
	for _, bad := range []string{"", "AZURE_OPENAI", "PRESET_OPENAI", "azure_openai"} {
		if _, ok := Parse[adminv1.Preset](bad); ok {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
	if diff := cmp.Diff([]string{"api-key", "sigv4", "oauth2", "none"}, All[configv1.AuthKind]()[:4]); diff != "" {
		t.Error(diff)
	}
	for _, w := range All[configv1.AuthKind]() {
		if k, ok := Parse[configv1.AuthKind](w); !ok || AuthKind(k) != w {
			t.Errorf("round trip of %q: %v %v", w, k, ok)
		}
	}
}

// TestJSON checks that a call as `weir calls show --output json` prints it
// carries the words and no protobuf enum name anywhere.
func TestJSON(t *testing.T) {
	t.Parallel()
	call := &adminv1.GetCallResponse{Call: &adminv1.Call{Tenant: "acme", Record: &telemetryv1.CallRecord{
		CallId: "c1", Outcome: telemetryv1.CallOutcome_CALL_OUTCOME_ANSWERED, CostNanos: 1500,
		StartedAt: timestamppb.New(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)), Duration: durationpb.New(1500 * time.Millisecond),
		Attempts: []*telemetryv1.Attempt{
			{Index: 0, MemberName: "a", Outcome: telemetryv1.AttemptOutcome_ATTEMPT_OUTCOME_FAILED_OVER, Kind: telemetryv1.FailureKind_FAILURE_KIND_RATE_LIMITED},
			{Index: 1, MemberName: "b", Outcome: telemetryv1.AttemptOutcome_ATTEMPT_OUTCOME_ANSWERED},
		},
	}}}
	b, err := JSON(call)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, bad := range []string{"ATTEMPT_OUTCOME", "CALL_OUTCOME", "FAILURE_KIND", "UNSPECIFIED"} {
		if strings.Contains(s, bad) {
			t.Errorf("JSON holds %s: %s", bad, s)
		}
	}
	var got struct {
		Call struct {
			Tenant string
			Record struct {
				CallID    string `json:"call_id"`
				Outcome   string
				CostNanos string `json:"cost_nanos"`
				StartedAt string `json:"started_at"`
				Duration  string
				Attempts  []struct {
					MemberName string `json:"member_name"`
					Outcome    string
					Kind       string
				}
			}
		}
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%v: %s", err, s)
	}
	r := got.Call.Record
	if r.Outcome != "answered" || r.CostNanos != "1500" || r.StartedAt != "2026-12-01T00:00:00Z" || r.Duration != "1.500s" ||
		len(r.Attempts) != 2 || r.Attempts[0].Outcome != "failed_over" || r.Attempts[0].Kind != "rate_limited" ||
		r.Attempts[1].Outcome != "answered" || r.Attempts[1].Kind != "" {
		t.Errorf("decoded %+v from %s", got, s)
	}
	// Field order is protojson's (declaration order), not alphabetical.
	if i, j := strings.Index(s, `"call_id"`), strings.Index(s, `"attempts"`); i < 0 || j < 0 || i > j {
		t.Errorf("order: %s", s)
	}
}

func TestUnmarshalRoundTrip(t *testing.T) {
	t.Parallel()
	want := &adminv1.GetProviderResponse{Detail: &adminv1.ProviderDetail{
		Record: &adminv1.ProviderRecord{Name: "r", Kind: adminv1.RecordKind_RECORD_KIND_POOL, Preset: adminv1.Preset_PRESET_AZURE_OPENAI,
			Spec: &adminv1.ProviderSpec{WireFormat: configv1.WireFormat_WIRE_FORMAT_OPENAI, Auth: &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_API_KEY},
				Models: []*configv1.Model{{Name: "m", Kind: configv1.ModelKind_MODEL_KIND_EMBEDDINGS}}}},
		Members: []*adminv1.MemberDetail{{EdgeViews: []*adminv1.EdgeView{{View: &telemetryv1.MemberView{
			Cooldown: &telemetryv1.Cooldown{Kind: telemetryv1.FailureKind_FAILURE_KIND_KEY_REFUSED}}}}}},
	}}
	b, err := JSON(want)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`"kind":"pool"`, `"preset":"azure-openai"`, `"wire_format":"openai"`, `"kind":"api-key"`, `"kind":"embeddings"`, `"kind":"key_refused"`} {
		if !strings.Contains(string(b), w) {
			t.Errorf("JSON lacks %s: %s", w, b)
		}
	}
	got := &adminv1.GetProviderResponse{}
	if err := Unmarshal(b, got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}
