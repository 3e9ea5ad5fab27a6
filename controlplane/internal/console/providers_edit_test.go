package console_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"golang.org/x/net/html"
	"google.golang.org/protobuf/proto"

	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// createPricedPool creates tenant's pool name (preset vllm, models m and n)
// with members a and b, the record pricing m whole, and secret k1.
func createPricedPool(t *testing.T, h *harness, tenant, name string) {
	t.Helper()
	ctx := context.Background()
	api := h.API(cluster)
	if _, err := api.Secrets.SetSecret(ctx, connect.NewRequest(&adminv1.SetSecretRequest{Tenant: tenant, Name: "k1", Value: "sk-1", Hosts: []string{"a.example.com", "b.example.com", "c.example.com"}})); err != nil {
		t.Fatalf("secret: %v", err)
	}
	_, err := api.Providers.CreateProvider(ctx, connect.NewRequest(&adminv1.CreateProviderRequest{
		Tenant: tenant, Name: name, Preset: adminv1.Preset_PRESET_VLLM,
		Spec: &adminv1.ProviderSpec{
			Models: []*configv1.Model{{Name: "m"}, {Name: "n"}},
			Prices: []*configv1.Price{{Model: "m", InputMicros: proto.Int64(1_000_000), OutputMicros: proto.Int64(2_000_000), CacheReadMicros: proto.Int64(500_000)}},
		},
		Members: []*adminv1.NewPoolMember{
			{Name: "a", Spec: &adminv1.PoolMemberSpec{BaseUrl: "https://a.example.com/v1"}},
			{Name: "b", Spec: &adminv1.PoolMemberSpec{BaseUrl: "https://b.example.com/v1"}},
		},
	}))
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
}

func selectedOption(t *testing.T, doc *html.Node, testid string) *html.Node {
	t.Helper()
	sel := find(t, doc, testid)
	for _, o := range all(sel, func(n *html.Node) bool { return n.Data == "option" }) {
		if hasAttr(o, "selected") {
			return o
		}
	}
	return first(sel, func(n *html.Node) bool { return n.Data == "option" })
}

