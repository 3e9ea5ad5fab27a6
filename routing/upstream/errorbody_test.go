package upstream

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The classifier's contract is tested through routing.ClassifyWith (routing's
// classify_test.go, on the provider answers of routing/testdata/errors);
// these tests pin what this package reads from a body on its own.

func TestParseErrorBody(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		want ErrorBody
	}{
		{
			name: "R-FAIL-3 OpenAI envelope",
			body: `{"error":{"message":"You exceeded your current quota.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`,
			want: ErrorBody{codes: []string{"insufficient_quota"}, types: []string{"insufficient_quota"}, messages: []string{"You exceeded your current quota."}},
		},
		{
			name: "R-FAIL-2 Anthropic envelope type is skipped",
			body: `{"type":"error","error":{"type":"rate_limit_error","message":"Rate limited"}}`,
			want: ErrorBody{types: []string{"rate_limit_error"}, messages: []string{"Rate limited"}},
		},
		{
			name: "R-FAIL-2 Google list with numeric code, quota id and retry delay",
			body: `[{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","details":[{"violations":[{"quotaId":"PerMinute"}]},{"retryDelay":"26s"}]}}]`,
			want: ErrorBody{codes: []string{"429"}, statuses: []string{"RESOURCE_EXHAUSTED"}, windows: []string{"PerMinute"}, retryDelay: "26s"},
		},
		{
			name: "R-FAIL-2 AWS __type",
			body: `{"__type":"com.amazonaws.bedrock#ThrottlingException","message":"Rate exceeded"}`,
			want: ErrorBody{awsTypes: []string{"com.amazonaws.bedrock#ThrottlingException"}, messages: []string{"Rate exceeded"}},
		},
		{
			name: "R-FAIL-3 text prefix before the JSON",
			body: `data: {"error":{"code":"insufficient_quota"}}`,
			want: ErrorBody{codes: []string{"insufficient_quota"}},
		},
		{
			name: "R-FAIL-3 truncated JSON keeps what came before the cut",
			body: `{"error":{"code":"insufficient_quota","message":"You exc`,
			want: ErrorBody{codes: []string{"insufficient_quota"}},
		},
		{
			name: "R-FAIL-3 plain text is one message",
			body: "  Quota exceeded for this key.\n",
			want: ErrorBody{messages: []string{"Quota exceeded for this key."}},
		},
		{name: "R-FAIL-8 empty body", body: " \n", want: ErrorBody{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := ParseErrorBody([]byte(tc.body))
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(ErrorBody{})); diff != "" {
				t.Errorf("ParseErrorBody mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAWSErrorType(t *testing.T) {
	t.Parallel()
	hdr := func(v string) http.Header { return http.Header{"X-Amzn-Errortype": {v}} }
	tests := []struct {
		name    string
		h       http.Header
		body    string
		bedrock bool
		want    string
	}{
		{"R-FAIL-2 header with URL suffix", hdr("ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/"), "", false, "ThrottlingException"},
		{"R-FAIL-2 header before body", hdr("ModelNotReadyException"), `{"__type":"ThrottlingException"}`, true, "ModelNotReadyException"},
		{"R-FAIL-2 body __type with namespace", nil, `{"__type":"com.amazonaws.bedrock#ThrottlingException"}`, false, "ThrottlingException"},
		{"R-FAIL-2 bedrock code ending in Exception", nil, `{"code":"ValidationException"}`, true, "ValidationException"},
		{"R-FAIL-8 code ending in Exception off bedrock", nil, `{"code":"ValidationException"}`, false, ""},
		{"R-FAIL-6 header that is not a token", hdr("sk-live-abc def"), "", true, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := ParseErrorBody([]byte(tc.body))
			if got := AWSErrorType(tc.h, &b, tc.bedrock); got != tc.want {
				t.Errorf("AWSErrorType = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRetryDelay(t *testing.T) {
	t.Parallel()
	tests := []struct {
		body   string
		want   time.Duration
		wantOK bool
	}{
		{`{"details":[{"retryDelay":"26s"}]}`, 26 * time.Second, true},
		{`{"details":[{"retryDelay":" 1.5s "}]}`, 1500 * time.Millisecond, true},
		{`{"details":[{"retryDelay":"soon"}]}`, 0, false},
		{`{"details":[{"retryDelay":"48h"}]}`, 0, false},
		{`{"error":{}}`, 0, false},
	}
	for _, tc := range tests {
		b := ParseErrorBody([]byte(tc.body))
		if got, ok := b.RetryDelay(); got != tc.want || ok != tc.wantOK {
			t.Errorf("R-FAIL-2 RetryDelay(%s) = %v, %v; want %v, %v", tc.body, got, ok, tc.want, tc.wantOK)
		}
	}
}

func TestIsToken(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"insufficient_quota": true, "value_error.missing": true, "DeploymentNotFound": true,
		"": false, "429": false, "_x": false, "a b": false, "sk-proj-123": false,
		strings.Repeat("a", 64): true, strings.Repeat("a", 65): false,
	} {
		if got := IsToken(s); got != want {
			t.Errorf("IsToken(%q) = %v, want %v", s, got, want)
		}
	}
}

// FuzzParseErrorBody checks the bounds of body reading on any input: at most
// 16 values of each kind, each at most 1024 bytes, a retry delay of at most
// 64 bytes, and only token reasons out of Reason and AWSErrorType.
func FuzzParseErrorBody(f *testing.F) {
	f.Add([]byte(`{"type":"error","error":{"type":"rate_limit_error","message":"Rate limited"}}`))
	f.Add([]byte(`[{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","details":[{"retryDelay":"26s"}]}}]`))
	f.Add([]byte(`data: {"__type":"a#ThrottlingException:x","code":"ValidationException"}`))
	f.Add([]byte(strings.Repeat(`{"code":"x",`, 100)))
	f.Fuzz(func(t *testing.T, body []byte) {
		b := ParseErrorBody(body)
		for _, list := range [][]string{b.codes, b.types, b.statuses, b.reasons, b.messages, b.windows, b.awsTypes} {
			if len(list) > maxPerField {
				t.Fatalf("%d values, want at most %d", len(list), maxPerField)
			}
			for _, s := range list {
				if len(s) > maxString {
					t.Fatalf("value of %d bytes", len(s))
				}
			}
		}
		if len(b.retryDelay) > 64 {
			t.Fatalf("retry delay of %d bytes", len(b.retryDelay))
		}
		if r := b.Reason(); r != "" && !IsToken(r) {
			t.Fatalf("Reason %q is not a token", r)
		}
		if a := AWSErrorType(nil, &b, true); a != "" && !IsToken(a) {
			t.Fatalf("AWSErrorType %q is not a token", a)
		}
		if d, ok := b.RetryDelay(); ok && (d < 0 || d > HintHorizon) {
			t.Fatalf("RetryDelay %v outside [0, %v]", d, HintHorizon)
		}
	})
}
