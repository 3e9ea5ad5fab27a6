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
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	adminv1 "weir.dev/proto/gen/weir/admin/v1"
)

func fieldMask(paths ...string) *fieldmaskpb.FieldMask { return &fieldmaskpb.FieldMask{Paths: paths} }

// formValues returns what a browser would submit from the form with
// data-testid id (without its submit buttons and without the CSRF token,
// which submit adds).
func formValues(t *testing.T, doc *html.Node, id string) url.Values {
	t.Helper()
	form := find(t, doc, id)
	v := url.Values{}
	for _, n := range all(form, func(n *html.Node) bool { return n.Data == "input" || n.Data == "textarea" || n.Data == "select" }) {
		name := attr(n, "name")
		if name == "" || name == "csrf" {
			continue
		}
		switch n.Data {
		case "input":
			switch attr(n, "type") {
			case "submit", "button":
				continue
			case "checkbox", "radio":
				if hasAttr(n, "checked") {
					v.Add(name, attr(n, "value"))
				}
				continue
			}
			v.Add(name, attr(n, "value"))
		case "textarea":
			var b strings.Builder
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				b.WriteString(c.Data)
			}
			v.Add(name, b.String())
		case "select":
			opts := all(n, func(o *html.Node) bool { return o.Data == "option" })
			val := ""
			if len(opts) > 0 {
				val = attr(opts[0], "value")
			}
			for _, o := range opts {
				if hasAttr(o, "selected") {
					val = attr(o, "value")
				}
			}
			v.Add(name, val)
		}
	}
	return v
}

func getProvider(t *testing.T, h *harness, tenant, name string) *adminv1.ProviderDetail {
	t.Helper()
	resp, err := h.API(cluster).Providers.GetProvider(context.Background(), connect.NewRequest(&adminv1.GetProviderRequest{Tenant: tenant, Name: name}))
	if err != nil {
		t.Fatalf("get %s: %v", name, err)
	}
	return resp.Msg.GetDetail()
}

func memberOf(t *testing.T, d *adminv1.ProviderDetail, name string) *adminv1.MemberDetail {
	t.Helper()
	for _, m := range d.GetMembers() {
		if m.GetMember().GetName() == name {
			return m
		}
	}
	t.Fatalf("record %s has no member %s", d.GetRecord().GetName(), name)
	return nil
}

func memberNames(d *adminv1.ProviderDetail) []string {
	var out []string
	for _, m := range d.GetMembers() {
		out = append(out, m.GetMember().GetName())
	}
	return out
}

// checkInvalid checks that the field named path shows a problem next to it
// and is marked invalid.
func checkInvalid(t *testing.T, doc *html.Node, path, want string) {
	t.Helper()
	part := strings.Trim(strings.NewReplacer("[", "-", "]", "-", ".", "-").Replace(path), "-")
	part = strings.ReplaceAll(part, "--", "-")
	if got := text(find(t, doc, "problem-"+part)); !strings.Contains(got, want) {
		t.Errorf("problem of %s = %q, want it to contain %q", path, got, want)
	}
	in := find(t, doc, "input-"+part)
	if attr(in, "aria-invalid") != "true" || !strings.Contains(attr(in, "aria-describedby"), "-problem") {
		t.Errorf("input %s not marked invalid: %v", path, in.Attr)
	}
}

