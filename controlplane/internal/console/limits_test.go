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

// TestTenantLimitsForm: the tenants page shows the current tenant's caller
// limits (R-CAP-2) and a form for tenant admins; problems land in the form,
// a tenant admin is refused a max in flight above the cluster default, and
// a cost owner gets no form.
func TestTenantLimitsForm(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	b := h.login(t, tadmA)

	doc := b.page(t, "/console/tenants?tenant=a", http.StatusOK)
	lim := find(t, doc, "tenant-limits")
	if got := text(find(t, lim, "limits-rpm")); got != "none" {
		t.Errorf("rpm %q", got)
	}
	if got := strings.Join(strings.Fields(text(find(t, lim, "limits-max-in-flight"))), " "); got != "512 (the cluster default)" {
		t.Errorf("max in flight %q", got)
	}
	find(t, doc, "limits-form")

	// Not a number: refused before the API, next to its field, value kept.
	doc = b.submit(t, "/console/tenants/limits?tenant=a", url.Values{"limits.rpm": {"lots"}, "limits.max_in_flight": {"8"}}, http.StatusUnprocessableEntity)
	if got := text(find(t, doc, "problem-limits-rpm")); !strings.Contains(got, "whole number") {
		t.Errorf("rpm problem %q", got)
	}
	if got := attr(find(t, doc, "input-limits-max_in_flight"), "value"); got != "8" {
		t.Errorf("max in flight not kept: %q", got)
	}
	// Out of range: the API's problems, both of them, in the form.
	doc = b.submit(t, "/console/tenants/limits?tenant=a", url.Values{"limits.rpm": {"-1"}, "limits.max_in_flight": {"2000000"}}, http.StatusUnprocessableEntity)
	find(t, doc, "problem-limits-rpm")
	find(t, doc, "problem-limits-max_in_flight")
	// Above the cluster default: only cluster admins.
	doc = b.submit(t, "/console/tenants/limits?tenant=a", url.Values{"limits.max_in_flight": {"513"}}, http.StatusForbidden)
	if got := text(find(t, doc, "tenant-limits")); !strings.Contains(got, "cluster default") {
		t.Errorf("refusal not shown in the limits form: %q", got)
	}

	doc = b.submit(t, "/console/tenants/limits?tenant=a", url.Values{"limits.rpm": {"900"}, "limits.max_in_flight": {"64"}}, http.StatusOK)
	find(t, doc, "flash-ok")
	if got := text(find(t, doc, "limits-rpm")); got != "900" {
		t.Errorf("rpm after save %q", got)
	}
	row := find(t, doc, "tenant-a")
	if got := text(find(t, row, "tenant-rpm")); got != "900" {
		t.Errorf("tenant row rpm %q", got)
	}
	if got := strings.TrimSpace(text(find(t, row, "tenant-max-in-flight"))); got != "64" {
		t.Errorf("tenant row max in flight %q", got)
	}
	got, err := h.API(tadmA).Tenants.GetTenant(context.Background(), connect.NewRequest(&adminv1.GetTenantRequest{Tenant: "a"}))
	if err != nil || got.Msg.GetTenant().GetLimits().GetRpm() != 900 || got.Msg.GetTenant().GetEffectiveMaxInFlight() != 64 {
		t.Fatalf("stored limits %v, %v", got, err)
	}

	cost := h.login(t, costA)
	doc = cost.page(t, "/console/tenants?tenant=a", http.StatusOK)
	find(t, doc, "limits-readonly")
	if has(doc, "limits-form") {
		t.Error("a cost owner is offered the limits form")
	}
}

// TestKeyLimitsForm: the key create form takes caller limits (R-CAP-2) and
// the key list shows them.
func TestKeyLimitsForm(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	b := h.login(t, tadmA)
	doc := b.submit(t, "/console/keys", url.Values{"name": {"k1"}, "limits.rpm": {"x"}}, http.StatusUnprocessableEntity)
	find(t, doc, "problem-limits-rpm")
	doc = b.submit(t, "/console/keys", url.Values{"name": {"k1"}, "limits.max_in_flight": {"-2"}}, http.StatusUnprocessableEntity)
	find(t, doc, "problem-limits-max_in_flight")
	doc = b.submit(t, "/console/keys", url.Values{"name": {"k1"}, "limits.rpm": {"120"}, "limits.max_in_flight": {"4"}}, http.StatusOK)
	if got := text(find(t, find(t, doc, "key-k1"), "key-limits")); got != "120 calls per minute; 4 in flight" {
		t.Errorf("key limits %q", got)
	}
	doc = b.submit(t, "/console/keys", url.Values{"name": {"k2"}}, http.StatusOK)
	if got := strings.TrimSpace(text(find(t, find(t, doc, "key-k2"), "key-limits"))); got != "none" {
		t.Errorf("key without limits %q", got)
	}
}
