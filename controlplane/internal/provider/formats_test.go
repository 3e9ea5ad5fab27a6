package provider

import (
	"context"
	"testing"

	"connectrpc.com/connect"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"

	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// Issue 14 over the API and the database: a mixed pool (R-FMT-4) with an
// Anthropic member and a Vertex AI member, declared rpd and max_in_flight
// (R-HEAD-6, R-CAP-1) and a day_zone, stored and read back whole; the
// record rules refuse what the edges would.
func TestMixedPoolWithDayLimitsRoundTrips(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	h.secret("acme", "ant", "api.anthropic.com")
	h.secret("acme", "sa", "europe-west4-aiplatform.googleapis.com", "oauth2.googleapis.com")
	c := h.as("paul")

	out := mustOK(c.pools.AddPoolMember(ctx, req(&adminv1.AddPoolMemberRequest{
		Tenant: "acme", Record: "claude", Member: "direct", Preset: adminv1.Preset_PRESET_ANTHROPIC,
		RecordSpec: &adminv1.ProviderSpec{Models: models("claude-x"), DayZone: "America/Los_Angeles"},
		Spec: &adminv1.PoolMemberSpec{BaseUrl: AnthropicBaseURL, KeySecret: proto.String("ant"), Limits: &configv1.Limits{Rpd: 1000, MaxInFlight: 5},
			Prices: []*configv1.Price{price("claude-x", 3_000_000, 15_000_000, 300_000, 3_750_000)}},
	})))(t)
	if !out.GetRecordCreated() {
		t.Fatal("record not created")
	}
	mustOK(c.pools.AddPoolMember(ctx, req(&adminv1.AddPoolMemberRequest{
		Tenant: "acme", Record: "claude", Member: "vertex", Preset: adminv1.Preset_PRESET_VERTEX,
		Spec: &adminv1.PoolMemberSpec{BaseUrl: VertexBaseURL("europe-west4", "acme"), KeySecret: proto.String("sa"),
			Order: 2, Limits: &configv1.Limits{Rpd: 50}, ModelMap: map[string]string{"claude-x": "claude-x@001"}},
	})))(t)

	d := mustOK(c.providers.GetProvider(ctx, req(&adminv1.GetProviderRequest{Tenant: "acme", Name: "claude"})))(t).GetDetail()
	if got := d.GetRecord().GetSpec().GetDayZone(); got != "America/Los_Angeles" {
		t.Errorf("day_zone %q", got)
	}
	type mv struct {
		Name        string
		Own, Wire   configv1.WireFormat
		Auth        configv1.AuthKind
		RPD, Flight int64
		Zone        string
	}
	var got []mv
	for _, m := range d.GetMembers() {
		e := m.GetEffective()
		got = append(got, mv{m.GetMember().GetName(), m.GetMember().GetSpec().GetWireFormat(), e.GetWireFormat(), e.GetAuth().GetKind(),
			e.GetLimits().GetRpd(), e.GetLimits().GetMaxInFlight(), e.GetDayZone()})
	}
	want := []mv{
		{"direct", configv1.WireFormat_WIRE_FORMAT_UNSPECIFIED, configv1.WireFormat_WIRE_FORMAT_ANTHROPIC, configv1.AuthKind_AUTH_KIND_API_KEY, 1000, 5, "America/Los_Angeles"},
		{"vertex", configv1.WireFormat_WIRE_FORMAT_GEMINI, configv1.WireFormat_WIRE_FORMAT_GEMINI, configv1.AuthKind_AUTH_KIND_GOOGLE_SERVICE_ACCOUNT, 50, 0, "America/Los_Angeles"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("members (-want +got):\n%s", diff)
	}
	for _, w := range d.GetWarnings() {
		if w.GetCode() == WarnSecretHostMissing || w.GetCode() == WarnRecordRefused {
			t.Errorf("warning %v", w)
		}
	}

	// Every problem at once: a bad zone, an rpd over its bound, and google
	// auth on an openai member.
	_, err := c.providers.UpdateProvider(ctx, req(&adminv1.UpdateProviderRequest{Tenant: "acme", Name: "claude",
		Spec: &adminv1.ProviderSpec{DayZone: "Mars/Olympus"}, UpdateMask: mask("day_zone")}))
	if diff := cmp.Diff([]fc{{"spec.day_zone", CodeInvalidValue}}, problemsOf(err)); diff != "" {
		t.Errorf("day_zone problems (-want +got):\n%s", diff)
	}
	_, err = c.pools.UpdatePoolMember(ctx, req(&adminv1.UpdatePoolMemberRequest{Tenant: "acme", Record: "claude", Member: "vertex",
		Spec:       &adminv1.PoolMemberSpec{Limits: &configv1.Limits{Rpd: 2_000_000_000}, WireFormat: configv1.WireFormat_WIRE_FORMAT_OPENAI},
		UpdateMask: mask("limits.rpd", "wire_format")}))
	if diff := cmp.Diff([]fc{{"spec.limits.rpd", CodeOutOfRange}, {"spec.auth.kind", CodeWireMismatch}}, problemsOf(err)); diff != "" {
		t.Errorf("member problems (-want +got):\n%s", diff)
	}
	if connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Errorf("code %v", connect.CodeOf(err))
	}
}
