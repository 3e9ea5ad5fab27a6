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

func TestRulesPage(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	b := h.login(t, tadmA)

	doc := b.page(t, "/console/tenants", http.StatusOK)
	if href := attr(find(t, find(t, doc, "tenant-a"), "tenant-rules"), "href"); href != "/console/rules?tenant=a" {
		t.Errorf("tenants page links the rules as %q", href)
	}
	doc = b.page(t, "/console/rules", http.StatusOK)
	if got := text(find(t, doc, "rules-regions")); got != "any region" {
		t.Errorf("regions %q", got)
	}
	if attr(find(t, doc, "nav-tenants"), "aria-current") != "page" {
		t.Error("the rules page does not highlight Tenants")
	}

	// A malformed tag line is refused before the API, next to its field.
	doc = b.submit(t, "/console/rules", url.Values{
		"rules.allowed_regions": {"eu-*"}, "rules.required_tags": {"tier=gold\nnonsense"},
	}, http.StatusUnprocessableEntity)
	if got := text(find(t, doc, "problem-rules-required_tags")); !strings.Contains(got, "line 2") {
		t.Errorf("tags problem %q", got)
	}
	if got := attr(find(t, doc, "input-rules-allowed_regions"), "value"); got != "eu-*" {
		t.Errorf("regions not kept: %q", got)
	}

	// The API's problems land next to their inputs.
	doc = b.submit(t, "/console/rules", url.Values{"rules.allowed_regions": {"eu-1 eu/2"}}, http.StatusUnprocessableEntity)
	if got := text(find(t, doc, "problem-rules-allowed_regions")); !strings.Contains(got, "“eu/2”") {
		t.Errorf("regions problem %q", got)
	}
	if len(findAll(doc, "form-problem")) != 1 {
		t.Errorf("%d problems listed, want 1", len(findAll(doc, "form-problem")))
	}

	doc = b.submit(t, "/console/rules", url.Values{
		"rules.allowed_regions": {"eu-*, us-east-1"}, "rules.no_retained_data": {"on"}, "rules.required_tags": {"tier = gold\nzone=a"},
	}, http.StatusOK)
	find(t, doc, "flash-ok")
	if got := text(find(t, doc, "rules-regions")); got != "eu-*, us-east-1" {
		t.Errorf("regions %q", got)
	}
	if got := text(find(t, doc, "rules-tags")); got != "tier=gold, zone=a" {
		t.Errorf("tags %q", got)
	}
	if !strings.HasPrefix(text(find(t, doc, "rules-retention")), "refused") || !hasAttr(find(t, doc, "input-rules-no_retained_data"), "checked") {
		t.Error("no_retained_data not shown")
	}
	got, err := h.API(tadmA).Tenants.GetDataRules(context.Background(), connect.NewRequest(&adminv1.GetDataRulesRequest{Tenant: "a"}))
	if err != nil || len(got.Msg.GetRules().GetAllowedRegions()) != 2 || got.Msg.GetRules().GetRequiredTags()["tier"] != "gold" {
		t.Fatalf("stored rules %v, %v", got, err)
	}

	cost := h.login(t, costA)
	doc = cost.page(t, "/console/rules", http.StatusOK)
	find(t, doc, "rules-readonly")
	if has(doc, "rules-form") {
		t.Error("a cost owner is offered the rules form")
	}
	doc = cost.submit(t, "/console/rules?tenant=a", url.Values{"rules.allowed_regions": {""}}, http.StatusForbidden)
	find(t, doc, "form-problems")
}