func TestProvidersCreate(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	b := h.login(t, padmA)

	doc := b.page(t, "/console/providers", http.StatusOK)
	find(t, doc, "providers-empty")
	find(t, doc, "provider-create-form")
	if has(doc, "providers-managed") {
		t.Error("a provider admin sees the managed records")
	}

	// Refused input: every problem next to its field, values kept.
	vals := formValues(t, doc, "provider-create-form")
	vals.Set("name", "Bad Name!")
	vals.Set("kind", "pool")
	vals.Set("preset", "vllm")
	vals.Set("spec.models", "m1")
	vals.Set("members[0].name", "a")
	vals.Set("members[0].spec.base_url", "ftp://a.example.com")
	doc = b.submit(t, "/console/providers", vals, http.StatusUnprocessableEntity)
	find(t, doc, "form-problems")
	checkInvalid(t, doc, "name", "")
	checkInvalid(t, doc, "members[0].spec.base_url", "")
	if got := attr(find(t, doc, "input-name"), "value"); got != "Bad Name!" {
		t.Errorf("name kept as %q", got)
	}
	if got := attr(find(t, doc, "input-members-0-spec-base_url"), "value"); got != "ftp://a.example.com" {
		t.Errorf("base url kept as %q", got)
	}

	// A weight that is not a number is caught before the API.
	vals = formValues(t, doc, "provider-create-form")
	vals.Set("name", "pool1")
	vals.Set("members[0].spec.base_url", "https://a.example.com/v1")
	vals.Set("members[0].spec.weight", "lots")
	doc = b.submit(t, "/console/providers", vals, http.StatusUnprocessableEntity)
	checkInvalid(t, doc, "members[0].spec.weight", "whole number")

	// A pool with two members.
	vals = formValues(t, doc, "provider-create-form")
	vals.Set("members[0].spec.weight", "2")
	vals.Set("members[1].name", "b")
	vals.Set("members[1].spec.base_url", "https://b.example.com/v1")
	vals.Set("spec.models", "m1\nm2")
	doc = b.submit(t, "/console/providers", vals, http.StatusOK)
	if got := text(find(t, doc, "flash-ok")); !strings.Contains(got, "pool1") {
		t.Errorf("flash %q", got)
	}
	if attr(find(t, doc, "provider-detail"), "data-kind") != "pool" {
		t.Error("not a pool")
	}
	find(t, doc, "member-a")
	find(t, doc, "member-b")
	d := getProvider(t, h, "a", "pool1")
	if got := strings.Join(memberNames(d), ","); got != "a,b" {
		t.Errorf("members %s", got)
	}
	if w := memberOf(t, d, "a").GetMember().GetSpec().GetWeight(); w != 2 {
		t.Errorf("weight of a = %d", w)
	}

	doc = b.page(t, "/console/providers", http.StatusOK)
	row := find(t, doc, "provider-pool1")
	if text(find(t, row, "provider-kind")) != "pool" || text(find(t, row, "provider-members")) != "2" || text(find(t, row, "provider-preset")) != "vllm" {
		t.Errorf("row: %s", text(row))
	}

	// A plain record.
	vals = formValues(t, doc, "provider-create-form")
	vals.Set("name", "plain1")
	vals.Set("kind", "plain")
	vals.Set("preset", "vllm")
	vals.Set("spec.models", "x")
	vals.Set("spec.base_url", "https://plain.example.com/v1")
	vals.Set("spec.limits.rpm", "60")
	doc = b.submit(t, "/console/providers", vals, http.StatusOK)
	if attr(find(t, doc, "provider-detail"), "data-kind") != "plain" {
		t.Error("not plain")
	}
	if got := text(find(t, doc, "setting-base_url")); got != "https://plain.example.com/v1" {
		t.Errorf("base url setting %q", got)
	}
	if got := text(find(t, find(t, doc, "member-primary"), "member-field-limits")); !strings.Contains(got, "60 requests") {
		t.Errorf("primary limits %q", got)
	}
	if has(doc, "member-remove-primary") || has(doc, "member-off-primary") {
		t.Error("a plain record's endpoint offers member actions")
	}

	// R-SEC-4 on create: two members on one host are warned about before
	// saving.
	vals = formValues(t, b.page(t, "/console/providers", http.StatusOK), "provider-create-form")
	vals.Set("name", "twins")
	vals.Set("preset", "vllm")
	vals.Set("spec.models", "m")
	vals.Set("members[0].name", "t1")
	vals.Set("members[0].spec.base_url", "https://twin.example.com/v1")
	vals.Set("members[1].name", "t2")
	vals.Set("members[1].spec.base_url", "https://twin.example.com:8443/v1")
	doc = b.submit(t, "/console/providers", vals, http.StatusOK)
	if got := attr(find(t, doc, "sec4-warning"), "data-code"); got != "shared_host" {
		t.Errorf("warning code %q", got)
	}
	find(t, doc, "save-anyway")
	if _, err := h.API(cluster).Providers.GetProvider(context.Background(), connect.NewRequest(&adminv1.GetProviderRequest{Tenant: "a", Name: "twins"})); connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("saved before confirmation: %v", err)
	}
	vals = formValues(t, doc, "provider-create-form")
	vals.Set("confirm", "1")
	doc = b.submit(t, "/console/providers", vals, http.StatusOK)
	find(t, doc, "flash-ok")
	checkWarnFlash(t, doc, "shared_host")
	var codes []string
	for _, w := range findAll(doc, "provider-warning") {
		codes = append(codes, attr(w, "data-code"))
	}
	if !slices.Contains(codes, "shared_host") {
		t.Errorf("record warnings %v, want shared_host", codes)
	}
}

