package routing

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"weir.dev/routing/upstream"
)

// errorExample is one file of testdata/errors: a status line and headers, a
// blank line, then the body.
type errorExample struct {
	file        string
	status      int
	header      http.Header
	headerBlock string
	body        []byte
}

// loadErrorExample reads one example file.
func loadErrorExample(tb testing.TB, path string) errorExample {
	tb.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	raw = bytes.ReplaceAll(raw, []byte("\r\n"), []byte("\n"))
	head, body, _ := bytes.Cut(raw, []byte("\n\n"))
	lines := strings.Split(string(head), "\n")
	fields := strings.Fields(lines[0])
	if len(fields) < 2 || !strings.HasPrefix(fields[0], "HTTP/") {
		tb.Fatalf("%s: bad status line %q", path, lines[0])
	}
	status, err := strconv.Atoi(fields[1])
	if err != nil {
		tb.Fatalf("%s: bad status %q", path, fields[1])
	}
	h := http.Header{}
	for _, l := range lines[1:] {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			tb.Fatalf("%s: bad header line %q", path, l)
		}
		h.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	return errorExample{
		file:        filepath.Base(path),
		status:      status,
		header:      h,
		headerBlock: strings.Join(lines[1:], "\n"),
		body:        body,
	}
}

// errorExamples loads every file of testdata/errors.
func errorExamples(tb testing.TB) []errorExample {
	tb.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "errors", "*.txt"))
	if err != nil {
		tb.Fatal(err)
	}
	out := make([]errorExample, 0, len(paths))
	for _, p := range paths {
		out = append(out, loadErrorExample(tb, p))
	}
	return out
}

// noUntil marks an expectation of a zero Until.
const noUntil = time.Duration(-1)

// exampleExpect is the expected verdict of one example file.
type exampleExpect struct {
	rule        string
	wire        WireFormat
	kind        FailureKind
	accountWide bool
	reason      string
	until       time.Duration // from now; noUntil for zero
}