func TestMemberEveryField(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	createPricedPool(t, h, "a", "p")
	b := h.login(t, padmA)

	// The edit form shows what an empty field means: the record's values.
	doc := b.page(t, "/console/providers/p/members/a", http.StatusOK)
	if got := text(selectedOption(t, doc, "input-spec-auth-kind")); !strings.Contains(got, "record's: none") {
		t.Errorf("auth kind inherits %q", got)
	}
	if got := text(selectedOption(t, doc, "input-spec-retains_data")); !strings.Contains(got, "record's: no") {
		t.Errorf("retains data inherits %q", got)
	}
	if got := attr(find(t, doc, "input-spec-models"), "placeholder"); got != "record: m, n" {
		t.Errorf("models placeholder %q", got)
	}

	// Every member field through the form.
	vals := formValues(t, doc, "member-edit-form")
	vals.Set("spec.model_map", "m=deploy-m\n")
	vals.Set("spec.tags", "team=x\nenv=prod")
	vals.Set("spec.retains_data", "yes")
	vals.Set("spec.auth.kind", "api-key")
	vals.Set("spec.auth.header", "x-api-key")
	vals.Set("spec.key_secret", "k1")
	vals.Set("spec.prices[0].model", "m")
	vals.Set("spec.prices[0].input_micros", "2.5")
	vals.Set("spec.prices[0].cache_read_micros", "0.000001")
	doc = b.submit(t, "/console/providers/p/members/a", vals, http.StatusOK)
	if got := text(find(t, doc, "flash-ok")); !strings.Contains(got, "prices") || !strings.Contains(got, "auth") || !strings.Contains(got, "model_map") {
		t.Errorf("flash %q", got)
	}
	md := memberOf(t, getProvider(t, h, "a", "p"), "a")
	sp := md.GetMember().GetSpec()
	if sp.GetModelMap()["m"] != "deploy-m" || sp.GetTags()["env"] != "prod" || sp.GetTags()["team"] != "x" || !sp.GetRetainsData() || sp.RetainsData == nil {
		t.Errorf("member after edit: %v", sp)
	}
	if sp.GetAuth().GetKind() != configv1.AuthKind_AUTH_KIND_API_KEY || sp.GetAuth().GetHeader() != "x-api-key" || sp.GetKeySecret() != "k1" {
		t.Errorf("auth %v, key secret %q", sp.GetAuth(), sp.GetKeySecret())
	}
	want := &configv1.Price{Model: "m", InputMicros: proto.Int64(2_500_000), CacheReadMicros: proto.Int64(1)}
	if len(sp.GetPrices()) != 1 || !proto.Equal(sp.GetPrices()[0], want) {
		t.Errorf("prices %v, want %v", sp.GetPrices(), want)
	}
	if p := md.GetEffective().GetPrices(); len(p) == 0 || p[0].GetPrice().GetOutputMicros() != 2_000_000 {
		t.Errorf("effective prices %v: the output part is not the record's", p)
	}
	if got := text(find(t, find(t, doc, "member-a"), "member-field-prices")); !strings.Contains(got, "in $2.5") || !strings.Contains(got, "cache read $0.000001") {
		t.Errorf("prices shown %q", got)
	}
	if strings.Contains(text(doc), "sk-1") {
		t.Error("a secret's value is shown")
	}

	// The edit form shows them back, the record's parts as placeholders.
	doc = b.page(t, "/console/providers/p/members/a", http.StatusOK)
	if got := attr(find(t, doc, "input-spec-prices-0-input_micros"), "value"); got != "2.5" {
		t.Errorf("input price %q", got)
	}
	if got := attr(find(t, doc, "input-spec-prices-0-output_micros"), "placeholder"); got != "record: 2" {
		t.Errorf("output placeholder %q", got)
	}
	if got := text(find(t, doc, "input-spec-model_map")); got != "m=deploy-m" {
		t.Errorf("model map %q", got)
	}

	// A price below a micro-dollar, and a model map line that is no pair,
	// are refused next to their inputs; nothing is saved, values kept.
	vals = formValues(t, doc, "member-edit-form")
	vals.Set("spec.prices[0].input_micros", "0.0000001")
	vals.Set("spec.model_map", "m=deploy-m\nnonsense")
	doc = b.submit(t, "/console/providers/p/members/a", vals, http.StatusUnprocessableEntity)
	checkInvalid(t, doc, "spec.prices[0].input_micros", "more than 6 decimal places")
	checkInvalid(t, doc, "spec.model_map", "key=value")
	if got := attr(find(t, doc, "input-spec-prices-0-input_micros"), "value"); got != "0.0000001" {
		t.Errorf("price kept as %q", got)
	}
	if got := memberOf(t, getProvider(t, h, "a", "p"), "a").GetMember().GetSpec().GetPrices()[0].GetInputMicros(); got != 2_500_000 {
		t.Errorf("input price changed to %d", got)
	}

	// The API's problems: a model map key that is not a model, SigV4
	// without its fields (R-SEC-3).
	vals = formValues(t, doc, "member-edit-form")
	vals.Set("spec.prices[0].input_micros", "2.5")
	vals.Set("spec.model_map", "zz=deploy-z")
	vals.Set("spec.auth.kind", "sigv4")
	vals.Set("spec.auth.header", "")
	doc = b.submit(t, "/console/providers/p/members/a", vals, http.StatusUnprocessableEntity)
	checkInvalid(t, doc, "spec.model_map", "not a model")
	checkInvalid(t, doc, "spec.auth.access_key_secret", "missing")
	checkInvalid(t, doc, "spec.auth.aws_region", "missing")

	// A member price where the record has none must be whole (R-COST-4):
	// shown at the price's row.
	doc = b.page(t, "/console/providers/p", http.StatusOK)
	vals = formValues(t, doc, "member-add-form")
	vals.Set("member", "c")
	vals.Set("spec.base_url", "https://c.example.com/v1")
	vals.Set("spec.prices[0].model", "n")
	vals.Set("spec.prices[0].input_micros", "1")
	doc = b.submit(t, "/console/providers/p/members", vals, http.StatusUnprocessableEntity)
	checkInvalid(t, doc, "spec.prices[0].model", "lacks")
	if got := attr(find(t, doc, "input-spec-prices-0-model"), "value"); got != "n" {
		t.Errorf("price model kept as %q", got)
	}
	// Whole, with every other field: added.
	vals = formValues(t, doc, "member-add-form")
	vals.Set("spec.prices[0].output_micros", "3")
	vals.Set("spec.prices[0].cache_read_micros", "0.25")
	vals.Set("spec.tags", "zone=b")
	vals.Set("spec.retains_data", "no")
	vals.Set("spec.model_map", "n=n-upstream")
	doc = b.submit(t, "/console/providers/p/members", vals, http.StatusOK)
	find(t, doc, "member-c")
	cs := memberOf(t, getProvider(t, h, "a", "p"), "c").GetMember().GetSpec()
	if cs.RetainsData == nil || cs.GetRetainsData() || cs.GetTags()["zone"] != "b" || cs.GetModelMap()["n"] != "n-upstream" {
		t.Errorf("c: %v", cs)
	}
	if p := cs.GetPrices(); len(p) != 1 || p[0].GetInputMicros() != 1_000_000 || p[0].GetOutputMicros() != 3_000_000 || p[0].GetCacheReadMicros() != 250_000 {
		t.Errorf("c prices %v", p)
	}

	// Clearing fields: the member inherits again.
	doc = b.page(t, "/console/providers/p/members/a", http.StatusOK)
	vals = formValues(t, doc, "member-edit-form")
	for _, k := range []string{"spec.model_map", "spec.tags", "spec.retains_data", "spec.auth.kind", "spec.auth.header", "spec.key_secret",
		"spec.prices[0].model", "spec.prices[0].input_micros", "spec.prices[0].cache_read_micros"} {
		vals.Set(k, "")
	}
	b.submit(t, "/console/providers/p/members/a", vals, http.StatusOK)
	sp = memberOf(t, getProvider(t, h, "a", "p"), "a").GetMember().GetSpec()
	if len(sp.GetModelMap()) > 0 || len(sp.GetTags()) > 0 || sp.RetainsData != nil || sp.GetAuth() != nil || sp.KeySecret != nil || len(sp.GetPrices()) > 0 {
		t.Errorf("a after clearing: %v", sp)
	}
}

