package secrets

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const testValue = "sk-very-secret-value-123"

func testKey(t *testing.T) []byte {
	t.Helper()
	k := make([]byte, KeySize)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return k
}

func TestSealOpen(t *testing.T) {
	t.Parallel()
	key := testKey(t)
	sealed, err := Seal(key, []byte(testValue), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte(testValue)) {
		t.Fatal("ciphertext contains the plaintext")
	}
	if got := len(sealed); got != NonceSize+len(testValue)+16 {
		t.Fatalf("sealed length = %d, want nonce+plaintext+tag", got)
	}

	t.Run("R-SEC-1 round trip", func(t *testing.T) {
		t.Parallel()
		got, err := Open(key, sealed)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != testValue {
			t.Fatal("round trip changed the value")
		}
	})

	tampered := bytes.Clone(sealed)
	tampered[len(tampered)-1] ^= 1
	for _, tc := range []struct {
		name       string
		key, input []byte
		want       error
	}{
		{"R-SEC-1 wrong key", testKey(t), sealed, ErrDecrypt},
		{"R-SEC-1 tampered ciphertext", key, tampered, ErrDecrypt},
		{"R-SEC-1 too short", key, sealed[:NonceSize+3], ErrDecrypt},
		{"R-SEC-1 empty", key, nil, ErrDecrypt},
		{"R-SEC-1 key of 16 bytes", key[:16], sealed, ErrBadKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Open(tc.key, tc.input)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Open error = %v, want %v", err, tc.want)
			}
			if strings.Contains(err.Error(), testValue) {
				t.Fatal("error contains the value")
			}
		})
	}

	t.Run("R-SEC-1 seal refuses a short key", func(t *testing.T) {
		t.Parallel()
		if _, err := Seal(key[:31], []byte("x"), rand.Reader); !errors.Is(err, ErrBadKey) {
			t.Fatalf("Seal error = %v, want ErrBadKey", err)
		}
	})
	t.Run("R-SEC-1 nonces differ", func(t *testing.T) {
		t.Parallel()
		again, err := Seal(key, []byte(testValue), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(again[:NonceSize], sealed[:NonceSize]) {
			t.Fatal("two seals used one nonce")
		}
	})
}

