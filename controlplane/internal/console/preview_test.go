package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// preview submits a form with "Preview changes".
func preview(t *testing.T, b *browser, path string, vals url.Values, want int) *html.Node {
	t.Helper()
	vals.Set("preview", "1")
	doc := b.submit(t, path, vals, want)
	vals.Del("preview")
	return doc
}

// changeOf returns the preview's row of the change whose field ends in
// suffix (the API names member fields "members[c].spec.weight" or
// "spec.weight").
func changeOf(t *testing.T, doc *html.Node, suffix string) *html.Node {
	t.Helper()
	var fields []string
	for _, n := range findAll(doc, "change") {
		if strings.HasSuffix(attr(n, "data-field"), suffix) {
			return n
		}
		fields = append(fields, attr(n, "data-field"))
	}
	t.Fatalf("no change of …%s in the preview; changes: %v", suffix, fields)
	return nil
}

func TestRecordPreview(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	createPricedPool(t, h, "a", "p")
	b := h.login(t, tadmA)
	before := getProvider(t, h, "a", "p").GetRecord()

	// The preview lists each change, before → after, above the save
	// button, keeps the values entered and saves nothing.
	vals := formValues(t, b.page(t, "/console/providers/p/edit", http.StatusOK), "record-edit-form")
	vals.Set("spec.region", "eu-north")
	vals.Set("spec.priority", "3")
	doc := preview(t, b, "/console/providers/p/edit", vals, http.StatusOK)
	find(t, doc, "change-preview")
	region := changeOf(t, doc, "region")
	if got := text(find(t, region, "change-after")); got != "eu-north" {
		t.Errorf("region after = %q", got)
	}
	if got := text(find(t, changeOf(t, doc, "priority"), "change-after")); got != "3" {
		t.Errorf("priority after = %q", got)
	}
	if got := attr(find(t, doc, "input-spec-region"), "value"); got != "eu-north" {
		t.Errorf("region kept as %q", got)
	}
	if has(doc, "flash-ok") || has(doc, "form-problems") {
		t.Error("a preview flashed or showed problems")
	}
	after := getProvider(t, h, "a", "p").GetRecord()
	if after.GetRevision() != before.GetRevision() || after.GetSpec().GetRegion() != "" {
		t.Fatalf("a preview saved: revision %d → %d, region %q", before.GetRevision(), after.GetRevision(), after.GetSpec().GetRegion())
	}

	// Save, from the previewed form, does the real request.
	doc = b.submit(t, "/console/providers/p/edit", formValues(t, doc, "record-edit-form"), http.StatusOK)
	find(t, doc, "flash-ok")
	if sp := getProvider(t, h, "a", "p").GetRecord().GetSpec(); sp.GetRegion() != "eu-north" || sp.GetPriority() != 3 {
		t.Errorf("saved spec %v", sp)
	}

	// A form that changes nothing previews as such.
	vals = formValues(t, b.page(t, "/console/providers/p/edit", http.StatusOK), "record-edit-form")
	doc = preview(t, b, "/console/providers/p/edit", vals, http.StatusOK)
	if got := text(find(t, doc, "change-preview-summary")); !strings.Contains(got, "changes nothing") || has(doc, "change") {
		t.Errorf("empty preview %q", got)
	}
}