// exampleExpectations covers every file of testdata/errors. The shapes are
// modelled on real provider answers (see the report of the change that
// added them); messages are shortened or paraphrased.
var exampleExpectations = map[string]exampleExpect{
	// OpenAI.
	"openai_insufficient_quota.txt":           {"R-FAIL-3", WireOpenAI, KindQuotaSpent, true, "insufficient_quota", noUntil},
	"openai_insufficient_quota_null_code.txt": {"R-FAIL-3", WireOpenAI, KindQuotaSpent, true, "insufficient_quota", noUntil},
	"openai_insufficient_quota_truncated.txt": {"R-FAIL-3", WireOpenAI, KindQuotaSpent, true, "insufficient_quota", noUntil},
	"openai_billing_hard_limit.txt":           {"R-FAIL-3", WireOpenAI, KindQuotaSpent, true, "billing_hard_limit_reached", noUntil},
	"openai_billing_not_active.txt":           {"R-FAIL-3", WireOpenAI, KindQuotaSpent, true, "billing_not_active", noUntil},
	"openai_rate_limit_tokens.txt":            {"R-FAIL-2", WireOpenAI, KindRateLimited, false, "rate_limit_exceeded", 18642 * time.Millisecond},
	"openai_rate_limit_mentions_billing.txt":  {"R-FAIL-2", WireOpenAI, KindRateLimited, false, "rate_limit_exceeded", 20 * time.Second},
	"openai_rate_limit_retry_after_ms.txt":    {"R-FAIL-2", WireOpenAI, KindRateLimited, false, "rate_limit_exceeded", 1500 * time.Millisecond},
	"openai_invalid_api_key.txt":              {"R-FAIL-6", WireOpenAI, KindKeyRefused, false, "invalid_api_key", noUntil},
	"openai_context_length.txt":               {"R-FAIL-8", WireOpenAI, KindClientError, false, "context_length_exceeded", noUntil},
	"openai_server_error_500.txt":             {"R-FAIL-4", WireOpenAI, KindServerError, false, "server_error", noUntil},
	"openai_overloaded_503_retry_after.txt":   {"R-FAIL-4", WireOpenAI, KindServerError, false, "server_error", 7 * time.Second},
	"openai_bad_gateway_502_html.txt":         {"R-FAIL-7", WireOpenAI, KindUnknownOutcome, false, "http_502", noUntil},
	"openai_gateway_timeout_504_empty.txt":    {"R-FAIL-7", WireOpenAI, KindUnknownOutcome, false, "http_504", noUntil},
	// Azure OpenAI: "pricing tier" and "quotaincrease" are rate limits.
	"azure_rate_limit_token.txt":           {"R-FAIL-2", WireOpenAI, KindRateLimited, false, "http_429", 6 * time.Second},
	"azure_rate_limit_no_retry_header.txt": {"R-FAIL-2", WireOpenAI, KindRateLimited, false, "http_429", noUntil},
	"azure_rate_limit_86400.txt":           {"R-FAIL-2", WireOpenAI, KindRateLimited, false, "http_429", HintHorizon},
	"azure_content_filter.txt":             {"R-FAIL-8", WireOpenAI, KindClientError, false, "content_filter", noUntil},
	"azure_deployment_not_found.txt":       {"R-FAIL-6", WireOpenAI, KindKeyRefused, false, "DeploymentNotFound", noUntil},
	"azure_access_denied_401.txt":          {"R-FAIL-6", WireOpenAI, KindKeyRefused, false, "http_401", noUntil},
	// Anthropic.
	"anthropic_credit_balance.txt":           {"R-FAIL-3", WireAnthropic, KindQuotaSpent, true, "credit_balance_too_low", noUntil},
	"anthropic_usage_limits.txt":             {"R-FAIL-3", WireAnthropic, KindQuotaSpent, true, "usage_limit_reached", noUntil},
	"anthropic_billing_error_402.txt":        {"R-FAIL-3", WireAnthropic, KindQuotaSpent, true, "billing_error", noUntil},
	"anthropic_rate_limit_headers.txt":       {"R-FAIL-2", WireAnthropic, KindRateLimited, false, "rate_limit_error", 40 * time.Second},
	"anthropic_rate_limit_retry_after.txt":   {"R-FAIL-2", WireAnthropic, KindRateLimited, false, "rate_limit_error", 12 * time.Second},
	"anthropic_overloaded_529.txt":           {"R-FAIL-4", WireAnthropic, KindServerError, false, "overloaded_error", noUntil},
	"anthropic_api_error_500.txt":            {"R-FAIL-4", WireAnthropic, KindServerError, false, "api_error", noUntil},
	"anthropic_authentication_401.txt":       {"R-FAIL-6", WireAnthropic, KindKeyRefused, false, "authentication_error", noUntil},
	"anthropic_permission_403.txt":           {"R-FAIL-6", WireAnthropic, KindKeyRefused, false, "permission_error", noUntil},
	"anthropic_not_found_404.txt":            {"R-FAIL-6", WireAnthropic, KindKeyRefused, false, "not_found_error", noUntil},
	"anthropic_request_too_large_413.txt":    {"R-FAIL-8", WireAnthropic, KindClientError, false, "request_too_large", noUntil},
	"anthropic_invalid_request_echo.txt":     {"R-FAIL-8", WireAnthropic, KindClientError, false, "invalid_request_error", noUntil},
	"anthropic_openai_compat_rate_limit.txt": {"R-FAIL-2", WireOpenAI, KindRateLimited, false, "rate_limit_error", noUntil},
	// Bedrock.
	"bedrock_throttling.txt":                {"R-FAIL-2", WireBedrock, KindRateLimited, false, "ThrottlingException", noUntil},
	"bedrock_throttling_body_type.txt":      {"R-FAIL-2", WireBedrock, KindRateLimited, false, "ThrottlingException", 3 * time.Second},
	"bedrock_model_not_ready.txt":           {"R-FAIL-2", WireBedrock, KindRateLimited, false, "ModelNotReadyException", noUntil},
	"bedrock_service_quota.txt":             {"R-ORDER-4", WireBedrock, KindRateLimited, true, "ServiceQuotaExceededException", noUntil},
	"bedrock_access_denied_payment.txt":     {"R-FAIL-3", WireBedrock, KindQuotaSpent, true, "AccessDeniedException", noUntil},
	"bedrock_access_denied_marketplace.txt": {"R-FAIL-6", WireBedrock, KindKeyRefused, false, "AccessDeniedException", noUntil},
	"bedrock_validation.txt":                {"R-FAIL-8", WireBedrock, KindClientError, false, "ValidationException", noUntil},
	"bedrock_service_unavailable.txt":       {"R-FAIL-4", WireBedrock, KindServerError, false, "ServiceUnavailableException", noUntil},
	"bedrock_model_timeout_408.txt":         {"R-FAIL-8", WireBedrock, KindClientError, false, "ModelTimeoutException", noUntil},
	// Gemini (OpenAI-compatible endpoint and native shapes).
	"gemini_quota_daily.txt":                {"R-FAIL-3", WireOpenAI, KindQuotaSpent, true, "RESOURCE_EXHAUSTED", noUntil},
	"gemini_quota_per_minute.txt":           {"R-FAIL-2", WireOpenAI, KindRateLimited, false, "RESOURCE_EXHAUSTED", 26 * time.Second},
	"gemini_resource_exhausted_generic.txt": {"R-FAIL-2", WireOpenAI, KindRateLimited, false, "RESOURCE_EXHAUSTED", noUntil},
	"gemini_quota_metric_per_day.txt":       {"R-FAIL-3", WireOpenAI, KindQuotaSpent, true, "RESOURCE_EXHAUSTED", noUntil},
	// Gemini API and Vertex AI members (wire gemini): each answer read by
	// Google's own error shape (R-FMT-8). The per-day ones also carry
	// DayQuota (dayQuotaExamples).
	"gemini_native_per_minute.txt":              {"R-FMT-8", WireGemini, KindRateLimited, false, "RESOURCE_EXHAUSTED", 26 * time.Second},
	"gemini_native_per_minute_no_retry.txt":     {"R-FMT-8", WireGemini, KindRateLimited, false, "RESOURCE_EXHAUSTED", noUntil},
	"gemini_native_per_day.txt":                 {"R-FMT-8", WireGemini, KindRateLimited, false, "RESOURCE_EXHAUSTED", 41 * time.Second},
	"gemini_native_minute_and_day.txt":          {"R-FMT-8", WireGemini, KindRateLimited, false, "RESOURCE_EXHAUSTED", 7 * time.Second},
	"gemini_native_billing_quota.txt":           {"R-FMT-8", WireGemini, KindQuotaSpent, true, "RESOURCE_EXHAUSTED", noUntil},
	"gemini_native_prepayment.txt":              {"R-FMT-8", WireGemini, KindQuotaSpent, true, "RESOURCE_EXHAUSTED", noUntil},
	"gemini_native_resource_exhausted_bare.txt": {"R-FMT-8", WireGemini, KindServerError, false, "RESOURCE_EXHAUSTED", noUntil},
	"vertex_resource_exhausted_shared.txt":      {"R-FMT-8", WireGemini, KindServerError, false, "RESOURCE_EXHAUSTED", noUntil},
	"gemini_native_429_empty.txt":               {"R-FMT-8", WireGemini, KindServerError, false, "http_429", 3 * time.Second},
	"gemini_native_unavailable_503.txt":         {"R-FMT-8", WireGemini, KindServerError, false, "UNAVAILABLE", noUntil},
	"gemini_native_internal_500.txt":            {"R-FMT-8", WireGemini, KindServerError, false, "INTERNAL", noUntil},
	"gemini_native_deadline_504.txt":            {"R-FMT-8", WireGemini, KindUnknownOutcome, false, "DEADLINE_EXCEEDED", noUntil},
	"gemini_native_api_key_invalid.txt":         {"R-FMT-8", WireGemini, KindKeyRefused, false, "API_KEY_INVALID", noUntil},
	"gemini_native_permission_denied.txt":       {"R-FMT-8", WireGemini, KindKeyRefused, false, "PERMISSION_DENIED", noUntil},
	"vertex_iam_permission_denied.txt":          {"R-FMT-8", WireGemini, KindKeyRefused, false, "IAM_PERMISSION_DENIED", noUntil},
	"vertex_unauthenticated_401.txt":            {"R-FMT-8", WireGemini, KindKeyRefused, false, "ACCESS_TOKEN_EXPIRED", noUntil},
	"vertex_billing_disabled_403.txt":           {"R-FMT-8", WireGemini, KindQuotaSpent, true, "BILLING_DISABLED", noUntil},
	"gemini_native_free_tier_region_400.txt":    {"R-FMT-8", WireGemini, KindQuotaSpent, true, "BILLING_DISABLED", noUntil},
	"gemini_native_invalid_argument.txt":        {"R-FMT-8", WireGemini, KindClientError, false, "INVALID_ARGUMENT", noUntil},
	"gemini_native_invalid_argument_echo.txt":   {"R-FMT-8", WireGemini, KindClientError, false, "INVALID_ARGUMENT", noUntil},
	"gemini_native_model_not_found_404.txt":     {"R-FMT-8", WireGemini, KindKeyRefused, false, "NOT_FOUND", noUntil},
}