func TestPoolMembers(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	createPool(t, h, "a", "p", map[string]string{"a": "a.example.com", "b": "b.example.com"})
	b := h.login(t, tadmA)
	doc := b.page(t, "/console/providers/p", http.StatusOK)
	find(t, doc, "member-add-form")
	if got := attr(find(t, find(t, doc, "member-a"), "member-state"), "data-state"); got != "on" {
		t.Errorf("a is %q", got)
	}

	// Add.
	vals := formValues(t, doc, "member-add-form")
	vals.Set("member", "c")
	vals.Set("spec.base_url", "https://c.example.com/v1")
	vals.Set("spec.limits.rpm", "120")
	doc = b.submit(t, "/console/providers/p/members", vals, http.StatusOK)
	if got := text(find(t, doc, "flash-ok")); !strings.Contains(got, "c") {
		t.Errorf("flash %q", got)
	}
	find(t, doc, "member-c")
	if l := memberOf(t, getProvider(t, h, "a", "p"), "c").GetMember().GetSpec().GetLimits().GetRpm(); l != 120 {
		t.Errorf("rpm of c = %d", l)
	}

	// Bad input: problems next to their fields, values kept.
	vals = formValues(t, doc, "member-add-form")
	vals.Set("member", "Bad!")
	vals.Set("spec.base_url", "not a url")
	vals.Set("spec.region", "no spaces allowed")
	doc = b.submit(t, "/console/providers/p/members", vals, http.StatusUnprocessableEntity)
	checkInvalid(t, doc, "member", "")
	checkInvalid(t, doc, "spec.base_url", "")
	checkInvalid(t, doc, "spec.region", "")
	if got := attr(find(t, doc, "input-spec-region"), "value"); got != "no spaces allowed" {
		t.Errorf("region kept as %q", got)
	}

	// R-SEC-4 before saving: d shares a's host.
	vals = formValues(t, doc, "member-add-form")
	vals.Set("member", "d")
	vals.Set("spec.base_url", "https://a.example.com:8443/v1")
	vals.Set("spec.region", "")
	doc = b.submit(t, "/console/providers/p/members", vals, http.StatusOK)
	if got := attr(find(t, doc, "sec4-warning"), "data-code"); got != "shared_host" {
		t.Errorf("warning %q", got)
	}
	find(t, doc, "save-anyway")
	if got := attr(find(t, doc, "input-member"), "value"); got != "d" {
		t.Errorf("member kept as %q", got)
	}
	if n := len(getProvider(t, h, "a", "p").GetMembers()); n != 3 {
		t.Fatalf("%d members before confirming, want 3", n)
	}
	vals = formValues(t, doc, "member-add-form")
	vals.Set("confirm", "1")
	doc = b.submit(t, "/console/providers/p/members", vals, http.StatusOK)
	checkWarnFlash(t, doc, "shared_host")
	if n := len(getProvider(t, h, "a", "p").GetMembers()); n != 4 {
		t.Fatalf("%d members after confirming, want 4", n)
	}

	// Edit c: weight 5.
	doc = b.page(t, "/console/providers/p/members/c", http.StatusOK)
	vals = formValues(t, doc, "member-edit-form")
	if vals.Get("spec.base_url") != "https://c.example.com/v1" || vals.Get("spec.limits.rpm") != "120" || vals.Get("expected_revision") == "" {
		t.Errorf("edit form values %v", vals)
	}
	vals.Set("spec.weight", "5")
	doc = b.submit(t, "/console/providers/p/members/c", vals, http.StatusOK)
	if got := text(find(t, doc, "flash-ok")); !strings.Contains(got, "weight") {
		t.Errorf("flash %q", got)
	}
	cs := memberOf(t, getProvider(t, h, "a", "p"), "c").GetMember().GetSpec()
	if cs.GetWeight() != 5 || cs.GetLimits().GetRpm() != 120 {
		t.Errorf("c after edit: %v", cs)
	}
	if got := text(find(t, find(t, doc, "member-c"), "member-field-weight")); got != "5" {
		t.Errorf("weight shown %q", got)
	}

	// A bad edit.
	doc = b.page(t, "/console/providers/p/members/c", http.StatusOK)
	vals = formValues(t, doc, "member-edit-form")
	vals.Set("spec.base_url", "http://10.0.0.1/v1")
	doc = b.submit(t, "/console/providers/p/members/c", vals, http.StatusUnprocessableEntity)
	checkInvalid(t, doc, "spec.base_url", "")
	// An edit from a stale form is refused.
	vals.Set("spec.base_url", "https://c2.example.com/v1")
	vals.Set("expected_revision", "1")
	doc = b.submit(t, "/console/providers/p/members/c", vals, http.StatusConflict)
	if got := text(find(t, doc, "form-problems-message")); !strings.Contains(got, "changed meanwhile") {
		t.Errorf("stale edit message %q", got)
	}

	// Off and on.
	doc = b.page(t, "/console/providers/p", http.StatusOK)
	find(t, doc, "member-off-c")
	doc = b.submit(t, "/console/providers/p/members/c/off", nil, http.StatusOK)
	if got := attr(find(t, find(t, doc, "member-c"), "member-state"), "data-state"); got != "off" {
		t.Errorf("c is %q after turning off", got)
	}
	find(t, doc, "member-on-c")
	if !memberOf(t, getProvider(t, h, "a", "p"), "c").GetEffective().GetOff() {
		t.Error("c is not off")
	}
	doc = b.submit(t, "/console/providers/p/members/c/on", nil, http.StatusOK)
	if memberOf(t, getProvider(t, h, "a", "p"), "c").GetEffective().GetOff() {
		t.Error("c is still off")
	}
	find(t, doc, "member-off-c")

	// Remove, with a confirmation question.
	if form := find(t, doc, "member-remove-d").Parent; form.Data != "form" || attr(form, "data-confirm") == "" {
		t.Error("remove asks no confirmation")
	}
	doc = b.submit(t, "/console/providers/p/members/d/remove", nil, http.StatusOK)
	find(t, doc, "flash-ok")
	if has(doc, "member-d") {
		t.Error("d still shown")
	}
	if got := strings.Join(memberNames(getProvider(t, h, "a", "p")), ","); got != "a,b,c" {
		t.Errorf("members after removal %s", got)
	}

	// An unknown member's page is a 404.
	b.page(t, "/console/providers/p/members/zz", http.StatusNotFound)
}

