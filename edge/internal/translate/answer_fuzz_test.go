package translate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"weir.dev/routing"
)

var fuzzWires = []routing.WireFormat{routing.WireOpenAI, routing.WireAnthropic, routing.WireBedrock, routing.WireGemini}

var fuzzEndpoints = []routing.Endpoint{routing.EndpointChatCompletions, routing.EndpointResponses, routing.EndpointMessages, routing.EndpointEmbeddings}

// FuzzDecodeAnswer: any body in any member format decodes without panic;
// an answer that decodes encodes to every chat endpoint as valid JSON
// (R-FMT-2).
func FuzzDecodeAnswer(f *testing.F) {
	ins, _ := filepath.Glob(filepath.Join("testdata", "ans", "in", "*", "*.json"))
	for _, in := range ins {
		if b, err := os.ReadFile(in); err == nil {
			for i := range fuzzWires {
				f.Add(uint8(i), b)
			}
		}
	}
	f.Add(uint8(0), []byte(`{"choices":[{"message":{"tool_calls":[{"function":{"name":"f","arguments":"[1,"}}]}}]}`))
	f.Add(uint8(3), []byte(`{"candidates":[{"content":{"parts":[{"text":"a"},{"functionCall":{"name":"f","args":null}},{"text":"b","thought":true}]},"finishReason":"STOP"}]}`))
	f.Fuzz(func(t *testing.T, wi uint8, body []byte) {
		w := fuzzWires[int(wi)%len(fuzzWires)]
		a, err := DecodeAnswer(w, body)
		if err != nil {
			return
		}
		for _, ep := range []routing.Endpoint{routing.EndpointChatCompletions, routing.EndpointResponses, routing.EndpointMessages} {
			out, err := EncodeAnswer(ep, a, "model")
			if err != nil {
				t.Fatalf("%v answer %+v does not encode to %v: %v", w, a, ep, err)
			}
			if !json.Valid(out) {
				t.Fatalf("%v → %v: invalid JSON %s", w, ep, out)
			}
		}
	})
}

// FuzzErrorBody: whatever the member sent, the caller gets valid JSON of
// its own error shape, bounded in size (R-FMT-5).
func FuzzErrorBody(f *testing.F) {
	seeds := []string{
		`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
		`[{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}]`,
		`{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}`,
		`{"message":"The security token included in the request is invalid."}`,
		"<html>502</html>",
		"\xff\xfe\x00",
		`{"error":"plain"}`,
		``,
	}
	for i, s := range seeds {
		f.Add(uint8(i), uint8(i), 400+i*17, []byte(s))
	}
	f.Fuzz(func(t *testing.T, wi, ei uint8, status int, body []byte) {
		from := fuzzWires[int(wi)%len(fuzzWires)]
		to := fuzzEndpoints[int(ei)%len(fuzzEndpoints)]
		out := ErrorBody(from, to, status, body)
		if len(out) > 2*MaxErrorMessage+256 {
			t.Fatalf("%d bytes", len(out))
		}
		if to == routing.EndpointMessages {
			var e anthropicErr
			if err := json.Unmarshal(out, &e); err != nil || e.Type != "error" || e.Error == nil || e.Error.Type == "" || e.Error.Message == "" {
				t.Fatalf("not Anthropic's shape: %s (%v)", out, err)
			}
			return
		}
		var e openAIErr
		if err := json.Unmarshal(out, &e); err != nil || e.Error == nil || e.Error.Type == "" || e.Error.Message == "" {
			t.Fatalf("not OpenAI's shape: %s (%v)", out, err)
		}
	})
}