// dayQuotaExamples are the files whose verdict names a per-day quota
// (Verdict.DayQuota, R-HEAD-6, R-FMT-8).
var dayQuotaExamples = map[string]bool{
	"gemini_native_per_day.txt":        true,
	"gemini_native_minute_and_day.txt": true,
}

func wantVerdict(status int, e exampleExpect) Verdict {
	v := Verdict{Kind: e.kind, Status: status, AccountWide: e.accountWide, Reason: e.reason}
	if e.until != noUntil {
		v.Until = testNow.Add(e.until)
	}
	return v
}

func TestClassifyExamples(t *testing.T) {
	t.Parallel()
	examples := errorExamples(t)
	seen := map[string]bool{}
	for _, ex := range examples {
		seen[ex.file] = true
		exp, ok := exampleExpectations[ex.file]
		if !ok {
			t.Errorf("%s has no expectation in exampleExpectations", ex.file)
			continue
		}
		t.Run(exp.rule+" "+strings.TrimSuffix(ex.file, ".txt"), func(t *testing.T) {
			t.Parallel()
			got := Classify(exp.wire, ex.status, ex.header, ex.body, testNow)
			want := wantVerdict(ex.status, exp)
			want.DayQuota = dayQuotaExamples[ex.file]
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Classify(%s) mismatch (-want +got):\n%s", ex.file, diff)
			}
		})
	}
	for f := range exampleExpectations {
		if !seen[f] {
			t.Errorf("expectation for missing file testdata/errors/%s", f)
		}
	}
}

