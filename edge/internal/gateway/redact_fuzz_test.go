package gateway

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzRedact: whatever the body, no secret survives redaction, as written
// or inside a JSON string under any escaping.
func FuzzRedact(f *testing.F) {
	f.Add([]byte(`{"error":{"message":"key sk-abcd1234 refused"}}`), "sk-abcd1234", false)
	f.Add([]byte(`{"m":"\u0073k-abcd1234"}`), "sk-abcd1234", false)
	f.Add([]byte(`{"m":"sk-ab`), "sk-abcd1234", true)
	f.Add([]byte(`a/b+c%2F`), "a/b+c", false)
	f.Fuzz(func(t *testing.T, body []byte, secret string, truncated bool) {
		if len(secret) < 4 || strings.ContainsAny(secret, "[]redact\"\\") {
			return // secrets are long, and share nothing with the mark
		}
		out := redact(bytes.Clone(body), []string{secret}, truncated)
		if bytes.Contains(out, []byte(secret)) {
			t.Fatalf("%q still holds %q: %q", body, secret, out)
		}
		var v any
		if json.Unmarshal(out, &v) == nil {
			s, _ := json.Marshal(v)
			var dec any
			_ = json.Unmarshal(s, &dec)
			if strings.Contains(deepStrings(dec), secret) {
				t.Fatalf("%q decodes to a string holding %q: %q", body, secret, out)
			}
		}
	})
}

func deepStrings(v any) string {
	switch x := v.(type) {
	case string:
		return x + "\x00"
	case []any:
		var s string
		for _, e := range x {
			s += deepStrings(e)
		}
		return s
	case map[string]any:
		var s string
		for k, e := range x {
			s += k + "\x00" + deepStrings(e)
		}
		return s
	}
	return ""
}