func TestRecordSettings(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	createPricedPool(t, h, "a", "p")
	b := h.login(t, tadmA)
	doc := b.page(t, "/console/providers/p", http.StatusOK)
	if got := attr(find(t, doc, "provider-edit"), "href"); got != "/console/providers/p/edit" {
		t.Errorf("edit link %q", got)
	}
	if form := find(t, doc, "provider-delete").Parent; attr(form, "data-confirm") == "" {
		t.Error("delete asks no confirmation")
	}

	doc = b.page(t, "/console/providers/p/edit", http.StatusOK)
	vals := formValues(t, doc, "record-edit-form")
	if vals.Get("spec.models") != "m\nn" || vals.Get("spec.prices[0].model") != "m" || vals.Get("spec.prices[0].cache_read_micros") != "0.5" || vals.Get("expected_revision") == "" {
		t.Errorf("form values %v", vals)
	}
	if has(doc, "input-spec-base_url") || has(doc, "input-spec-internal") {
		t.Error("a pool's form offers base_url, or a tenant admin internal")
	}
	vals.Set("spec.region", "eu-north")
	vals.Set("spec.tags", "tier=gold")
	vals.Set("spec.prices[0].output_micros", "2.125")
	vals.Set("spec.prices[1].model", "n")
	vals.Set("spec.prices[1].input_micros", "0.1")
	vals.Set("spec.prices[1].output_micros", "0.2")
	vals.Set("spec.prices[1].cache_read_micros", "0.05")
	vals.Set("spec.priority", "3")
	doc = b.submit(t, "/console/providers/p/edit", vals, http.StatusOK)
	if got := text(find(t, doc, "flash-ok")); !strings.Contains(got, "region") || !strings.Contains(got, "prices") {
		t.Errorf("flash %q", got)
	}
	sp := getProvider(t, h, "a", "p").GetRecord().GetSpec()
	if sp.GetRegion() != "eu-north" || sp.GetTags()["tier"] != "gold" || sp.GetPriority() != 3 {
		t.Errorf("record after edit: %v", sp)
	}
	if p := sp.GetPrices(); len(p) != 2 || p[0].GetOutputMicros() != 2_125_000 || p[1].GetModel() != "n" || p[1].GetInputMicros() != 100_000 || p[1].GetCacheReadMicros() != 50_000 {
		t.Errorf("prices %v", p)
	}
	if got := text(find(t, doc, "setting-region")); got != "eu-north" {
		t.Errorf("region shown %q", got)
	}

	// Refused input next to its field, values kept: a price below a
	// micro-dollar (the console), a bad region (the API).
	doc = b.page(t, "/console/providers/p/edit", http.StatusOK)
	vals = formValues(t, doc, "record-edit-form")
	vals.Set("spec.prices[0].output_micros", "1.1234567")
	doc = b.submit(t, "/console/providers/p/edit", vals, http.StatusUnprocessableEntity)
	checkInvalid(t, doc, "spec.prices[0].output_micros", "more than 6 decimal places")
	vals = formValues(t, doc, "record-edit-form")
	vals.Set("spec.prices[0].output_micros", "2")
	vals.Set("spec.region", "no spaces")
	doc = b.submit(t, "/console/providers/p/edit", vals, http.StatusUnprocessableEntity)
	checkInvalid(t, doc, "spec.region", "")
	if got := attr(find(t, doc, "input-spec-region"), "value"); got != "no spaces" {
		t.Errorf("region kept as %q", got)
	}
	if got := getProvider(t, h, "a", "p").GetRecord().GetSpec().GetPrices()[0].GetOutputMicros(); got != 2_125_000 {
		t.Errorf("price changed by a refused form: %d", got)
	}

	// A stale form is refused with 409.
	vals.Set("spec.region", "eu-west")
	vals.Set("expected_revision", "1")
	doc = b.submit(t, "/console/providers/p/edit", vals, http.StatusConflict)
	if got := text(find(t, doc, "form-problems-message")); !strings.Contains(got, "changed meanwhile") {
		t.Errorf("stale edit message %q", got)
	}

	// R-SEC-4 before saving: a key secret every member inherits.
	doc = b.page(t, "/console/providers/p/edit", http.StatusOK)
	vals = formValues(t, doc, "record-edit-form")
	vals.Set("spec.auth.kind", "api-key")
	vals.Set("spec.auth.header", "authorization")
	vals.Set("spec.key_secret", "k1")
	doc = b.submit(t, "/console/providers/p/edit", vals, http.StatusOK)
	if got := attr(find(t, doc, "sec4-warning"), "data-code"); got != "shared_key_secret" {
		t.Errorf("warning %q", got)
	}
	if getProvider(t, h, "a", "p").GetRecord().GetSpec().GetKeySecret() != "" {
		t.Fatal("saved before confirming")
	}
	vals = formValues(t, doc, "record-edit-form")
	vals.Set("confirm", "1")
	doc = b.submit(t, "/console/providers/p/edit", vals, http.StatusOK)
	checkWarnFlash(t, doc, "shared_key_secret")
	if sp := getProvider(t, h, "a", "p").GetRecord().GetSpec(); sp.GetKeySecret() != "k1" || sp.GetAuth().GetKind() != configv1.AuthKind_AUTH_KIND_API_KEY {
		t.Errorf("auth not saved: %v", sp)
	}

	// A plain record's form has its endpoint.
	createPlain(t, h, "a", "solo")
	doc = b.page(t, "/console/providers/solo/edit", http.StatusOK)
	vals = formValues(t, doc, "record-edit-form")
	vals.Set("spec.base_url", "https://solo2.example.com/v1")
	vals.Set("spec.limits.rpm", "30")
	b.submit(t, "/console/providers/solo/edit", vals, http.StatusOK)
	if sp := getProvider(t, h, "a", "solo").GetRecord().GetSpec(); sp.GetBaseUrl() != "https://solo2.example.com/v1" || sp.GetLimits().GetRpm() != 30 {
		t.Errorf("plain record after edit: %v", sp)
	}

	// Delete, at the revision shown.
	doc = b.page(t, "/console/providers/solo", http.StatusOK)
	del := find(t, doc, "provider-delete").Parent
	rev := ""
	for _, in := range all(del, func(n *html.Node) bool { return n.Data == "input" && attr(n, "name") == "expected_revision" }) {
		rev = attr(in, "value")
	}
	doc = b.submit(t, "/console/providers/solo/delete", url.Values{"expected_revision": {rev}}, http.StatusOK)
	if got := text(find(t, doc, "flash-ok")); !strings.Contains(got, "solo") {
		t.Errorf("flash %q", got)
	}
	if has(doc, "provider-solo") {
		t.Error("deleted record still listed")
	}
	if _, err := h.API(cluster).Providers.GetProvider(context.Background(), connect.NewRequest(&adminv1.GetProviderRequest{Tenant: "a", Name: "solo"})); connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("solo after delete: %v", err)
	}
	// A delete from a stale page is refused.
	doc = b.submit(t, "/console/providers/p/delete", url.Values{"expected_revision": {"1"}}, http.StatusOK)
	if got := text(find(t, doc, "flash-error")); !strings.Contains(got, "changed meanwhile") {
		t.Errorf("stale delete flash %q", got)
	}
	getProvider(t, h, "a", "p")
}