func TestClassify(t *testing.T) {
	t.Parallel()
	at := func(d time.Duration) time.Time { return testNow.Add(d) }
	quotaBody := `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`
	tests := []struct {
		name   string
		wire   WireFormat
		status int
		h      http.Header
		body   string
		custom map[string]string
		want   Verdict
	}{
		{
			name: "R-FAIL-1 200", wire: WireOpenAI, status: 200,
			want: Verdict{Kind: KindAnswered, Status: 200, Reason: "http_200"},
		},
		{
			name: "R-FAIL-1 2xx body is never read", wire: WireOpenAI, status: 201,
			h: headersOf("retry-after", "30"), body: quotaBody,
			want: Verdict{Kind: KindAnswered, Status: 201, Reason: "http_201"},
		},
		{
			name: "R-FAIL-2 429 retry-after-ms", wire: WireOpenAI, status: 429,
			h:    headersOf("retry-after-ms", "250", "retry-after", "1"),
			want: Verdict{Kind: KindRateLimited, Status: 429, Until: at(250 * time.Millisecond), Reason: "http_429"},
		},
		{
			name: "R-FAIL-2 429 retry-after HTTP date", wire: WireAnthropic, status: 429,
			h:    headersOf("retry-after", "Sun, 01 Jun 2025 12:00:09 GMT"),
			body: `{"type":"error","error":{"type":"rate_limit_error","message":"Rate limited"}}`,
			want: Verdict{Kind: KindRateLimited, Status: 429, Until: at(9 * time.Second), Reason: "rate_limit_error"},
		},
		{
			name: "R-FAIL-2 429 nothing named", wire: WireOpenAI, status: 429,
			want: Verdict{Kind: KindRateLimited, Status: 429, Reason: "http_429"},
		},
		{
			name: "R-FAIL-2 429 negative retry-after is not named", wire: WireOpenAI, status: 429,
			h:    headersOf("retry-after", "-30"),
			want: Verdict{Kind: KindRateLimited, Status: 429, Reason: "http_429"},
		},
		{
			name: "R-FAIL-2 429 latest reset among spent dimensions", wire: WireOpenAI, status: 429,
			h: headersOf(
				"x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "2s",
				"x-ratelimit-remaining-tokens", "0", "x-ratelimit-reset-tokens", "45s",
			),
			want: Verdict{Kind: KindRateLimited, Status: 429, Until: at(45 * time.Second), Reason: "http_429"},
		},
		{
			name: "R-FAIL-2 429 reset of a dimension not spent is not named", wire: WireOpenAI, status: 429,
			h:    headersOf("x-ratelimit-remaining-tokens", "10", "x-ratelimit-reset-tokens", "45s"),
			want: Verdict{Kind: KindRateLimited, Status: 429, Reason: "http_429"},
		},
		{
			name: "R-FAIL-2 429 record-declared rate-limit headers", wire: WireOpenAI, status: 429,
			h:      headersOf("x-vendor-left", "0", "x-vendor-reset", "1748779215"),
			custom: map[string]string{"tokens-remaining": "x-vendor-left", "tokens-reset": "x-vendor-reset"},
			want:   Verdict{Kind: KindRateLimited, Status: 429, Until: at(15 * time.Second), Reason: "http_429"},
		},
		{
			name: "R-FAIL-2 bedrock ThrottlingException from header with empty body", wire: WireBedrock, status: 429,
			h:    headersOf("x-amzn-ErrorType", "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/"),
			want: Verdict{Kind: KindRateLimited, Status: 429, Reason: "ThrottlingException"},
		},
		{
			name: "R-FAIL-2 bedrock ThrottlingException wins over the status", wire: WireBedrock, status: 400,
			body: `{"__type":"com.amazonaws.bedrock#ThrottlingException","message":"Rate exceeded"}`,
			want: Verdict{Kind: KindRateLimited, Status: 400, Reason: "ThrottlingException"},
		},
		{
			name: "R-ORDER-4 bedrock ServiceQuotaExceededException is account-wide", wire: WireBedrock, status: 400,
			h:    headersOf("x-amzn-ErrorType", "ServiceQuotaExceededException", "retry-after", "4"),
			body: `{"message":"Your request exceeds the service quota for your account."}`,
			want: Verdict{Kind: KindRateLimited, Status: 400, Until: at(4 * time.Second), AccountWide: true, Reason: "ServiceQuotaExceededException"},
		},
		{
			name: "R-FAIL-3 anthropic credit balance as 400", wire: WireAnthropic, status: 400,
			body: `{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API."}}`,
			want: Verdict{Kind: KindQuotaSpent, Status: 400, AccountWide: true, Reason: "credit_balance_too_low"},
		},
		{
			name: "R-FAIL-3 insufficient_quota as 403", wire: WireOpenAI, status: 403, body: quotaBody,
			want: Verdict{Kind: KindQuotaSpent, Status: 403, AccountWide: true, Reason: "insufficient_quota"},
		},
		{
			name: "R-FAIL-3 402 without body", wire: WireOpenAI, status: 402,
			want: Verdict{Kind: KindQuotaSpent, Status: 402, AccountWide: true, Reason: "http_402"},
		},
		{
			name: "R-FAIL-3 402 insufficient balance text", wire: WireOpenAI, status: 402,
			body: `{"error":{"message":"Insufficient Balance","type":"unknown_error","param":null,"code":"invalid_request_error"}}`,
			want: Verdict{Kind: KindQuotaSpent, Status: 402, AccountWide: true, Reason: "insufficient_balance"},
		},
		{
			name: "R-FAIL-3 429 plain text quota exceeded", wire: WireOpenAI, status: 429,
			body: "Quota exceeded for this key.",
			want: Verdict{Kind: KindQuotaSpent, Status: 429, AccountWide: true, Reason: "quota_exceeded"},
		},
		{
			name: "R-FAIL-3 429 weak billing word", wire: WireOpenAI, status: 429,
			body: `{"error":{"message":"Monthly billing cap of this project reached."}}`,
			want: Verdict{Kind: KindQuotaSpent, Status: 429, AccountWide: true, Reason: "billing"},
		},
		{
			name: "R-FAIL-3 429 weak billing word in a rate-limit message is not spent", wire: WireOpenAI, status: 429,
			body: `{"error":{"message":"Rate limit reached; add billing details to raise it."}}`,
			want: Verdict{Kind: KindRateLimited, Status: 429, Reason: "http_429"},
		},
		{
			name: "R-FAIL-3 400 weak billing word is not spent", wire: WireOpenAI, status: 400,
			body: `{"error":{"message":"Unknown parameter: 'billing'.","type":"invalid_request_error","code":"unknown_parameter"}}`,
			want: Verdict{Kind: KindClientError, Status: 400, Reason: "unknown_parameter"},
		},
		{
			name: "R-FAIL-3 400 echoed quota phrase not at the start is not spent", wire: WireOpenAI, status: 400,
			body: `{"error":{"message":"Invalid value: 'You exceeded your current quota'. Supported values are: 'auto'.","type":"invalid_request_error","code":"invalid_value"}}`,
			want: Verdict{Kind: KindClientError, Status: 400, Reason: "invalid_value"},
		},
		{
			name: "R-FAIL-3 spent with retry-after", wire: WireOpenAI, status: 429, body: quotaBody,
			h:    headersOf("retry-after", "3600"),
			want: Verdict{Kind: KindQuotaSpent, Status: 429, Until: at(time.Hour), AccountWide: true, Reason: "insufficient_quota"},
		},
		{
			name: "R-FAIL-3 bedrock any 4xx reads the body", wire: WireBedrock, status: 424,
			body: `{"message":"Quota exceeded for the monthly token budget."}`,
			want: Verdict{Kind: KindQuotaSpent, Status: 424, AccountWide: true, Reason: "quota_exceeded"},
		},
		{
			name: "R-FAIL-3 azure pricing-tier rate limit is not quota", wire: WireOpenAI, status: 429,
			body: `{"error":{"code":"429","message":"Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-10-21 have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 6 seconds. Please go here: https://aka.ms/oai/quotaincrease if you would like to further increase the default rate limit."}}`,
			want: Verdict{Kind: KindRateLimited, Status: 429, Reason: "http_429"},
		},
		{
			name: "R-FAIL-2 google per-minute quota message is a rate limit", wire: WireOpenAI, status: 429,
			body: `{"error":{"code":429,"message":"Quota exceeded for quota metric 'Generate Content API requests per minute' and limit 'GenerateContent request limit per minute for a region'.","status":"RESOURCE_EXHAUSTED"}}`,
			want: Verdict{Kind: KindRateLimited, Status: 429, Reason: "RESOURCE_EXHAUSTED"},
		},
		{
			name: "R-FAIL-3 only the first MaxErrorPeek bytes are read", wire: WireOpenAI, status: 429,
			body: `{"pad":"` + strings.Repeat("x", MaxErrorPeek) + `","error":{"code":"insufficient_quota"}}`,
			want: Verdict{Kind: KindRateLimited, Status: 429, Reason: "http_429"},
		},
		{
			name: "R-FAIL-3 quota body under a 5xx is a server error", wire: WireOpenAI, status: 500, body: quotaBody,
			want: Verdict{Kind: KindServerError, Status: 500, Reason: "insufficient_quota"},
		},
		{
			name: "R-FAIL-4 529 overloaded", wire: WireAnthropic, status: 529,
			body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
			want: Verdict{Kind: KindServerError, Status: 529, Reason: "overloaded_error"},
		},
		{
			name: "R-FAIL-4 503 names a longer wait", wire: WireOpenAI, status: 503,
			h:    headersOf("retry-after", "30"),
			want: Verdict{Kind: KindServerError, Status: 503, Until: at(30 * time.Second), Reason: "http_503"},
		},
		{
			name: "R-FAIL-4 302 from a misbehaving upstream", wire: WireOpenAI, status: 302,
			h:    headersOf("location", "https://example.invalid/login"),
			want: Verdict{Kind: KindServerError, Status: 302, Reason: "http_302"},
		},
		{
			name: "R-FAIL-6 401", wire: WireAnthropic, status: 401,
			want: Verdict{Kind: KindKeyRefused, Status: 401, Reason: "http_401"},
		},
		{
			name: "R-FAIL-6 403 not quota", wire: WireOpenAI, status: 403,
			body: `{"error":{"code":"unsupported_country_region_territory","message":"Country, region, or territory not supported","param":null,"type":"request_forbidden"}}`,
			want: Verdict{Kind: KindKeyRefused, Status: 403, Reason: "unsupported_country_region_territory"},
		},
		{
			name: "R-FAIL-6 404 no such deployment", wire: WireOpenAI, status: 404,
			body: `{"error":{"code":"DeploymentNotFound","message":"The API deployment for this resource does not exist."}}`,
			want: Verdict{Kind: KindKeyRefused, Status: 404, Reason: "DeploymentNotFound"},
		},
		{
			name: "R-FAIL-6 reason never copies secrets or header values", wire: WireOpenAI, status: 401,
			h:    headersOf("x-amzn-ErrorType", "sk-live-abc def", "www-authenticate", "Bearer realm=secret"),
			body: `{"error":{"code":"sk-proj-123 leaked","type":"Incorrect API key provided: sk-proj-123"}}`,
			want: Verdict{Kind: KindKeyRefused, Status: 401, Reason: "http_401"},
		},
		{
			name: "R-FAIL-7 502", wire: WireOpenAI, status: 502, body: "<html>bad gateway</html>",
			want: Verdict{Kind: KindUnknownOutcome, Status: 502, Reason: "http_502"},
		},
		{
			name: "R-FAIL-7 504 ignores retry-after", wire: WireAnthropic, status: 504,
			h:    headersOf("retry-after", "10"),
			want: Verdict{Kind: KindUnknownOutcome, Status: 504, Reason: "http_504"},
		},
		{
			name: "R-FAIL-8 422", wire: WireOpenAI, status: 422,
			body: `{"detail":[{"loc":["body","messages"],"msg":"field required","type":"value_error.missing"}]}`,
			want: Verdict{Kind: KindClientError, Status: 422, Reason: "value_error.missing"},
		},
		{
			name: "R-FAIL-8 409", wire: WireAnthropic, status: 409,
			want: Verdict{Kind: KindClientError, Status: 409, Reason: "http_409"},
		},
		{
			name: "R-FAIL-8 400 garbage body", wire: WireOpenAI, status: 400, body: "\x00\xff{{{[[",
			want: Verdict{Kind: KindClientError, Status: 400, Reason: "http_400"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := ClassifyWith(tc.wire, tc.status, tc.h, []byte(tc.body), tc.custom, testNow)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ClassifyWith mismatch (-want +got):\n%s", diff)
			}
			if tc.custom == nil {
				if plain := Classify(tc.wire, tc.status, tc.h, []byte(tc.body), testNow); plain != got {
					t.Errorf("Classify = %+v, ClassifyWith(nil) = %+v", plain, got)
				}
			}
		})
	}
}

