package gateway_test

import (
	"encoding/json"
	"strings"
	"testing"

	"weir.dev/edge/internal/fakeprovider"
	configv1 "weir.dev/proto/gen/weir/config/v1"
)

func TestOneReadingOfTheBody(t *testing.T) {
	t.Parallel()
	openaiBodies := map[string]string{
		"model twice":               `{"model":"gpt-x","model":"pricey","messages":[]}`,
		"MODEL beside model":        `{"model":"gpt-x","MODEL":"pricey","messages":[]}`,
		"Model alone":               `{"Model":"gpt-x","messages":[]}`,
		"escaped model":             `{"mod\u0065l":"gpt-x","messages":[]}`,
		"escaped beside plain":      `{"model":"gpt-x","mod\u0065l":"pricey","messages":[]}`,
		"max_tokens twice":          `{"model":"gpt-x","max_tokens":1,"max_tokens":100000,"messages":[]}`,
		"MAX_TOKENS":                `{"model":"gpt-x","max_tokens":1,"MAX_TOKENS":100000,"messages":[]}`,
		"Kelvin sign in max_tokens": `{"model":"gpt-x","max_to\u212aens":100000,"messages":[]}`,
		"stream twice":              `{"model":"gpt-x","stream":false,"stream":true,"messages":[]}`,
		"Stream_Options":            `{"model":"gpt-x","Stream_Options":{"include_usage":true},"messages":[]}`,
		"include_usage twice":       `{"model":"gpt-x","stream":true,"stream_options":{"include_usage":true,"include_usage":false},"messages":[]}`,
		"max_completion_tokens esc": `{"model":"gpt-x","max_completion_tok\u0065ns":9,"messages":[]}`,
		"max_output_tokens case":    `{"model":"gpt-x","Max_Output_Tokens":9,"input":"x"}`,
	}
	for name, body := range openaiBodies {
		t.Run("R-SEC-5 OpenAI "+name+": 400 invalid_request", func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, pool(t, "a"))
			res := h.post("/v1/chat/completions", body)
			if res.status != 400 || res.header.Get("X-Weir-Error") != "invalid_request" || decodeErr(t, res.body).Error.Code != "invalid_request" {
				t.Fatalf("%d %s", res.status, res.body)
			}
			if h.fakes["a"].Total() != 0 {
				t.Fatal("the member was called")
			}
		})
	}
	t.Run("R-SEC-5 Anthropic MODEL beside model: 400 invalid_request_error", func(t *testing.T) {
		t.Parallel()
		sp := recordSpec{name: "claude", wire: configv1.WireFormat_WIRE_FORMAT_ANTHROPIC, models: []*configv1.Model{chatModel("claude-x")},
			members: []fakeMember{{name: "a", fake: newFake(t, fakeprovider.Options{})}}}
		h := newHarness(t, sp)
		for _, body := range []string{
			`{"model":"claude-x","MODEL":"pricey","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`,
			`{"model":"claude-x","max_tokens":10,"max_tokens":900000,"messages":[{"role":"user","content":"hi"}]}`,
			`{"model":"claude-x","m\u0061x_tokens":10,"messages":[{"role":"user","content":"hi"}]}`,
		} {
			res := h.post("/v1/messages", body)
			var e anthropicErr
			if err := json.Unmarshal(res.body, &e); err != nil || res.status != 400 || e.Error.Type != "invalid_request_error" ||
				!strings.HasPrefix(e.Error.Message, "invalid_request: ") {
				t.Fatalf("%s: %d %s", body, res.status, res.body)
			}
		}
		if h.fakes["a"].Total() != 0 {
			t.Fatal("the member was called")
		}
	})
	t.Run("R-SEC-5 the member receives the model that was checked", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, pool(t, "a"))
		body := `{"model":"gpt-x","Messages":[],"messages":[{"role":"user","content":"hi"}],"max_tokens":7}`
		if res := h.post("/v1/chat/completions", body); res.status != 200 {
			t.Fatalf("%d %s", res.status, res.body)
		}
		got, _ := h.fakes["a"].LastRequest()
		var m map[string]json.RawMessage
		if err := json.Unmarshal(got.Body, &m); err != nil || string(m["model"]) != `"gpt-x"` || string(m["max_tokens"]) != "7" {
			t.Fatalf("the member got %s", got.Body)
		}
		if rec := h.record(1); rec.Model != "gpt-x" {
			t.Fatalf("recorded model %q", rec.Model)
		}
	})
}