func TestStoreGet(t *testing.T) {
	t.Parallel()
	store, err := NewStore([]Secret{
		{Name: "openai", TenantID: "t1", Hosts: []string{"API.OpenAI.com"}, Value: []byte("v-openai")},
		{Name: "ported", TenantID: "t1", Hosts: []string{"llm.example.com:8443", "[::1]:9000"}, Value: []byte("v-ported")},
		{Name: "loop", TenantID: "t1", Hosts: []string{"127.0.0.1", "localhost."}, Value: []byte("v-loop")},
		{Name: "v6", TenantID: "t1", Hosts: []string{"2001:DB8::1"}, Value: []byte("v-v6")},
		{Name: "openai", TenantID: "", Hosts: []string{"api.openai.com"}, Value: []byte("v-managed")},
		{Name: "openai", TenantID: "t2", Hosts: []string{"api.openai.com:443"}, Value: []byte("v-t2")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if store.Len() != 6 {
		t.Fatalf("Len = %d, want 6", store.Len())
	}
	for _, tc := range []struct {
		name                 string
		tenant, secret, host string
		want                 string
		wantErr              error
	}{
		{"R-SEC-1 bound name matches any port", "t1", "openai", "api.openai.com", "v-openai", nil},
		{"R-SEC-1 bound name matches with port", "t1", "openai", "api.openai.com:443", "v-openai", nil},
		{"R-SEC-1 host match is case-insensitive", "t1", "openai", "API.OPENAI.COM:8080", "v-openai", nil},
		{"R-SEC-1 trailing dot is ignored", "t1", "openai", "api.openai.com.", "v-openai", nil},
		{"R-SEC-1 another host is refused", "t1", "openai", "evil.example.com", "", ErrNotBound},
		{"R-SEC-1 no suffix match", "t1", "openai", "api.openai.com.evil.example", "", ErrNotBound},
		{"R-SEC-1 no subdomain match", "t1", "openai", "x.api.openai.com", "", ErrNotBound},
		{"R-SEC-1 bound port matches", "t1", "ported", "llm.example.com:8443", "v-ported", nil},
		{"R-SEC-1 bound port refuses other port", "t1", "ported", "llm.example.com:443", "", ErrNotBound},
		{"R-SEC-1 bound port refuses no port", "t1", "ported", "llm.example.com", "", ErrNotBound},
		{"R-SEC-1 bracketed IPv6 with port", "t1", "ported", "[0:0::1]:9000", "v-ported", nil},
		{"R-SEC-1 IPv6 other port", "t1", "ported", "[::1]:9001", "", ErrNotBound},
		{"R-SEC-1 IPv4 literal", "t1", "loop", "127.0.0.1:39999", "v-loop", nil},
		{"R-SEC-1 IPv4 literal other address", "t1", "loop", "127.0.0.2:39999", "", ErrNotBound},
		{"R-SEC-1 localhost bound with trailing dot", "t1", "loop", "LOCALHOST:80", "v-loop", nil},
		{"R-SEC-1 bare IPv6 binding", "t1", "v6", "[2001:db8::1]:443", "v-v6", nil},
		{"R-SEC-1 cluster secret", "", "openai", "api.openai.com", "v-managed", nil},
		{"R-SEC-1 tenant sees only its own secret", "t2", "openai", "api.openai.com:443", "v-t2", nil},
		{"R-SEC-1 other tenant's binding port", "t2", "openai", "api.openai.com:8443", "", ErrNotBound},
		{"R-SEC-1 unknown tenant", "t3", "openai", "api.openai.com", "", ErrNotSet},
		{"R-SEC-1 unknown name", "t1", "nope", "api.openai.com", "", ErrNotSet},
		{"R-SEC-1 unparsable host", "t1", "openai", "api.openai.com:https", "", ErrNotBound},
		{"R-SEC-1 wildcard host", "t1", "openai", "*.openai.com", "", ErrNotBound},
		{"R-SEC-1 userinfo smuggled in host", "t1", "openai", "api.openai.com@evil.example", "", ErrNotBound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := store.Get(tc.tenant, tc.secret, tc.host)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("Get error = %v, want %v", err, tc.wantErr)
				}
				if got != nil {
					t.Fatal("Get returned a value with an error")
				}
				if strings.Contains(err.Error(), "v-") {
					t.Fatalf("error %q contains a value", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Get: %v", err)
			}
			if string(got) != tc.want {
				t.Fatalf("Get = %q, want %q", got, tc.want)
			}
		})
	}

	t.Run("R-SEC-1 values are copies", func(t *testing.T) {
		t.Parallel()
		v, err := store.Get("t1", "loop", "127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		v[0] = 'X'
		again, _ := store.Get("t1", "loop", "127.0.0.1")
		if string(again) != "v-loop" {
			t.Fatal("caller's change reached the store")
		}
	})

	t.Run("R-SEC-1 nil store is empty", func(t *testing.T) {
		t.Parallel()
		var s *Store
		if _, err := s.Get("t1", "x", "h"); !errors.Is(err, ErrNotSet) {
			t.Fatalf("Get on nil store = %v, want ErrNotSet", err)
		}
	})
}

func TestNewStoreCopiesInput(t *testing.T) {
	t.Parallel()
	in := []Secret{{Name: "k", Hosts: []string{"h"}, Value: []byte("abc")}}
	s, err := NewStore(in)
	if err != nil {
		t.Fatal(err)
	}
	clear(in[0].Value)
	in[0].Hosts[0] = "other"
	v, err := s.Get("", "k", "h")
	if err != nil || string(v) != "abc" {
		t.Fatalf("Get = %q, %v; want abc (store must copy)", v, err)
	}
}

func TestNewStoreRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		in    []Secret
		count int
	}{
		{"R-SEC-1 no host", []Secret{{Name: "a", Value: []byte(testValue)}}, 1},
		{"R-SEC-1 no name", []Secret{{Hosts: []string{"h"}}}, 1},
		{"R-SEC-1 wildcard host", []Secret{{Name: "a", Hosts: []string{"*.example.com"}, Value: []byte(testValue)}}, 1},
		{"R-SEC-1 bad port", []Secret{{Name: "a", Hosts: []string{"h:0", "h:99999", "h:"}, Value: []byte(testValue)}}, 3},
		{"R-SEC-1 url instead of host", []Secret{{Name: "a", Hosts: []string{"https://h/"}, Value: []byte(testValue)}}, 1},
		{"R-SEC-1 duplicate", []Secret{
			{Name: "a", TenantID: "t", Hosts: []string{"h"}},
			{Name: "a", TenantID: "t", Hosts: []string{"h"}},
		}, 1},
		{"R-SEC-1 every problem reported", []Secret{
			{Name: "a", TenantID: "t"},
			{Name: "b", TenantID: "t", Hosts: []string{"[::1"}},
		}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := NewStore(tc.in)
			if s != nil || !errors.Is(err, ErrInvalid) {
				t.Fatalf("NewStore = %v, %v; want nil, ErrInvalid", s, err)
			}
			if n := strings.Count(err.Error(), "secrets: secret"); n != tc.count {
				t.Fatalf("%d problems reported, want %d:\n%v", n, tc.count, err)
			}
			if strings.Contains(err.Error(), testValue) {
				t.Fatal("error contains the value")
			}
		})
	}
}

