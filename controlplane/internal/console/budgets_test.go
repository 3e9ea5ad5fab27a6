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

func TestBudgetsPage(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	if _, err := h.API(tadmA).Keys.CreateApiKey(ctx, connect.NewRequest(&adminv1.CreateApiKeyRequest{Tenant: "a", Name: "ci"})); err != nil {
		t.Fatal(err)
	}
	b := h.login(t, costA) // cost owners manage budgets

	doc := b.page(t, "/console/budgets", http.StatusOK)
	find(t, doc, "budgets-empty")
	opts := all(find(t, doc, "input-key"), func(n *htmlNode) bool { return n.Data == "option" })
	if len(opts) != 2 || attr(opts[1], "value") != "ci" {
		t.Errorf("key options %d", len(opts))
	}

	// Amounts are decimal dollars, converted exactly; a malformed one is
	// refused next to the field.
	for _, bad := range []string{"abc", "1.0000000001", "-3"} {
		doc = b.submit(t, "/console/budgets", url.Values{"name": {"m"}, "limit_nanos": {bad}, "period": {"month"}}, http.StatusUnprocessableEntity)
		if text(find(t, doc, "problem-limit_nanos")) == "" || attr(find(t, doc, "input-limit_nanos"), "value") != bad {
			t.Errorf("limit %q: no problem or value lost", bad)
		}
	}
	doc = b.submit(t, "/console/budgets", url.Values{"name": {"Bad"}, "limit_nanos": {"5"}, "period": {"week"}}, http.StatusUnprocessableEntity)
	find(t, doc, "problem-name")
	find(t, doc, "problem-period")

	doc = b.submit(t, "/console/budgets", url.Values{"name": {"monthly"}, "limit_nanos": {"10.50"}, "period": {"month"}}, http.StatusOK)
	find(t, doc, "flash-ok")
	doc = b.submit(t, "/console/budgets", url.Values{"name": {"ci-daily"}, "limit_nanos": {"0.000000003"}, "period": {"day"}, "key": {"ci"}}, http.StatusOK)

	// Spend as usage ingest settles it.
	if _, err := h.Store.Pool().Exec(ctx, `UPDATE budgets SET spent_nanos = 2625000001 WHERE name = 'monthly'`); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Store.Pool().Exec(ctx, `UPDATE budgets SET spent_nanos = 4 WHERE name = 'ci-daily'`); err != nil {
		t.Fatal(err)
	}
	doc = b.page(t, "/console/budgets", http.StatusOK)
	m := find(t, doc, "budget-monthly")
	for id, want := range map[string]string{
		"budget-limit": "$10.5", "budget-spent": "$2.625000001", "budget-left": "$7.874999999",
		"budget-percent": "25%", "budget-period": "month", "budget-key": "whole tenant",
	} {
		if got := text(find(t, m, id)); got != want {
			t.Errorf("monthly %s = %q, want %q", id, got, want)
		}
	}
	meter := find(t, m, "budget-meter")
	if meter.Data != "meter" || attr(meter, "max") != "10.5" || attr(meter, "value") != "2.625000001" || attr(meter, "min") != "0" {
		t.Errorf("meter %v", meter.Attr)
	}
	if has(m, "budget-over") {
		t.Error("monthly marked over")
	}
	d := find(t, doc, "budget-ci-daily")
	if text(find(t, d, "budget-key")) != "key ci" || text(find(t, d, "budget-limit")) != "$0.000000003" {
		t.Errorf("ci-daily: %q %q", text(find(t, d, "budget-key")), text(find(t, d, "budget-limit")))
	}
	find(t, d, "budget-over")
	if mt := find(t, d, "budget-meter"); attr(mt, "value") != attr(mt, "max") {
		t.Errorf("an overspent meter's value %q exceeds its max %q", attr(mt, "value"), attr(mt, "max"))
	}

	form := formOf(t, find(t, d, "budget-delete"))
	doc = b.submit(t, attr(form, "action"), nil, http.StatusOK)
	if has(doc, "budget-ci-daily") || !has(doc, "budget-monthly") {
		t.Error("delete did not remove only ci-daily")
	}

	// A provider admin reads budgets only.
	p := h.login(t, padmA)
	doc = p.page(t, "/console/budgets", http.StatusOK)
	find(t, doc, "budgets-readonly")
	doc = p.submit(t, "/console/budgets?tenant=a", url.Values{"name": {"x"}, "limit_nanos": {"1"}, "period": {"day"}}, http.StatusForbidden)
	if !strings.HasPrefix(text(find(t, doc, "form-problems-message")), "Not allowed") {
		t.Error("refusal not shown")
	}
}
