package gateway_test

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	"weir.dev/edge/internal/fakeprovider"
)

func TestPassThroughRedactsSecrets(t *testing.T) {
	t.Parallel()
	escaped := strings.ReplaceAll(providerKey, "s", `\u0073`) // "\u0073k-provider-\u0073ecret-value"
	cases := []struct {
		name, body string
		status     int
	}{
		{"R-SEC-6 R-END-5 a 401 echoing the key", `{"error":{"message":"Incorrect API key provided: ` + providerKey + `. You can find your API key at https://example.invalid.","type":"invalid_request_error","code":"invalid_api_key"}}`, 401},
		{"R-SEC-6 R-END-5 a 401 echoing the bearer header and a JSON-escaped key", `{"error":{"message":"header Bearer ` + providerKey + ` refused; key ` + escaped + `","code":"invalid_api_key"}}`, 401},
		{"R-SEC-6 R-END-2 a spent 429 echoing the key", `{"error":{"message":"You exceeded your current quota for key ` + providerKey + `","type":"insufficient_quota","code":"insufficient_quota"}}`, 429},
		{"R-SEC-6 R-FAIL-8 a 400 echoing the key", `{"error":{"message":"bad request from ` + providerKey + `","type":"invalid_request_error","code":"bad_param"}}`, 400},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, pool(t, "a"))
			h.fakes["a"].Enqueue(fakeprovider.Custom(tc.status, nil, tc.body))
			res := h.post("/v1/chat/completions", chatBody)
			if res.status != tc.status || res.header.Get("X-Weir-Error") != "" {
				t.Fatalf("not passed on as is: %d %v %s", res.status, res.header, res.body)
			}
			body := string(res.body)
			if strings.Contains(body, providerKey) || strings.Contains(body, escaped) || strings.Contains(body, "provider-secret") || !strings.Contains(body, "[redacted]") {
				t.Fatalf("the caller got %s", body)
			}
			rec, err := protojson.Marshal(h.record(1).CallRecord)
			if err != nil || strings.Contains(string(rec), "provider-secret") {
				t.Fatalf("the record carries the key: %s", rec)
			}
		})
	}
}
