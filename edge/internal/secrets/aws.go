package secrets

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
)

// AWSCredentials is the content of a SigV4 access-key secret (DESIGN.md §3).
// String and every fmt verb show the access key id only: the secret access
// key and the session token are redacted.
type AWSCredentials struct {
	AccessKeyID     string
	SecretAccessKey string
	// SessionToken is set for temporary credentials; "" otherwise.
	SessionToken string
}

// String describes the credentials without their secret parts.
func (c AWSCredentials) String() string {
	tok := "none"
	if c.SessionToken != "" {
		tok = redacted
	}
	return fmt.Sprintf("aws credentials %q (secret %s, session token %s)", c.AccessKeyID, redacted, tok)
}

// GoString is the %#v form, without the secret parts.
func (c AWSCredentials) GoString() string {
	tok := `""`
	if c.SessionToken != "" {
		tok = redacted
	}
	return fmt.Sprintf("secrets.AWSCredentials{AccessKeyID:%q, SecretAccessKey:%s, SessionToken:%s}", c.AccessKeyID, redacted, tok)
}

// Format makes every fmt verb print the redacted description.
func (c AWSCredentials) Format(f fmt.State, verb rune) {
	formatRedacted(f, verb, c.String(), c.GoString())
}

// LogValue keeps the secret parts out of slog output.
func (c AWSCredentials) LogValue() slog.Value { return slog.StringValue(c.String()) }

// MarshalJSON keeps the secret parts out of JSON output: only the access key
// id is written.
func (c AWSCredentials) MarshalJSON() ([]byte, error) {
	return []byte(`{"access_key_id":` + strconv.Quote(c.AccessKeyID) + `,"secret_access_key":"` + redacted + `"}`), nil
}

// ParseAWSCredentials reads a SigV4 access-key secret. Two forms are
// accepted (surrounding white space, such as the newline a secret read from
// stdin may end with, is ignored):
//
//	ACCESS_KEY_ID:SECRET_ACCESS_KEY
//	{"access_key_id":"…","secret_access_key":"…","session_token":"…"}
//
// session_token is optional; unknown JSON fields are refused so that a
// misspelt field is not silently dropped. Errors wrap ErrMalformed and never
// contain the value or a part of it.
func ParseAWSCredentials(value []byte) (AWSCredentials, error) {
	v := bytes.TrimSpace(value)
	if len(v) == 0 {
		return AWSCredentials{}, fmt.Errorf("secrets: aws credentials: empty: %w", ErrMalformed)
	}
	var c AWSCredentials
	if v[0] == '{' {
		var j struct {
			AccessKeyID     *string `json:"access_key_id"`
			SecretAccessKey *string `json:"secret_access_key"`
			SessionToken    *string `json:"session_token"`
		}
		dec := json.NewDecoder(bytes.NewReader(v))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&j); err != nil {
			// json's messages quote pieces of the input; say only where.
			var syn *json.SyntaxError
			if errors.As(err, &syn) {
				return AWSCredentials{}, fmt.Errorf("secrets: aws credentials: not valid JSON at byte %d: %w", syn.Offset, ErrMalformed)
			}
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return AWSCredentials{}, fmt.Errorf("secrets: aws credentials: JSON ends early: %w", ErrMalformed)
			}
			return AWSCredentials{}, fmt.Errorf("secrets: aws credentials: JSON is not an object of access_key_id, secret_access_key and session_token strings: %w", ErrMalformed)
		}
		if dec.More() {
			return AWSCredentials{}, fmt.Errorf("secrets: aws credentials: data after the JSON object: %w", ErrMalformed)
		}
		if j.AccessKeyID != nil {
			c.AccessKeyID = *j.AccessKeyID
		}
		if j.SecretAccessKey != nil {
			c.SecretAccessKey = *j.SecretAccessKey
		}
		if j.SessionToken != nil {
			c.SessionToken = *j.SessionToken
		}
	} else {
		id, secret, ok := bytes.Cut(v, []byte{':'})
		if !ok {
			return AWSCredentials{}, fmt.Errorf("secrets: aws credentials: want ACCESS_KEY_ID:SECRET_ACCESS_KEY or JSON: %w", ErrMalformed)
		}
		if bytes.IndexByte(secret, ':') >= 0 {
			return AWSCredentials{}, fmt.Errorf("secrets: aws credentials: more than one ':': %w", ErrMalformed)
		}
		c.AccessKeyID, c.SecretAccessKey = string(id), string(secret)
	}
	var problems []error
	check := func(field, s string, required bool) {
		switch {
		case s == "" && required:
			problems = append(problems, fmt.Errorf("%s is empty", field))
		case !printableASCII(s):
			problems = append(problems, fmt.Errorf("%s has a character other than printable ASCII without spaces", field))
		}
	}
	check("access key id", c.AccessKeyID, true)
	check("secret access key", c.SecretAccessKey, true)
	check("session token", c.SessionToken, false)
	if len(problems) > 0 {
		return AWSCredentials{}, fmt.Errorf("secrets: aws credentials: %w", errors.Join(append(problems, ErrMalformed)...))
	}
	return c, nil
}

// printableASCII reports whether s is visible ASCII only (no space, no
// control character): what can go in a SigV4 header unchanged.
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}
