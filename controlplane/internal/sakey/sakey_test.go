package sakey

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	const base = `"type":"service_account","client_email":"a@p.iam.gserviceaccount.com","private_key":"k"`
	for _, tc := range []struct {
		value, tokenURL string
		problems        []string
	}{
		{"{" + base + "}", GoogleTokenURL, nil},
		{"{" + base + `,"token_uri":"https://t.example/token"}`, "https://t.example/token", nil},
		{"{" + base + `,"token_uri":"http://t.example/token"}`, "", []string{"token_uri is not an https URL"}},
		{"{" + base + `,"token_uri":"https:///token"}`, "", []string{"token_uri is not an https URL"}},
		{`{"type":"user","client_email":"a@b","private_key":"k"}`, GoogleTokenURL, []string{`"type": "service_account"`}},
		{`{"type":"service_account","private_key":"k","token_uri":"ftp://x"}`, "", []string{`client_email`, "token_uri is not an https URL"}},
		{`SECRET-not-json`, "", []string{"not a JSON service account key"}},
		{`["SECRET"]`, "", []string{"not a JSON service account key"}},
	} {
		tokenURL, problems := Check(tc.value)
		if tokenURL != tc.tokenURL || len(problems) != len(tc.problems) {
			t.Errorf("Check(%s) = %q, %q; want %q and %d problems", tc.value, tokenURL, problems, tc.tokenURL, len(tc.problems))
			continue
		}
		for i, p := range problems {
			if !strings.Contains(p, tc.problems[i]) || strings.Contains(p, "SECRET") {
				t.Errorf("Check(%s) problem %q, want it to say %q and quote nothing", tc.value, p, tc.problems[i])
			}
		}
	}
}
