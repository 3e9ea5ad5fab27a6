package console

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"weir.dev/web"
)

// Cookie names. Every cookie is HttpOnly, SameSite=Strict, Path=/console,
// and Secure when the console is served over TLS.
const (
	// sessionCookie holds the admin token sealed with AES-GCM, and its
	// expiry.
	sessionCookie = "weir_session"
	// loginCookie binds the login form's CSRF token before there is a
	// session.
	loginCookie = "weir_login"
	// flashCookie carries one-time messages across a redirect (signed).
	flashCookie = "weir_flash"
	// tenantCookie is the tenant picked with the switcher.
	tenantCookie = "weir_tenant"

	cookiePath = "/console"
)

// Key derivation labels: each key the console uses is derived from the
// master key under its own label, so none of them equals the key that seals
// secrets at rest.
const (
	labelSession = "weir console session cookie v1"
	labelCSRF    = "weir console csrf v1"
	labelFlash   = "weir console flash v1"
)

// keys are the console's keys, derived from the master key.
type keys struct {
	session cipher.AEAD
	csrf    []byte
	flash   []byte
}

func deriveKeys(master []byte) (*keys, error) {
	if len(master) < 32 {
		return nil, errors.New("console: the master key must be at least 32 bytes")
	}
	derive := func(label string) ([]byte, error) {
		return hkdf.Key(sha256.New, master, nil, label, 32)
	}
	sk, err := derive(labelSession)
	if err != nil {
		return nil, fmt.Errorf("console: derive key: %w", err)
	}
	block, err := aes.NewCipher(sk)
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	ck, err := derive(labelCSRF)
	if err != nil {
		return nil, fmt.Errorf("console: derive key: %w", err)
	}
	fk, err := derive(labelFlash)
	if err != nil {
		return nil, fmt.Errorf("console: derive key: %w", err)
	}
	return &keys{session: aead, csrf: ck, flash: fk}, nil
}

// sessionAD is the additional data of sealed session cookies. Its version
// suffix changed when cookies began to carry a session id, so that cookies
// of the earlier layout no longer open.
var sessionAD = []byte(sessionCookie + " v2")

// sessionIDSize is the size of a session's random id.
const sessionIDSize = 16

// newSessionID returns a fresh random session id.
func newSessionID() ([]byte, error) {
	id := make([]byte, sessionIDSize)
	if _, err := rand.Read(id); err != nil {
		return nil, fmt.Errorf("console: session id: %w", err)
	}
	return id, nil
}

// seal returns the session cookie's value: base64url(nonce | AES-GCM(expiry
// unix seconds, 8 bytes big endian | session id, 16 bytes | token)).
func (k *keys) seal(sid []byte, token string, expires time.Time) (string, error) {
	if len(sid) != sessionIDSize {
		return "", errors.New("console: bad session id")
	}
	nonce := make([]byte, k.session.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("console: nonce: %w", err)
	}
	plain := make([]byte, 8, 8+sessionIDSize+len(token))
	binary.BigEndian.PutUint64(plain, uint64(expires.Unix()))
	plain = append(plain, sid...)
	plain = append(plain, token...)
	return base64.RawURLEncoding.EncodeToString(k.session.Seal(nonce, nonce, plain, sessionAD)), nil
}

// errNoSession: the cookie is missing, does not open, or has expired.
var errNoSession = errors.New("no session")

// open returns the session id and token of a session cookie value that is
// still valid at now. Whether the session was ended server-side is the
// caller's check (Sessions.Active).
func (k *keys) open(value string, now time.Time) (sid []byte, token string, err error) {
	raw, err := base64.RawURLEncoding.DecodeString(value)
	n := k.session.NonceSize()
	if err != nil || len(raw) < n+k.session.Overhead()+8 {
		return nil, "", errNoSession
	}
	plain, err := k.session.Open(nil, raw[:n], raw[n:], sessionAD)
	if err != nil || len(plain) < 8+sessionIDSize+1 {
		return nil, "", errNoSession
	}
	if exp := time.Unix(int64(binary.BigEndian.Uint64(plain[:8])), 0); !now.Before(exp) {
		return nil, "", errNoSession
	}
	return plain[8 : 8+sessionIDSize], string(plain[8+sessionIDSize:]), nil
}

// csrfToken is the CSRF token bound to a cookie value: HMAC-SHA256 under
// the CSRF key of purpose and the value.
func (k *keys) csrfToken(purpose, cookieValue string) string {
	m := hmac.New(sha256.New, k.csrf)
	m.Write([]byte(purpose))
	m.Write([]byte{0})
	m.Write([]byte(cookieValue))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// checkCSRF reports whether got is the token of purpose and cookieValue.
func (k *keys) checkCSRF(purpose, cookieValue, got string) bool {
	if got == "" || cookieValue == "" {
		return false
	}
	return hmac.Equal([]byte(got), []byte(k.csrfToken(purpose, cookieValue)))
}

// signFlashes encodes flashes for the flash cookie, signed.
func (k *keys) signFlashes(fs []web.Flash) string {
	b, _ := json.Marshal(fs)
	m := hmac.New(sha256.New, k.flash)
	m.Write(b)
	return base64.RawURLEncoding.EncodeToString(b) + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// openFlashes decodes a flash cookie; a bad one yields none.
func (k *keys) openFlashes(v string) []web.Flash {
	body, sig, ok := cutLast(v, '.')
	if !ok {
		return nil
	}
	b, err1 := base64.RawURLEncoding.DecodeString(body)
	s, err2 := base64.RawURLEncoding.DecodeString(sig)
	if err1 != nil || err2 != nil {
		return nil
	}
	m := hmac.New(sha256.New, k.flash)
	m.Write(b)
	if !hmac.Equal(s, m.Sum(nil)) {
		return nil
	}
	var fs []web.Flash
	if json.Unmarshal(b, &fs) != nil {
		return nil
	}
	return fs
}

func cutLast(s string, sep byte) (before, after string, ok bool) {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// cookie returns a console cookie with the console's attributes.
func (c *base) cookie(r *http.Request, name, value string, maxAge time.Duration) *http.Cookie {
	ck := &http.Cookie{
		Name:     name,
		Value:    value,
		Path:     cookiePath,
		HttpOnly: true,
		SameSite: http.SameSiteStrictMode,
		Secure:   c.secure(r),
	}
	switch {
	case maxAge < 0:
		ck.MaxAge = -1
	case maxAge > 0:
		ck.MaxAge = int(maxAge / time.Second)
		ck.Expires = c.now().Add(maxAge)
	}
	return ck
}

// clearCookie deletes a console cookie.
func (c *base) clearCookie(w http.ResponseWriter, r *http.Request, name string) {
	http.SetCookie(w, c.cookie(r, name, "", -1))
}

func (c *base) secure(r *http.Request) bool { return c.d.SecureCookies || r.TLS != nil }