func TestTransportAndTimeoutVerdicts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		got  Verdict
		want Verdict
	}{
		{"R-FAIL-5 transport token kept", TransportVerdict("dns"), Verdict{Kind: KindTransport, Reason: "dns"}},
		{"R-FAIL-5 transport ssrf guard", TransportVerdict("ssrf_blocked"), Verdict{Kind: KindTransport, Reason: "ssrf_blocked"}},
		{"R-FAIL-5 transport empty reason", TransportVerdict(""), Verdict{Kind: KindTransport, Reason: "transport"}},
		{"R-FAIL-5 transport error text reduced", TransportVerdict("dial tcp: i/o timeout"), Verdict{Kind: KindTransport, Reason: "dial_tcp_i_o_timeout"}},
		{"R-FAIL-5 transport reason starting with a digit", TransportVerdict("503 reset"), Verdict{Kind: KindTransport, Reason: "transport_503_reset"}},
		{"R-FAIL-5 transport reason bounded", TransportVerdict(strings.Repeat("a", 200)), Verdict{Kind: KindTransport, Reason: strings.Repeat("a", 64)}},
		{"R-FAIL-9 timeout", TimeoutVerdict(), Verdict{Kind: KindTimeout, Reason: "timeout"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, tc.got); diff != "" {
				t.Errorf("verdict mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// fixedReasons are the reasons Classify makes up rather than reads.
var fixedReasons = map[string]bool{
	"insufficient_quota": true, "billing_hard_limit_reached": true, "billing_not_active": true,
	"billing_error": true, "insufficient_balance": true, "credit_balance_too_low": true,
	"usage_limit_reached": true, "quota_exceeded": true, "payment_required": true,
	"spend_limit_reached": true, "billing": true, "RESOURCE_EXHAUSTED": true,
	// Gemini (R-FMT-8): fixed names, or Google statuses matched ignoring case.
	"BILLING_DISABLED": true, "UNAUTHENTICATED": true, "PERMISSION_DENIED": true,
}

func FuzzClassify(f *testing.F) {
	for _, ex := range errorExamples(f) {
		wire := exampleExpectations[ex.file].wire
		f.Add(uint8(wire), ex.status, ex.headerBlock, ex.body)
	}
	f.Add(uint8(WireBedrock), 403, "x-amzn-ErrorType: AccessDeniedException", []byte(`{"Message":"billing"}`))
	f.Add(uint8(WireOpenAI), 429, "retry-after: 1e9", []byte(`[{"error":{"status":"RESOURCE_EXHAUSTED","message":"Quota exceeded per minute"}}]`))
	f.Add(uint8(WireOpenAI), 0, "", []byte("data: {\"error\":{\"code\":\"insufficient_quota\"}}"))
	f.Add(uint8(WireGemini), 429, "", []byte(`{"error":{"details":[{"quotaId":"PerDay"},{"retryDelay":"99999999s"}]}}`))
	f.Add(uint8(WireGemini), 403, "", []byte(`{"error":{"status":"permission_denied","details":[{"reason":"api_key_invalid"}]}}`))
	f.Add(uint8(WireAnthropic), 999, "retry-after: Sun, 01 Jun 2025 12:00:09 GMT", []byte(`{"error":"quota exceeded"}`))
	f.Fuzz(func(t *testing.T, wire uint8, status int, headerBlob string, body []byte) {
		w := WireFormat(wire % uint8(WireGemini+1))
		h := parseHeaderBlob(headerBlob)
		v := Classify(w, status, h, body, testNow)
		if again := Classify(w, status, h, body, testNow); again != v {
			t.Fatalf("not deterministic: %+v then %+v", v, again)
		}
		if v.Status != status {
			t.Errorf("Status = %d, want %d", v.Status, status)
		}
		switch v.Kind {
		case KindAnswered, KindRateLimited, KindQuotaSpent, KindServerError, KindKeyRefused, KindUnknownOutcome, KindClientError:
		default:
			t.Fatalf("unexpected kind %v", v.Kind)
		}
		is2xx := status >= 200 && status < 300
		if is2xx != (v.Kind == KindAnswered) {
			t.Errorf("status %d gave %v", status, v.Kind)
		}
		if (status == 502 || status == 504) && v.Kind != KindUnknownOutcome {
			t.Errorf("status %d gave %v, want unknown outcome", status, v.Kind)
		}
		if status >= 500 && status < 600 && status != 502 && status != 504 && v.Kind != KindServerError {
			t.Errorf("status %d gave %v, want server error", status, v.Kind)
		}
		if v.Kind == KindQuotaSpent && !(status >= 400 && status < 500 && v.AccountWide) {
			t.Errorf("quota spent on status %d, account-wide %v", status, v.AccountWide)
		}
		if v.AccountWide && v.Kind != KindQuotaSpent && !(v.Kind == KindRateLimited && v.Reason == "ServiceQuotaExceededException") {
			t.Errorf("account-wide %v with reason %q", v.Kind, v.Reason)
		}
		if !v.Until.IsZero() {
			if v.Until.Before(testNow) || v.Until.After(testNow.Add(HintHorizon)) {
				t.Errorf("Until %v outside [now, now+%v]", v.Until, HintHorizon)
			}
			switch v.Kind {
			case KindRateLimited, KindQuotaSpent, KindServerError:
			default:
				t.Errorf("%v carries Until %v", v.Kind, v.Until)
			}
		}
		if v.DayQuota && (w != WireGemini || v.Kind != KindRateLimited) { // R-FMT-8
			t.Errorf("DayQuota on %v %v", w, v.Kind)
		}
		if !upstream.IsToken(v.Reason) {
			t.Errorf("Reason %q is not a plain token", v.Reason)
		}
		// The reason is read from the body or the AWS error type header, or
		// is one of Classify's own tokens: never another header's value.
		if !strings.HasPrefix(v.Reason, "http_") && !fixedReasons[v.Reason] &&
			!bytes.Contains(body, []byte(v.Reason)) && !bytes.ContainsRune(body, '\\') &&
			!strings.Contains(h.Get("x-amzn-ErrorType"), v.Reason) {
			t.Errorf("Reason %q comes from neither the body nor x-amzn-ErrorType", v.Reason)
		}
	})
}