func createPlain(t *testing.T, h *harness, tenant, name string) {
	t.Helper()
	_, err := h.API(cluster).Providers.CreateProvider(context.Background(), connect.NewRequest(&adminv1.CreateProviderRequest{
		Tenant: tenant, Name: name, Preset: adminv1.Preset_PRESET_VLLM,
		Spec: &adminv1.ProviderSpec{BaseUrl: "https://" + name + ".example.com/v1", Models: []*configv1.Model{{Name: "m"}}},
	}))
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
}

func TestRecordSettingsIsolation(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	createPricedPool(t, h, "a", "p")
	before := getProvider(t, h, "a", "p").GetRecord()

	// Tenant b can neither see, edit nor delete tenant a's record.
	b := h.login(t, tadmB)
	b.page(t, "/console/providers/p/edit", http.StatusNotFound)
	resp := b.post(t, "/console/providers/p/edit", url.Values{"csrf": {b.CSRF}, "spec.region": {"b-region"}, "spec.models": {"m"}}, nil)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("tenant b's edit: status %d", resp.StatusCode)
	}
	doc := b.submit(t, "/console/providers/p/delete", nil, http.StatusNotFound)
	find(t, doc, "flash-error")

	// A cost owner of a sees the record read-only, and the API refuses
	// its edits.
	co := h.login(t, costA)
	doc = co.page(t, "/console/providers/p", http.StatusOK)
	if has(doc, "provider-edit") || has(doc, "provider-delete") {
		t.Error("a cost owner is offered edit or delete")
	}
	co.page(t, "/console/providers/p/edit", http.StatusForbidden)
	tadm := h.login(t, tadmA)
	vals := formValues(t, tadm.page(t, "/console/providers/p/edit", http.StatusOK), "record-edit-form")
	vals.Set("spec.region", "eu-south")
	doc = co.submit(t, "/console/providers/p/edit", vals, http.StatusForbidden)
	if got := text(find(t, doc, "form-problems-message")); !strings.Contains(got, "Not allowed") {
		t.Errorf("cost owner's edit message %q", got)
	}
	doc = co.submit(t, "/console/providers/p/delete", nil, http.StatusOK)
	if got := text(find(t, doc, "flash-error")); !strings.Contains(got, "not deleted") {
		t.Errorf("cost owner's delete flash %q", got)
	}

	after := getProvider(t, h, "a", "p").GetRecord()
	if after.GetRevision() != before.GetRevision() || after.GetSpec().GetRegion() != "" {
		t.Errorf("record changed: revision %d → %d, region %q", before.GetRevision(), after.GetRevision(), after.GetSpec().GetRegion())
	}
}

