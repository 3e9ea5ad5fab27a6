package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func TestSecretsPage(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	b := h.login(t, tadmA)
	const value = "sk-TOP-SECRET-7f3a9c"
	const other = "sk-REFUSED-SECRET-b2d4"
	var bodies []string
	keep := func() { bodies = append(bodies, string(b.Last)) }

	doc := b.page(t, "/console/secrets", http.StatusOK)
	keep()
	find(t, doc, "secrets-empty")
	if in := find(t, doc, "input-value"); attr(in, "type") != "password" {
		t.Errorf("value input type %q", attr(in, "type"))
	}

	doc = b.submit(t, "/console/secrets", url.Values{"name": {"openai"}, "value": {value}, "hosts": {"api.openai.com, api2.openai.com:8443"}}, http.StatusOK)
	keep()
	find(t, doc, "flash-ok")
	row := find(t, doc, "secret-openai")
	if got := text(find(t, row, "secret-hosts")); got != "api.openai.com, api2.openai.com:8443" {
		t.Errorf("hosts %q", got)
	}
	if got := text(find(t, row, "secret-updated")); !strings.Contains(got, "UTC") || !strings.Contains(got, tadmA) {
		t.Errorf("set %q", got)
	}

	// Refused: problems inline, name and hosts kept, the value never sent
	// back.
	doc = b.submit(t, "/console/secrets", url.Values{"name": {"two"}, "value": {other}, "hosts": {"http://bad/path"}}, http.StatusUnprocessableEntity)
	keep()
	if got := text(find(t, doc, "problem-hosts")); !strings.Contains(got, "“http://bad/path”") {
		t.Errorf("hosts problem %q", got)
	}
	if v := attr(find(t, doc, "input-value"), "value"); v != "" {
		t.Errorf("value echoed back: %q", v)
	}
	if attr(find(t, doc, "input-name"), "value") != "two" || attr(find(t, doc, "input-hosts"), "value") != "http://bad/path" {
		t.Error("name or hosts not kept")
	}
	doc = b.submit(t, "/console/secrets", url.Values{"name": {"three"}, "value": {""}, "hosts": {""}}, http.StatusUnprocessableEntity)
	keep()
	find(t, doc, "problem-value")
	find(t, doc, "problem-hosts")

	// Replace, then delete.
	doc = b.submit(t, "/console/secrets", url.Values{"name": {"openai"}, "value": {value + "-2"}, "hosts": {"api.openai.com"}}, http.StatusOK)
	keep()
	if got := text(find(t, find(t, doc, "secret-openai"), "secret-hosts")); got != "api.openai.com" {
		t.Errorf("hosts after replace %q", got)
	}
	form := formOf(t, find(t, find(t, doc, "secret-openai"), "secret-delete"))
	doc = b.submit(t, attr(form, "action"), nil, http.StatusOK)
	keep()
	find(t, doc, "flash-ok")
	find(t, doc, "secrets-empty")

	// Read-only roles see names, never a form.
	cost := h.login(t, costA)
	doc = cost.page(t, "/console/secrets", http.StatusOK)
	bodies = append(bodies, string(cost.Last))
	find(t, doc, "secrets-readonly")
	if has(doc, "secret-set-form") {
		t.Error("a cost owner is offered the set form")
	}
	prov := h.login(t, padmA)
	doc = prov.page(t, "/console/secrets", http.StatusOK)
	find(t, doc, "secret-set-form")

	for i, body := range bodies {
		if strings.Contains(body, value) || strings.Contains(body, other) {
			t.Errorf("response %d holds a secret value", i)
		}
	}
	if strings.Contains(h.Logs.String(), value) || strings.Contains(h.Logs.String(), other) {
		t.Error("a secret value was logged")
	}
}
