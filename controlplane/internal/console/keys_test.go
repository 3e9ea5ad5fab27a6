package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"connectrpc.com/connect"

	adminv1 "weir.dev/proto/gen/weir/admin/v1"
)

func TestKeysPage(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	b := h.login(t, tadmA)

	doc := b.page(t, "/console/keys", http.StatusOK)
	find(t, doc, "keys-empty")
	find(t, doc, "key-create-form")
	if attr(find(t, doc, "nav-keys"), "aria-current") != "page" {
		t.Error("nav-keys is not the current item")
	}

	// Create: the key is in this response, once, with a copy button.
	doc = b.submit(t, "/console/keys", url.Values{"name": {"k1"}, "allowed_models": {"gpt-x, claude-y"}}, http.StatusOK)
	input := find(t, doc, "new-key-value")
	secret := attr(input, "value")
	if len(secret) < 20 || !hasAttr(input, "readonly") {
		t.Fatalf("new key input: value %q readonly %v", secret, hasAttr(input, "readonly"))
	}
	if got := strings.Count(string(b.Last), secret); got != 1 {
		t.Errorf("the new key appears %d times in the page, want 1", got)
	}
	if cp := find(t, doc, "new-key-copy"); attr(cp, "data-copy-target") != "#new-key-value" {
		t.Errorf("copy button target %q", attr(cp, "data-copy-target"))
	}
	row := find(t, doc, "key-k1")
	if p := text(find(t, row, "key-prefix")); !strings.HasPrefix(secret, strings.TrimSuffix(p, "…")) {
		t.Errorf("prefix %q is not the key's", p)
	}
	if got := text(find(t, row, "key-restrictions")); got != "models gpt-x, claude-y" {
		t.Errorf("restrictions %q", got)
	}
	find(t, doc, "flash-ok")
	for _, name := range []string{"weir_flash", "weir_session", "weir_tenant"} {
		if v := b.cookie(name); v != "" && strings.Contains(v, secret) {
			t.Errorf("cookie %s holds the key", name)
		}
	}
	// The key works: the API knows its prefix.
	keys, err := h.API(tadmA).Keys.ListApiKeys(context.Background(), connect.NewRequest(&adminv1.ListApiKeysRequest{Tenant: "a"}))
	if err != nil || len(keys.Msg.GetApiKeys()) != 1 || !strings.HasPrefix(secret, keys.Msg.GetApiKeys()[0].GetKeyPrefix()) {
		t.Fatalf("ListApiKeys = %v, %v", keys, err)
	}

	// A reload never shows it again.
	doc = b.page(t, "/console/keys", http.StatusOK)
	if has(doc, "new-key") || strings.Contains(string(b.Last), secret) {
		t.Fatal("the key is shown again after a reload")
	}
	find(t, doc, "key-k1")

	// Refused: every problem inline, next to its field, values kept.
	doc = b.submit(t, "/console/keys", url.Values{"name": {"Bad Name"}, "regions": {"eu-1, bad/region"}}, http.StatusUnprocessableEntity)
	find(t, doc, "form-problems")
	if got := text(find(t, doc, "problem-name")); got == "" {
		t.Error("no problem next to name")
	}
	if got := text(find(t, doc, "problem-regions")); !strings.Contains(got, "“bad/region”") {
		t.Errorf("regions problem %q", got)
	}
	var anchors []string
	for _, li := range findAll(doc, "form-problem") {
		if a := first(li, func(n *htmlNode) bool { return n.Data == "a" }); a != nil {
			anchors = append(anchors, attr(a, "href"))
		}
	}
	if strings.Join(anchors, " ") != "#f-name #f-regions" {
		t.Errorf("summary links %v", anchors)
	}
	if attr(find(t, doc, "input-name"), "value") != "Bad Name" || attr(find(t, doc, "input-name"), "aria-invalid") != "true" {
		t.Error("the refused name is not kept and marked invalid")
	}
	if has(doc, "problem-allowed_models") || has(doc, "new-key") {
		t.Error("unexpected problem or key")
	}

	// Revoke with the row's button form.
	form := formOf(t, find(t, find(t, doc, "key-k1"), "key-revoke"))
	if attr(form, "data-confirm") == "" {
		t.Error("revoke asks no confirmation")
	}
	doc = b.submit(t, attr(form, "action"), nil, http.StatusOK)
	find(t, doc, "flash-ok")
	if got := text(find(t, find(t, doc, "key-k1"), "key-state")); got != "revoked" {
		t.Errorf("state after revoke %q", got)
	}
	if has(find(t, doc, "key-k1"), "key-revoke") {
		t.Error("a revoked key still has a revoke button")
	}
}

func TestKeysRoles(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	if _, err := h.API(tadmA).Keys.CreateApiKey(context.Background(), connect.NewRequest(&adminv1.CreateApiKeyRequest{Tenant: "a", Name: "ka"})); err != nil {
		t.Fatal(err)
	}

	// A cost owner reads keys but cannot create one: no form, and the API's
	// refusal is shown when posted anyway.
	cost := h.login(t, costA)
	doc := cost.page(t, "/console/keys", http.StatusOK)
	find(t, doc, "key-ka")
	find(t, doc, "keys-readonly")
	if has(doc, "key-create-form") || has(doc, "key-revoke") {
		t.Error("a cost owner is offered key changes")
	}
	doc = cost.submit(t, "/console/keys", url.Values{"name": {"k2"}}, http.StatusForbidden)
	if got := text(find(t, doc, "form-problems-message")); !strings.HasPrefix(got, "Not allowed") {
		t.Errorf("refusal %q", got)
	}
	if has(doc, "new-key") {
		t.Fatal("a key was shown")
	}
	doc = cost.submit(t, "/console/keys/ka/revoke?tenant=a", nil, http.StatusOK)
	if got := text(find(t, doc, "flash-error")); !strings.Contains(got, "Not allowed") {
		t.Errorf("revoke refusal %q", got)
	}

	// Tenant b's admin never sees tenant a's keys, even when asking.
	other := h.login(t, tadmB)
	doc = other.page(t, "/console/keys?tenant=a", http.StatusOK)
	if has(doc, "key-ka") || text(find(t, doc, "tenant-current")) != "b" {
		t.Fatal("tenant b's admin sees tenant a's keys")
	}
	other.submit(t, "/console/keys/ka/revoke?tenant=a", nil, http.StatusOK)
	keys, err := h.API(tadmA).Keys.ListApiKeys(context.Background(), connect.NewRequest(&adminv1.ListApiKeysRequest{Tenant: "a"}))
	if err != nil || len(keys.Msg.GetApiKeys()) != 1 {
		t.Fatalf("tenant a's key after b's revoke attempt: %v, %v", keys, err)
	}
}

// formOf returns the form holding n.
func formOf(t *testing.T, n *htmlNode) *htmlNode {
	t.Helper()
	for p := n.Parent; p != nil; p = p.Parent {
		if p.Data == "form" {
			return p
		}
	}
	t.Fatal("not inside a form")
	return nil
}
