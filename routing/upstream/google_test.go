package upstream

import "testing"

// These pin what the Google readers take from a body on their own; what a
// gemini member's answer does is tested through routing.ClassifyWith
// (R-FMT-8).

func TestGoogleWindow(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body string
		want       GoogleWindow
	}{
		{"R-FMT-8 per-minute quota id", `{"error":{"details":[{"violations":[{"quotaId":"GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}]}]}}`, GoogleShortWindow},
		{"R-FMT-8 per-second limit in metadata", `{"error":{"details":[{"metadata":{"quota_limit":"RequestsPerSecond"}}]}}`, GoogleShortWindow},
		{"R-FMT-8 per-day quota id", `{"error":{"details":[{"violations":[{"quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier"}]}]}}`, GoogleDayWindow},
		{"R-FMT-8 day beats minute", `{"error":{"details":[{"violations":[{"quotaId":"RequestsPerMinute"},{"quotaId":"RequestsPerDay"}]}]}}`, GoogleDayWindow},
		{"R-FMT-8 per day in a message", `{"error":{"message":"Quota exceeded for limit 'Requests per day per user'"}}`, GoogleDayWindow},
		{"R-FMT-8 month beats day", `{"error":{"details":[{"violations":[{"quotaId":"TokensPerMonth"},{"quotaId":"RequestsPerDay"}]}]}}`, GoogleLongWindow},
		{"R-FMT-8 a model name is no window", `{"error":{"details":[{"violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaDimensions":{"model":"per-day-model"}}]}]}}`, GoogleNoWindow},
		{"R-FMT-8 nothing named", `{"error":{"status":"RESOURCE_EXHAUSTED","message":"Resource has been exhausted (e.g. check quota)."}}`, GoogleNoWindow},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := ParseErrorBody([]byte(tc.body))
			if got := b.GoogleWindow(); got != tc.want {
				t.Errorf("GoogleWindow = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestGoogleKeyRefusal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body, want string
		ok               bool
	}{
		{"R-FMT-8 API_KEY_INVALID under INVALID_ARGUMENT", `{"error":{"status":"INVALID_ARGUMENT","details":[{"reason":"API_KEY_INVALID"}]}}`, "API_KEY_INVALID", true},
		{"R-FMT-8 any API_KEY_ reason", `{"error":{"status":"PERMISSION_DENIED","details":[{"reason":"API_KEY_SERVICE_BLOCKED"}]}}`, "API_KEY_SERVICE_BLOCKED", true},
		{"R-FMT-8 status alone", `{"error":{"status":"UNAUTHENTICATED"}}`, "UNAUTHENTICATED", true},
		{"R-FMT-8 a reason that is not a token is not copied", `{"error":{"details":[{"reason":"API_KEY_ bad value"}],"status":"PERMISSION_DENIED"}}`, "PERMISSION_DENIED", true},
		{"R-FMT-8 INVALID_ARGUMENT alone is the request's", `{"error":{"status":"INVALID_ARGUMENT","message":"API key in the prompt"}}`, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := ParseErrorBody([]byte(tc.body))
			got, ok := b.GoogleKeyRefusal()
			if got != tc.want || ok != tc.ok {
				t.Errorf("GoogleKeyRefusal = %q, %v; want %q, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestGoogleBilling(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]bool{
		`{"error":{"message":"Your prepayment credits are depleted."}}`:                               true,
		`{"error":{"message":"You exceeded your current quota, please check your plan and billing"}}`: true,
		`{"error":{"details":[{"reason":"BILLING_DISABLED"}]}}`:                                       true,
		`{"error":{"message":"Resource has been exhausted (e.g. check quota)."}}`:                     false,
		`{"error":{"message":"The model is overloaded. Please try again later."}}`:                    false,
	} {
		b := ParseErrorBody([]byte(body))
		if got := b.GoogleBilling(); got != want {
			t.Errorf("R-FMT-8 GoogleBilling(%s) = %v, want %v", body, got, want)
		}
	}
}