func TestRecordPreviewProblem(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	createPricedPool(t, h, "a", "p")
	b := h.login(t, tadmA)
	before := getProvider(t, h, "a", "p").GetRecord().GetRevision()

	// The API's problem shows next to its field; nothing is written.
	vals := formValues(t, b.page(t, "/console/providers/p/edit", http.StatusOK), "record-edit-form")
	vals.Set("spec.region", "no spaces")
	doc := preview(t, b, "/console/providers/p/edit", vals, http.StatusUnprocessableEntity)
	checkInvalid(t, doc, "spec.region", "")
	if got := text(find(t, doc, "change-preview-summary")); !strings.Contains(got, "refused") {
		t.Errorf("preview summary %q", got)
	}
	if got := attr(find(t, doc, "input-spec-region"), "value"); got != "no spaces" {
		t.Errorf("region kept as %q", got)
	}
	if rec := getProvider(t, h, "a", "p").GetRecord(); rec.GetRevision() != before || rec.GetSpec().GetRegion() != "" {
		t.Fatalf("a refused preview wrote: revision %d → %d", before, rec.GetRevision())
	}

	// A stale form previews as refused too (the revision is checked).
	vals.Set("spec.region", "eu-west")
	vals.Set("expected_revision", "1")
	doc = preview(t, b, "/console/providers/p/edit", vals, http.StatusConflict)
	if got := text(find(t, doc, "form-problems-message")); !strings.Contains(got, "changed meanwhile") {
		t.Errorf("stale preview message %q", got)
	}
	if rec := getProvider(t, h, "a", "p").GetRecord(); rec.GetRevision() != before {
		t.Fatalf("a stale preview wrote: revision %d → %d", before, rec.GetRevision())
	}
}

func TestMemberPreview(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	createPricedPool(t, h, "a", "p")
	b := h.login(t, tadmA)
	before := getProvider(t, h, "a", "p").GetRecord().GetRevision()
	unchanged := func(what string) {
		t.Helper()
		if d := getProvider(t, h, "a", "p"); d.GetRecord().GetRevision() != before || len(d.GetMembers()) != 2 ||
			memberOf(t, d, "a").GetMember().GetSpec().GetWeight() > 1 {
			t.Fatalf("%s wrote: revision %d → %d, members %v", what, before, d.GetRecord().GetRevision(), memberNames(d))
		}
	}

	// Edit: the weight's change, the values kept, nothing written.
	vals := formValues(t, b.page(t, "/console/providers/p/members/a", http.StatusOK), "member-edit-form")
	vals.Set("spec.weight", "5")
	doc := preview(t, b, "/console/providers/p/members/a", vals, http.StatusOK)
	if got := text(find(t, changeOf(t, doc, "weight"), "change-after")); got != "5" {
		t.Errorf("weight after = %q", got)
	}
	if got := attr(find(t, doc, "input-spec-weight"), "value"); got != "5" {
		t.Errorf("weight kept as %q", got)
	}
	unchanged("an edit preview")

	// A bad value: its problem next to its field.
	vals.Set("spec.base_url", "not a url")
	doc = preview(t, b, "/console/providers/p/members/a", vals, http.StatusUnprocessableEntity)
	checkInvalid(t, doc, "spec.base_url", "")
	unchanged("a refused edit preview")

	// Add: the changes, and the R-SEC-4 warning of a member on a's host,
	// with "Save anyway"; nothing written.
	vals = formValues(t, b.page(t, "/console/providers/p", http.StatusOK), "member-add-form")
	vals.Set("member", "d")
	vals.Set("spec.base_url", "https://a.example.com:8443/v1")
	doc = preview(t, b, "/console/providers/p/members", vals, http.StatusOK)
	if len(findAll(doc, "change")) == 0 {
		t.Error("an add preview lists no change")
	}
	if got := attr(find(t, doc, "sec4-warning"), "data-code"); got != "shared_host" {
		t.Errorf("warning %q", got)
	}
	find(t, doc, "save-anyway")
	if got := attr(find(t, doc, "input-member"), "value"); got != "d" {
		t.Errorf("member kept as %q", got)
	}
	unchanged("an add preview")
}

func TestRecordPageRoutingSummary(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	createPricedPool(t, h, "a", "p")
	b := h.login(t, tadmA)
	want := getProvider(t, h, "a", "p").GetRoutingSummary()
	if want == "" {
		t.Fatal("GetProvider gives no routing summary")
	}
	doc := b.page(t, "/console/providers/p", http.StatusOK)
	if got := text(find(t, doc, "routing-summary")); got != want {
		t.Errorf("summary line %q, want %q", got, want)
	}
	// The page opens with it: before the record's settings.
	detail := find(t, doc, "provider-detail")
	for n := detail.PrevSibling; n != nil; n = n.PrevSibling {
		if attr(n, "data-testid") == "routing-summary" {
			return
		}
	}
	t.Error("the summary line does not come before the settings")
}
