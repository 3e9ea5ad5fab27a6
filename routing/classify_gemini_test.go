package routing

import (
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestClassifyGemini pins what the gemini wire reads differently from the
// others (R-FMT-8): the same Google body means a per-day rate limit on a
// gemini member and spent quota on an openai one; rate-limit headers are not
// read; retry-after beats RetryInfo.
func TestClassifyGemini(t *testing.T) {
	t.Parallel()
	at := func(d time.Duration) time.Time { return testNow.Add(d) }
	file := func(name string) errorExample {
		return loadErrorExample(t, filepath.Join("testdata", "errors", name))
	}
	perMinuteNoRetry := `{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"GenerateRequestsPerMinutePerProjectPerModel"}]}]}}`
	tests := []struct {
		name   string
		status int
		h      http.Header
		body   string
		file   string
		want   Verdict
	}{
		{
			name: "R-FMT-8 OpenAI-compatible daily body on a gemini member is a day quota", file: "gemini_quota_daily.txt",
			want: Verdict{Kind: KindRateLimited, Status: 429, Reason: "RESOURCE_EXHAUSTED", Until: at(41 * time.Second), DayQuota: true},
		},
		{
			name: "R-FMT-8 per-day quota_limit in ErrorInfo metadata is a day quota", file: "gemini_quota_metric_per_day.txt",
			want: Verdict{Kind: KindRateLimited, Status: 429, Reason: "RESOURCE_EXHAUSTED", DayQuota: true},
		},
		{
			name: "R-FMT-8 per-minute RetryInfo", file: "gemini_quota_per_minute.txt",
			want: Verdict{Kind: KindRateLimited, Status: 429, Reason: "RESOURCE_EXHAUSTED", Until: at(26 * time.Second)},
		},
		{
			name: "R-FMT-8 RESOURCE_EXHAUSTED naming no quota is busy", file: "gemini_resource_exhausted_generic.txt",
			want: Verdict{Kind: KindServerError, Status: 429, Reason: "RESOURCE_EXHAUSTED"},
		},
		{
			name: "R-FMT-8 rate-limit headers are not read", status: 429,
			h: headersOf(
				"x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "45s",
				"anthropic-ratelimit-requests-remaining", "0", "anthropic-ratelimit-requests-reset", "2025-06-01T12:00:30Z",
			),
			body: perMinuteNoRetry,
			want: Verdict{Kind: KindRateLimited, Status: 429, Reason: "RESOURCE_EXHAUSTED"},
		},
		{
			name: "R-FMT-8 retry-after beats RetryInfo", status: 429, h: headersOf("retry-after", "90"),
			body: `{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","message":"Quota exceeded.","details":[{"violations":[{"quotaId":"RequestsPerMinute"}]},{"retryDelay":"5s"}]}}`,
			want: Verdict{Kind: KindRateLimited, Status: 429, Reason: "RESOURCE_EXHAUSTED", Until: at(90 * time.Second)},
		},
		{
			name: "R-FMT-8 RetryInfo beyond the horizon is not named", status: 429,
			body: `{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","details":[{"violations":[{"quotaId":"RequestsPerMinute"}]},{"retryDelay":"99999999s"}]}}`,
			want: Verdict{Kind: KindRateLimited, Status: 429, Reason: "RESOURCE_EXHAUSTED"},
		},
		{
			name: "R-FMT-8 a per-month quota is spent", status: 429,
			body: `{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","message":"Quota exceeded.","details":[{"violations":[{"quotaId":"TokensPerMonthPerProject"}]}]}}`,
			want: Verdict{Kind: KindQuotaSpent, Status: 429, Reason: "RESOURCE_EXHAUSTED", AccountWide: true},
		},
		{
			name: "R-FMT-8 busy 429 keeps a RetryInfo wait", status: 429,
			body: `{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","message":"Resource exhausted.","details":[{"retryDelay":"2.5s"}]}}`,
			want: Verdict{Kind: KindServerError, Status: 429, Reason: "RESOURCE_EXHAUSTED", Until: at(2500 * time.Millisecond)},
		},
		{
			name: "R-FMT-8 400 echoing billing words under INVALID_ARGUMENT is the request's own", status: 400,
			body: `{"error":{"code":400,"status":"INVALID_ARGUMENT","message":"Your prepayment credits are depleted: please check your plan and billing details"}}`,
			want: Verdict{Kind: KindClientError, Status: 400, Reason: "INVALID_ARGUMENT"},
		},
		{
			name: "R-FMT-8 an OpenAI-shaped quota code is not read on a gemini member", status: 400,
			body: `{"error":{"code":"insufficient_quota","message":"You exceeded your current quota"}}`,
			want: Verdict{Kind: KindClientError, Status: 400, Reason: "insufficient_quota"},
		},
		{
			name: "R-FMT-8 AWS error types are not read on a gemini member", status: 400,
			h:    headersOf("x-amzn-ErrorType", "ThrottlingException"),
			want: Verdict{Kind: KindClientError, Status: 400, Reason: "http_400"},
		},
		{
			name: "R-FMT-8 truncated body still finds the quota id", status: 429,
			body: `{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","details":[{"violations":[{"quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier","quotaVal`,
			want: Verdict{Kind: KindRateLimited, Status: 429, Reason: "RESOURCE_EXHAUSTED", DayQuota: true},
		},
		{
			name: "R-FAIL-1 2xx on a gemini member", status: 200, body: `{"error":{"status":"RESOURCE_EXHAUSTED"}}`,
			want: Verdict{Kind: KindAnswered, Status: 200, Reason: "http_200"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			status, h, body := tc.status, tc.h, []byte(tc.body)
			if tc.file != "" {
				ex := file(tc.file)
				status, h, body = ex.status, ex.header, ex.body
			}
			got := Classify(WireGemini, status, h, body, testNow)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Classify mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
