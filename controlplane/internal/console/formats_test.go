package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// R-FMT-4, R-HEAD-6, R-CAP-1 through the member form: a member's own wire
// format, requests per day and calls in flight are saved and shown back;
// an out-of-range rpd is refused next to its input.
func TestMemberFormatAndDayLimits(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	createPricedPool(t, h, "a", "p")
	b := h.login(t, padmA)

	doc := b.page(t, "/console/providers/p/members/a", http.StatusOK)
	vals := formValues(t, doc, "member-edit-form")
	vals.Set("spec.wire_format", "openai")
	vals.Set("spec.limits.rpd", "1000")
	vals.Set("spec.limits.max_in_flight", "5")
	b.submit(t, "/console/providers/p/members/a", vals, http.StatusOK)
	sp := memberOf(t, getProvider(t, h, "a", "p"), "a").GetMember().GetSpec()
	if sp.GetWireFormat() != configv1.WireFormat_WIRE_FORMAT_OPENAI || sp.GetLimits().GetRpd() != 1000 || sp.GetLimits().GetMaxInFlight() != 5 {
		t.Fatalf("member after edit: wire %v limits %v", sp.GetWireFormat(), sp.GetLimits())
	}
	doc = b.page(t, "/console/providers/p/members/a", http.StatusOK)
	if got := attr(find(t, doc, "input-spec-limits-rpd"), "value"); got != "1000" {
		t.Errorf("rpd shown %q", got)
	}
	if got := attr(find(t, doc, "input-spec-limits-max_in_flight"), "value"); got != "5" {
		t.Errorf("max in flight shown %q", got)
	}
	if got := attr(selectedOption(t, doc, "input-spec-wire_format"), "value"); got != "openai" {
		t.Errorf("wire format shown %q", got)
	}

	vals = formValues(t, doc, "member-edit-form")
	vals.Set("spec.limits.rpd", "2000000000")
	doc = b.submit(t, "/console/providers/p/members/a", vals, http.StatusUnprocessableEntity)
	checkInvalid(t, doc, "spec.limits.rpd", "1000000000")
	if got := memberOf(t, getProvider(t, h, "a", "p"), "a").GetMember().GetSpec().GetLimits().GetRpd(); got != 1000 {
		t.Errorf("rpd changed to %d", got)
	}
}

// R-HEAD-6 through the record form: the day zone is saved, and a zone the
// time zone database does not know is refused.
func TestRecordDayZone(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	createPricedPool(t, h, "a", "p")
	b := h.login(t, padmA)

	doc := b.page(t, "/console/providers/p/edit", http.StatusOK)
	vals := formValues(t, doc, "record-edit-form")
	vals.Set("spec.day_zone", "America/Los_Angeles")
	b.submit(t, "/console/providers/p/edit", vals, http.StatusOK)
	if got := getProvider(t, h, "a", "p").GetRecord().GetSpec().GetDayZone(); got != "America/Los_Angeles" {
		t.Fatalf("day zone %q", got)
	}
	doc = b.page(t, "/console/providers/p/edit", http.StatusOK)
	vals = formValues(t, doc, "record-edit-form")
	if vals.Get("spec.day_zone") != "America/Los_Angeles" {
		t.Errorf("day zone shown %q", vals.Get("spec.day_zone"))
	}
	vals.Set("spec.day_zone", "Mars/Olympus")
	doc = b.submit(t, "/console/providers/p/edit", vals, http.StatusUnprocessableEntity)
	checkInvalid(t, doc, "spec.day_zone", "IANA")
}

// The Gemini and Vertex presets are offered on the member form.
func TestGeminiPresetsOffered(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	createPricedPool(t, h, "a", "p")
	b := h.login(t, padmA)
	doc := b.page(t, "/console/providers", http.StatusOK)
	got := text(find(t, doc, "input-preset"))
	if !strings.Contains(got, "gemini") || !strings.Contains(got, "vertex") {
		t.Errorf("presets offered %q", got)
	}
}

// R-CAP-1, R-HEAD-6 on the health page: a cell shows the edge's calls in
// flight against its cap and its calls today against its rpd share, and
// the member's row its wire format.
func TestHealthShowsCapsAndFormat(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	now := h.Clock.Now()
	p := createPool(t, h, "a", "p", map[string]string{"m1": "one.example.com"})
	mv := view("edge-1", "m1", now)
	mv.InFlight, mv.MaxInFlight, mv.RequestsToday, mv.RpdShare, mv.WireFormat = 3, 5, 120, 1000, "gemini"
	seedView(t, h, p, mv)

	b := h.login(t, tadmA)
	doc := b.page(t, "/console/", http.StatusOK)
	cell := find(t, doc, "health-cell-p-m1-edge-1")
	if got := text(find(t, cell, "in-flight")); got != "3/5 in flight" {
		t.Errorf("in flight %q", got)
	}
	if got := text(find(t, cell, "requests-today")); got != "120/1000 today" {
		t.Errorf("today %q", got)
	}
	if got := text(find(t, find(t, doc, "health-member-p-m1"), "member-format")); got != "gemini" {
		t.Errorf("format %q", got)
	}
}

// R-SEC-1 and the Vertex preset: a service account key is set through its
// own form, checked (JSON of a service account, bounded, its token_uri
// host among the bound hosts) and never sent back.
func TestServiceAccountKeyForm(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	b := h.login(t, tadmA)
	doc := b.page(t, "/console/secrets", http.StatusOK)
	if attr(find(t, doc, "input-sa-key-file"), "type") != "file" {
		t.Error("no file input")
	}
	key := `{"type":"service_account","client_email":"x@p.iam.gserviceaccount.com","private_key":"-----BEGIN PRIVATE KEY-----\nSECRETBITS\n-----END PRIVATE KEY-----\n","token_uri":"https://oauth2.googleapis.com/token"}`
	form := func(value, hosts string) url.Values {
		return url.Values{"kind": {"google-service-account"}, "name": {"sa"}, "value": {value}, "hosts": {hosts}}
	}

	doc = b.submit(t, "/console/secrets", form(key, "europe-west4-aiplatform.googleapis.com"), http.StatusUnprocessableEntity)
	if got := text(find(t, doc, "problem-sa-hosts")); !strings.Contains(got, "oauth2.googleapis.com") {
		t.Errorf("hosts problem %q", got)
	}
	if strings.Contains(string(b.Last), "SECRETBITS") {
		t.Error("the key is sent back")
	}
	for _, bad := range []string{"not json", `{"type":"authorized_user"}`, strings.Repeat(" ", 64<<10+1)} {
		doc = b.submit(t, "/console/secrets", form(bad, "oauth2.googleapis.com"), http.StatusUnprocessableEntity)
		find(t, doc, "problem-sa-key")
	}

	doc = b.submit(t, "/console/secrets", form(key, "oauth2.googleapis.com, europe-west4-aiplatform.googleapis.com"), http.StatusOK)
	find(t, doc, "flash-ok")
	if got := text(find(t, find(t, doc, "secret-sa"), "secret-hosts")); !strings.Contains(got, "oauth2.googleapis.com") {
		t.Errorf("hosts %q", got)
	}
	if strings.Contains(string(b.Last), "SECRETBITS") {
		t.Error("the key is shown")
	}
}