func TestRecordSharing(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	createPool(t, h, "", "mp", map[string]string{"one": "one.example.com"})
	b := h.login(t, cluster)
	doc := b.page(t, "/console/providers/mp?scope=managed", http.StatusOK)
	find(t, doc, "shared-empty")
	vals := formValues(t, doc, "share-form")
	vals.Set("tenant", "a")
	doc = b.submit(t, "/console/providers/mp/share?scope=managed", vals, http.StatusOK)
	if got := text(find(t, doc, "flash-ok")); !strings.Contains(got, "shared with a") {
		t.Errorf("flash %q", got)
	}
	find(t, doc, "shared-a")
	if got := getProvider(t, h, "", "mp").GetRecord().GetSharedWith(); !slices.Contains(got, "a") {
		t.Errorf("shared with %v", got)
	}
	// Tenant a sees it, read-only.
	doc = h.login(t, tadmA).page(t, "/console/providers/mp", http.StatusOK)
	find(t, doc, "provider-read-only")
	if has(doc, "provider-edit") || has(doc, "provider-sharing") {
		t.Error("a tenant admin may change a shared managed record")
	}
	// Managed settings are editable by the cluster admin.
	doc = b.page(t, "/console/providers/mp/edit?scope=managed", http.StatusOK)
	find(t, doc, "input-spec-internal")
	doc = b.submit(t, "/console/providers/mp/unshare?scope=managed", url.Values{"tenant": {"a"}}, http.StatusOK)
	find(t, doc, "shared-empty")
	if got := getProvider(t, h, "", "mp").GetRecord().GetSharedWith(); len(got) != 0 {
		t.Errorf("still shared with %v", got)
	}
}
