// Package sakey reads a Google service account's JSON key, the value of a
// google-service-account member's key secret (Vertex AI): the one check of
// its shape that the admin API (SetSecret) and the console's upload form
// share. It holds no domain logic and imports nothing of Weir.
package sakey

import (
	"encoding/json"
	"net/url"
	"strings"
)

// GoogleTokenURL is where a Google service account's signed JWT is
// exchanged for an access token: the token_uri of the keys Google issues,
// and the one a key without a token_uri uses.
const GoogleTokenURL = "https://oauth2.googleapis.com/token"

// Check reads a Google service account's JSON key. It returns the
// key's token endpoint — its token_uri, GoogleTokenURL when it names none;
// "" when there is none to read — and every problem that keeps the edge
// from signing with it: not a JSON object; no "type": "service_account",
// client_email or private_key; a token_uri that is not an https URL with a
// host. No problem quotes the value.
func Check(value string) (tokenURL string, problems []string) {
	var k struct {
		Type        string `json:"type"`
		ClientEmail string `json:"client_email"`
		PrivateKey  string `json:"private_key"`
		TokenURI    string `json:"token_uri"`
	}
	if err := json.Unmarshal([]byte(value), &k); err != nil {
		return "", []string{"not a JSON service account key"}
	}
	if k.Type != "service_account" || k.ClientEmail == "" || k.PrivateKey == "" {
		problems = append(problems, `not a service account key: it needs "type": "service_account", a client_email and a private_key`)
	}
	if k.TokenURI == "" {
		return GoogleTokenURL, problems
	}
	u, err := url.Parse(k.TokenURI)
	if err != nil || !strings.EqualFold(u.Scheme, "https") || u.Hostname() == "" {
		return "", append(problems, "the key's token_uri is not an https URL")
	}
	return k.TokenURI, problems
}
