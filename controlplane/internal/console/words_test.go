package console_test

import (
	"context"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"weir.dev/db/sqlc"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	telemetryv1 "weir.dev/proto/gen/weir/telemetry/v1"
)

// enumName matches a protobuf enum value's name (ATTEMPT_OUTCOME_FAILED_OVER,
// WIRE_FORMAT_OPENAI, AUTH_KIND_SIGV4…), and any other upper-case name of
// that shape.
var enumName = regexp.MustCompile(`\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b`)

// notEnums are the upper-case names the pages may show: the parts of a
// SigV4 access key secret's value (ACCESS_KEY_ID:SECRET_ACCESS_KEY, DESIGN
// §3), in the secret hints.
var notEnums = map[string]bool{"ACCESS_KEY_ID": true, "SECRET_ACCESS_KEY": true}

// TestPagesShowWordsNotEnumNames renders every console page with data that
// holds each value of every enum a person reads (attempt and call outcomes,
// failure and cooldown kinds, wire formats, presets, auth kinds, record
// kinds, headroom dimensions and sources, budget periods) and checks that
// each page shows the words of ROUTING.md and DESIGN.md (R-SEE-2:
// answered, failed_over, failed, skipped…) and no protobuf enum name, nor a
// variant such as "failed-over" or "failed over".
func TestPagesShowWordsNotEnumNames(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	now := h.Clock.Now().UTC()
	api := h.API(cluster)

	if _, err := api.Secrets.SetSecret(ctx, connect.NewRequest(&adminv1.SetSecretRequest{Tenant: "a", Name: "k", Value: "sk-1",
		Hosts: []string{"api.openai.com", "acme.openai.azure.com", "api.anthropic.com", "bedrock-runtime.eu-north-1.amazonaws.com",
			"key.example.com", "sig.example.com", "oauth.example.com", "idp.example.com", "none.example.com"}})); err != nil {
		t.Fatal(err)
	}
	// Records: every preset, so every wire format, both record kinds, and
	// every auth kind (the pool's members name their own).
	// Embeddings only where an openai endpoint serves them (R-FMT-7).
	model := []*configv1.Model{{Name: "m"}, {Name: "m-embed", Kind: configv1.ModelKind_MODEL_KIND_EMBEDDINGS}}
	chat := model[:1]
	for _, r := range []*adminv1.CreateProviderRequest{
		{Name: "oa", Preset: adminv1.Preset_PRESET_OPENAI, Spec: &adminv1.ProviderSpec{KeySecret: "k", Models: model}},
		{Name: "az", Preset: adminv1.Preset_PRESET_AZURE_OPENAI, Spec: &adminv1.ProviderSpec{BaseUrl: "https://acme.openai.azure.com/openai", KeySecret: "k", Models: model}},
		{Name: "an", Preset: adminv1.Preset_PRESET_ANTHROPIC, Spec: &adminv1.ProviderSpec{KeySecret: "k", Models: chat}},
		{Name: "br", Preset: adminv1.Preset_PRESET_BEDROCK, Spec: &adminv1.ProviderSpec{BaseUrl: "https://bedrock-runtime.eu-north-1.amazonaws.com", Region: "eu-north-1", KeySecret: "k", Models: chat}},
		{Name: "vl", Preset: adminv1.Preset_PRESET_VLLM, Spec: &adminv1.ProviderSpec{Models: model}, Members: []*adminv1.NewPoolMember{
			{Name: "m-none", Spec: &adminv1.PoolMemberSpec{BaseUrl: "https://none.example.com/v1"}},
			{Name: "m-key", Spec: &adminv1.PoolMemberSpec{BaseUrl: "https://key.example.com/v1", KeySecret: proto.String("k"),
				Auth: &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_API_KEY, Header: "x-api-key"}}},
			{Name: "m-sigv4", Spec: &adminv1.PoolMemberSpec{BaseUrl: "https://sig.example.com/v1",
				Auth: &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_SIGV4, AwsService: "execute-api", AwsRegion: "eu-north-1", AccessKeySecret: "k"}}},
			{Name: "m-oauth2", Spec: &adminv1.PoolMemberSpec{BaseUrl: "https://oauth.example.com/v1",
				Auth: &configv1.Auth{Kind: configv1.AuthKind_AUTH_KIND_OAUTH2, TokenUrl: "https://idp.example.com/token", ClientId: "c", ClientSecretSecret: "k"}}},
		}},
	} {
		r.Tenant = "a"
		if _, err := api.Providers.CreateProvider(ctx, connect.NewRequest(r)); err != nil {
			t.Fatalf("create %s: %v", r.GetName(), err)
		}
	}
	pool := getProvider(t, h, "a", "vl").GetRecord()

	// Health: one edge per cooldown kind, every dimension and source.
	var kinds []telemetryv1.FailureKind
	for k := range telemetryv1.FailureKind_name {
		if k != 0 {
			kinds = append(kinds, telemetryv1.FailureKind(k))
		}
	}
	for i, k := range kinds {
		mv := view("edge-"+strconv.Itoa(i), "m-key", now)
		mv.Dimensions = append(mv.Dimensions,
			&telemetryv1.DimensionView{Dimension: telemetryv1.Dimension_DIMENSION_OUTPUT_TOKENS, Limit: 5, Remaining: 1, Source: telemetryv1.HeadroomSource_HEADROOM_SOURCE_DECLARED},
			&telemetryv1.DimensionView{Dimension: telemetryv1.Dimension_DIMENSION_TOKENS, Limit: 5, Remaining: 1})
		mv.Cooldown = &telemetryv1.Cooldown{Until: timestamppb.New(now.Add(10 * time.Minute)), Kind: k, Reason: "because"}
		seedView(t, h, pool, mv)
	}

	// Calls: every call outcome; attempts of every outcome and kind.
	var attempts []sqlc.InsertCallAttemptParams
	for _, k := range []string{"rate_limited", "quota_spent", "server_error", "transport", "key_refused", "unknown_outcome",
		"client_error", "timeout", "cancelled", "mid_stream", "key_unavailable", "disabled"} {
		attempts = append(attempts, sqlc.InsertCallAttemptParams{RecordName: "vl", MemberName: "m-key", Status: 429, Outcome: "failed_over", Kind: k, Reason: "r"})
	}
	attempts = append(attempts,
		sqlc.InsertCallAttemptParams{RecordName: "vl", MemberName: "m-none", Outcome: "skipped", Kind: "rate_limited", Reason: "cooling"},
		sqlc.InsertCallAttemptParams{RecordName: "vl", MemberName: "m-oauth2", Status: 200, Outcome: "answered", Kind: "none"})
	seedCalls(t, h,
		seededCall{tenant: "a", id: "answered", model: "m", record: "vl", member: "m-oauth2", status: 200, outcome: "answered", cost: 5, start: now.Add(-5 * time.Minute), attempts: attempts},
		seededCall{tenant: "a", id: "failed", model: "m", record: "vl", member: "m-key", status: 500, outcome: "failed", errorCode: "weir_upstream_unreachable", start: now.Add(-4 * time.Minute),
			attempts: []sqlc.InsertCallAttemptParams{{RecordName: "vl", MemberName: "m-key", Status: 500, Outcome: "failed", Kind: "server_error"}}},
		seededCall{tenant: "a", id: "unknown", model: "m", record: "vl", member: "m-key", status: 504, outcome: "unknown", errorCode: "weir_upstream_timeout", start: now.Add(-3 * time.Minute),
			attempts: []sqlc.InsertCallAttemptParams{{RecordName: "vl", MemberName: "m-key", Outcome: "failed", Kind: "timeout"}}},
		seededCall{tenant: "a", id: "refused", model: "m", status: 402, outcome: "refused", errorCode: "weir_budget_exceeded", start: now.Add(-2 * time.Minute),
			attempts: []sqlc.InsertCallAttemptParams{}},
		seededCall{tenant: "a", id: "cancelled", model: "m", record: "vl", member: "m-key", status: 499, outcome: "cancelled", start: now.Add(-time.Minute),
			attempts: []sqlc.InsertCallAttemptParams{{RecordName: "vl", MemberName: "m-key", Outcome: "failed", Kind: "cancelled"}}},
	)

	// Budgets of every period.
	for _, p := range []configv1.BudgetPeriod{configv1.BudgetPeriod_BUDGET_PERIOD_DAY, configv1.BudgetPeriod_BUDGET_PERIOD_MONTH, configv1.BudgetPeriod_BUDGET_PERIOD_TOTAL} {
		name := "b" + strconv.Itoa(int(p))
		if _, err := api.Budgets.SetBudget(ctx, connect.NewRequest(&adminv1.SetBudgetRequest{Tenant: "a", Name: name, LimitNanos: 1e9, Period: p})); err != nil {
			t.Fatal(err)
		}
	}

	b := h.login(t, cluster)
	b.page(t, "/console/?tenant=a", http.StatusOK)
	pages := map[string][]string{
		"/console/":          nil,
		"/console/providers": nil,
		"/console/calls":     nil,
		"/console/usage":     nil,
		"/console/budgets":   nil,
		"/console/keys":      nil,
		"/console/secrets":   nil,
		"/console/rules":     nil,
		"/console/tenants":   nil,
	}
	for _, r := range []string{"oa", "az", "an", "br", "vl"} {
		pages["/console/providers/"+r] = nil
	}
	for _, id := range []string{"answered", "failed", "unknown", "refused", "cancelled"} {
		pages["/console/calls/"+id] = nil
	}
	for _, m := range []string{"m-none", "m-key", "m-sigv4", "m-oauth2"} {
		pages["/console/providers/vl/members/"+m] = nil
	}
	docs := map[string]*htmlNode{}
	for path := range pages {
		doc := b.page(t, path, http.StatusOK)
		docs[path] = doc
		body := string(b.Last)
		for _, m := range enumName.FindAllString(body, -1) {
			if notEnums[m] {
				continue
			}
			t.Errorf("%s shows the enum name %s", path, m)
		}
		for _, bad := range []string{"failed-over", "failed over", "rate limited", "server error", "input_tokens", "Failed over"} {
			if strings.Contains(body, bad) {
				t.Errorf("%s shows %q", path, bad)
			}
		}
	}

	// The words, where each is shown.
	texts := func(doc *htmlNode, id string) map[string]bool {
		out := map[string]bool{}
		for _, n := range findAll(doc, id) {
			out[text(n)] = true
		}
		return out
	}
	expect := func(where string, got map[string]bool, want ...string) {
		t.Helper()
		for _, w := range want {
			if !got[w] {
				t.Errorf("%s: no %q among %v", where, w, got)
			}
		}
	}
	expect("health cooldown kinds", texts(docs["/console/"], "cooldown-kind"),
		"none", "rate_limited", "quota_spent", "server_error", "transport", "key_refused", "unknown_outcome",
		"client_error", "timeout", "cancelled", "mid_stream", "key_unavailable", "disabled")
	health := docs["/console/"]
	for _, d := range []string{"requests", "input-tokens", "output-tokens", "tokens"} {
		if !has(health, "headroom-"+d) {
			t.Errorf("health: no headroom of %s", d)
		}
	}
	if got := strings.Join(strings.Fields(string(mustBody(t, b, "/console/"))), " "); !strings.Contains(got, "declared") || !strings.Contains(got, "headers") {
		t.Error("health: headroom sources not named")
	}
	providers := docs["/console/providers"]
	expect("provider wire formats", texts(providers, "provider-wire"), "openai", "anthropic", "bedrock")
	expect("provider presets", texts(providers, "provider-preset"), "openai", "azure-openai", "anthropic", "bedrock", "vllm")
	expect("provider kinds", texts(providers, "provider-kind"), "plain", "pool")
	var auth []string
	for _, path := range []string{"/console/providers/vl", "/console/providers/br"} {
		auth = append(auth, text(docs[path]))
	}
	all := strings.Join(auth, " ")
	for _, w := range []string{"api-key (header x-api-key)", "sigv4 (service execute-api", "sigv4 (service bedrock", "oauth2 (token URL https://idp.example.com/token", "none"} {
		if !strings.Contains(all, w) {
			t.Errorf("provider pages: no auth %q", w)
		}
	}
	expect("call outcomes", texts(docs["/console/calls"], "call-outcome"), "answered", "failed", "unknown", "refused", "cancelled")
	call := docs["/console/calls/answered"]
	expect("attempt outcomes", texts(call, "attempt-outcome"), "answered", "failed_over", "skipped")
	expect("failed attempt", texts(docs["/console/calls/failed"], "attempt-outcome"), "failed")
	reasons := texts(call, "attempt-reason")
	for _, k := range []string{"rate_limited", "quota_spent", "server_error", "transport", "key_refused", "unknown_outcome",
		"client_error", "timeout", "cancelled", "mid_stream", "key_unavailable", "disabled"} {
		if !reasons[k+" r"] {
			t.Errorf("attempt kinds: no %q among %v", k, reasons)
		}
	}
	var outcomes []string
	for _, o := range all2(find(t, docs["/console/calls"], "input-outcome")) {
		outcomes = append(outcomes, attr(o, "value"))
	}
	if got := strings.Join(outcomes, ","); got != ",answered,failed,unknown,refused,cancelled" {
		t.Errorf("outcome filter %q", got)
	}
	// The create form's choices are labelled by their words too.
	for name, path := range map[string]string{"preset": "/console/providers", "spec.wire_format": "/console/providers",
		"spec.auth.kind": "/console/providers/vl/members/m-key"} {
		sel := first(docs[path], func(n *htmlNode) bool { return n.Data == "select" && attr(n, "name") == name })
		if sel == nil {
			t.Fatalf("no %s select", name)
		}
		for _, o := range all2(sel) {
			if v := attr(o, "value"); v != "" && !strings.HasPrefix(text(o), v) {
				t.Errorf("%s option %s labelled %q", name, v, text(o))
			}
		}
	}
	expect("budget periods", texts(docs["/console/budgets"], "budget-period"), "day", "month", "total")
}

// mustBody GETs path and returns the body.
func mustBody(t *testing.T, b *browser, path string) []byte {
	t.Helper()
	b.page(t, path, http.StatusOK)
	return b.Last
}

// all2 returns the options of a select.
func all2(sel *htmlNode) []*htmlNode {
	return all(sel, func(n *htmlNode) bool { return n.Data == "option" })
}