func TestProvidersTenantIsolation(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	createPool(t, h, "a", "p", map[string]string{"a": "a.example.com", "b": "b.example.com"})
	b := h.login(t, tadmB)
	doc := b.page(t, "/console/providers", http.StatusOK)
	if has(doc, "provider-p") {
		t.Error("tenant b lists tenant a's pool")
	}
	b.page(t, "/console/providers/p", http.StatusNotFound)
	b.page(t, "/console/providers/p?tenant=a", http.StatusNotFound)
	b.page(t, "/console/providers/p?scope=managed", http.StatusNotFound)
	// Refused by the API (no such record in b), said in a flash on the
	// record's page, which is not found either.
	doc = b.submit(t, "/console/providers/p/members/a/off", nil, http.StatusNotFound)
	find(t, doc, "flash-error")
	doc = b.submit(t, "/console/providers/p/members/a/remove", nil, http.StatusNotFound)
	find(t, doc, "flash-error")
	b.post(t, "/console/providers/p/members", url.Values{"csrf": {b.CSRF}, "member": {"x"}, "spec.base_url": {"https://x.example.com/v1"}}, nil)
	d := getProvider(t, h, "a", "p")
	if got := strings.Join(memberNames(d), ","); got != "a,b" || memberOf(t, d, "a").GetEffective().GetOff() {
		t.Errorf("tenant b changed tenant a's pool: %s", got)
	}

	// A cost owner of a sees the pool read-only.
	doc = h.login(t, costA).page(t, "/console/providers/p", http.StatusOK)
	find(t, doc, "provider-read-only")
	if has(doc, "member-add-form") || has(doc, "member-off-a") || has(doc, "member-remove-a") {
		t.Error("a cost owner is offered changes")
	}
}

func TestProvidersManaged(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	b := h.login(t, cluster)
	doc := b.page(t, "/console/providers", http.StatusOK)
	find(t, doc, "providers-managed")
	vals := formValues(t, doc, "provider-create-form")
	vals.Set("scope", "managed")
	vals.Set("name", "shared-pool")
	vals.Set("preset", "vllm")
	vals.Set("spec.models", "m")
	vals.Set("members[0].name", "one")
	vals.Set("members[0].spec.base_url", "https://one.example.com/v1")
	doc = b.submit(t, "/console/providers", vals, http.StatusOK)
	find(t, doc, "member-one")
	d := getProvider(t, h, "", "shared-pool")
	if !d.GetRecord().GetManaged() {
		t.Error("not managed")
	}
	doc = b.page(t, "/console/providers", http.StatusOK)
	find(t, doc, "provider-managed-shared-pool")
	doc = b.page(t, "/console/", http.StatusOK)
	find(t, doc, "health-record-managed-shared-pool")
	find(t, doc, "reset-managed-shared-pool-one")
	doc = b.submit(t, "/console/health/reset", url.Values{"record": {"shared-pool"}, "member": {"one"}, "scope": {"managed"}}, http.StatusOK)
	find(t, doc, "flash-ok")
}

// checkWarnFlash checks that a warning flash names code.
func checkWarnFlash(t *testing.T, doc *html.Node, code string) {
	t.Helper()
	var texts []string
	for _, f := range findAll(doc, "flash-warn") {
		if strings.Contains(text(f), code) {
			return
		}
		texts = append(texts, text(f))
	}
	t.Errorf("no warning flash names %s: %q", code, texts)
}
