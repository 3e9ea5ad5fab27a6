package gateway

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"weir.dev/routing"
)

// redacted replaces a secret in an upstream answer passed on as is.
const redacted = "[redacted]"

// secretsOf returns the secret strings signed request req carries to member
// m (R-SEC-6): the member's key header as sent and its token, a bearer
// token (API key or OAuth2 access token), a SigV4 access key id and
// signature, a session token, and key query parameters. Which headers hold
// them is read from the request after signing, so it holds for any Signer.
func secretsOf(req *http.Request, m *routing.Member) []string {
	var out []string
	add := func(v string) {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	names := []string{"Authorization", "X-Api-Key", "Api-Key", "X-Goog-Api-Key", "X-Amz-Security-Token"}
	if m != nil && m.Auth.Header != "" {
		names = append(names, m.Auth.Header)
	}
	for _, n := range names {
		for _, v := range req.Header.Values(n) {
			add(v)
			scheme, rest, _ := strings.Cut(v, " ")
			switch {
			case strings.EqualFold(scheme, "bearer"):
				add(rest)
			case strings.HasPrefix(scheme, "AWS4-"):
				for _, part := range strings.Split(rest, ",") {
					k, val, _ := strings.Cut(strings.TrimSpace(part), "=")
					switch k {
					case "Credential":
						id, _, _ := strings.Cut(val, "/")
						add(id)
					case "Signature":
						add(val)
					}
				}
			}
		}
	}
	if req.URL != nil {
		q := req.URL.Query()
		for _, k := range []string{"key", "api-key", "X-Amz-Signature", "X-Amz-Credential", "X-Amz-Security-Token"} {
			add(q.Get(k))
		}
	}
	return out
}

// redact returns b with every occurrence of the secrets replaced by
// "[redacted]": as written, percent-encoded, and inside JSON strings
// under any escaping (each JSON string literal holding a secret once
// decoded is re-encoded with the secret replaced). truncated says b is the
// first bytes of a longer body: a secret's first bytes ending b are
// redacted too. b is modified in place or copied; the result must be used.
func redact(b []byte, secrets []string, truncated bool) []byte {
	if len(secrets) == 0 {
		return b
	}
	b = redactJSONStrings(b, secrets)
	for _, s := range secrets {
		for _, v := range spellings(s) {
			b = bytes.ReplaceAll(b, []byte(v), []byte(redacted))
			if truncated {
				for k := len(v) - 1; k >= 4; k-- {
					if bytes.HasSuffix(b, []byte(v[:k])) {
						b = append(b[:len(b)-k], redacted...)
						break
					}
				}
			}
		}
	}
	return b
}

// spellings are the ways a secret may be written in a body outside an
// escaped JSON string: as is, JSON-escaped (with and without HTML escapes,
// and with "\/"), and percent-encoded.
func spellings(s string) []string {
	out := []string{s}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, html := range []bool{true, false} {
		buf.Reset()
		enc.SetEscapeHTML(html)
		_ = enc.Encode(s)
		q := strings.TrimSuffix(buf.String(), "\n")
		out = append(out, q[1:len(q)-1])
	}
	out = append(out, strings.ReplaceAll(s, "/", `\/`), url.QueryEscape(s), url.PathEscape(s))
	return out
}

// redactJSONStrings re-encodes each JSON string literal of b that contains
// an escape and, decoded, a secret, with the secret replaced.
func redactJSONStrings(b []byte, secrets []string) []byte {
	var out []byte
	last := 0
	for i := 0; i < len(b); i++ {
		if b[i] != '"' {
			continue
		}
		j, esc := i+1, false
		for j < len(b) && b[j] != '"' {
			if b[j] == '\\' {
				esc = true
				j++
			}
			j++
		}
		if j >= len(b) {
			break
		}
		lit := b[i : j+1]
		if esc {
			var s string
			if json.Unmarshal(lit, &s) == nil {
				changed := false
				for _, sec := range secrets {
					if strings.Contains(s, sec) {
						s, changed = strings.ReplaceAll(s, sec, redacted), true
					}
				}
				if changed {
					enc, _ := json.Marshal(s)
					out = append(append(out, b[last:i]...), enc...)
					last = j + 1
				}
			}
		}
		i = j
	}
	if out == nil {
		return b
	}
	return append(out, b[last:]...)
}

// redactHeader redacts the secrets in every value of h.
func redactHeader(h http.Header, secrets []string) {
	for k, vs := range h {
		for i, v := range vs {
			h[k][i] = string(redact([]byte(v), secrets, false))
		}
	}
}