func TestParseAWSCredentials(t *testing.T) {
	t.Parallel()
	const secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	for _, tc := range []struct {
		name  string
		value string
		want  AWSCredentials
	}{
		{"R-SEC-3 colon form", "AKIDEXAMPLE:" + secret, AWSCredentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: secret}},
		{"R-SEC-3 colon form with newline", "AKIDEXAMPLE:" + secret + "\n", AWSCredentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: secret}},
		{"R-SEC-3 JSON", `{"access_key_id":"ASIAEXAMPLE","secret_access_key":"` + secret + `","session_token":"FwoGZXIvYXdzEXAMPLE+/="}`,
			AWSCredentials{AccessKeyID: "ASIAEXAMPLE", SecretAccessKey: secret, SessionToken: "FwoGZXIvYXdzEXAMPLE+/="}},
		{"R-SEC-3 JSON without token", ` {"secret_access_key":"` + secret + `","access_key_id":"AKIDEXAMPLE"} `,
			AWSCredentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: secret}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseAWSCredentials([]byte(tc.value))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}

	for _, tc := range []struct{ name, value string }{
		{"R-SEC-3 empty", "  \n"},
		{"R-SEC-3 no colon", secret},
		{"R-SEC-3 empty id", ":" + secret},
		{"R-SEC-3 empty secret", "AKIDEXAMPLE:"},
		{"R-SEC-3 three parts", "AKIDEXAMPLE:" + secret + ":token"},
		{"R-SEC-3 space inside", "AKID EXAMPLE:" + secret},
		{"R-SEC-3 control character", "AKIDEXAMPLE:" + secret + "\x00x"},
		{"R-SEC-3 bad JSON", `{"access_key_id":"AKIDEXAMPLE","secret_access_key":"` + secret + `"`},
		{"R-SEC-3 JSON unknown field", `{"access_key_id":"AKIDEXAMPLE","secret_key":"` + secret + `"}`},
		{"R-SEC-3 JSON missing secret", `{"access_key_id":"AKIDEXAMPLE"}`},
		{"R-SEC-3 JSON wrong type", `{"access_key_id":"AKIDEXAMPLE","secret_access_key":["` + secret + `"]}`},
		{"R-SEC-3 JSON trailing data", `{"access_key_id":"AKIDEXAMPLE","secret_access_key":"` + secret + `"} {}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseAWSCredentials([]byte(tc.value))
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error = %v, want ErrMalformed", err)
			}
			if got != (AWSCredentials{}) {
				t.Fatal("credentials returned with an error")
			}
			for _, part := range []string{secret, "wJalr", "EXAMPLEKEY", ":token"} {
				if strings.Contains(err.Error(), part) {
					t.Fatalf("error %q contains part of the value", err)
				}
			}
		})
	}
}

// TestRedaction checks that values never show in fmt, slog or JSON output,
// nor in errors that wrap a value-holding type with %v.
func TestRedaction(t *testing.T) {
	t.Parallel()
	sec := Secret{Name: "openai", TenantID: "t1", Hosts: []string{"api.openai.com"}, Value: []byte(testValue)}
	creds := AWSCredentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: testValue, SessionToken: testValue + "-tok"}
	store, err := NewStore([]Secret{sec})
	if err != nil {
		t.Fatal(err)
	}
	type holder struct {
		S  Secret
		P  *Secret
		C  AWSCredentials
		St *Store
	}
	values := map[string]any{
		"Secret":         sec,
		"*Secret":        &sec,
		"[]Secret":       []Secret{sec},
		"AWSCredentials": creds,
		"*Store":         store,
		"struct":         holder{S: sec, P: &sec, C: creds, St: store},
	}
	verbs := []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d"}
	for name, v := range values {
		t.Run("R-SEC-1 fmt "+name, func(t *testing.T) {
			t.Parallel()
			var outs []string
			for _, verb := range verbs {
				outs = append(outs, fmt.Sprintf(verb, v))
			}
			outs = append(outs,
				fmt.Errorf("wrapped: %v", v).Error(),
				fmt.Errorf("wrapped: %+v", v).Error(),
				fmt.Sprint(v), fmt.Sprintln(v))
			var logged bytes.Buffer
			slog.New(slog.NewTextHandler(&logged, nil)).Info("msg", "v", v)
			outs = append(outs, logged.String())
			if b, err := json.Marshal(v); err == nil {
				outs = append(outs, string(b))
			}
			for i, out := range outs {
				for _, leak := range []string{testValue, fmt.Sprintf("%x", testValue), fmt.Sprintf("%X", testValue), "very-secret"} {
					if strings.Contains(out, leak) {
						t.Fatalf("output %d leaks the value: %s", i, out)
					}
				}
			}
		})
	}

	t.Run("R-SEC-1 description keeps name and hosts", func(t *testing.T) {
		t.Parallel()
		got := fmt.Sprintf("%v", sec)
		for _, want := range []string{"openai", "t1", "api.openai.com", "REDACTED"} {
			if !strings.Contains(got, want) {
				t.Fatalf("%q lacks %q", got, want)
			}
		}
		if got := fmt.Sprintf("%#v", creds); !strings.Contains(got, "AKIDEXAMPLE") {
			t.Fatalf("%q lacks the access key id", got)
		}
	})
}
