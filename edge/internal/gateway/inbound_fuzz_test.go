package gateway

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"weir.dev/routing"
)

func FuzzReadInbound(f *testing.F) {
	for _, s := range []string{
		`{"model":"gpt-x","messages":[]}`, `{"model":"m","stream":true,"max_tokens":5,"metadata":{"user_id":"u"}}`,
		`{"model":5}`, `[]`, `{`, `{"model":"m","stream_options":{"include_usage":true},"prompt_cache_key":"k"}`,
		`{"model":"m","max_tokens":-1}`, "\x00\xff", `{"model":"m","metadata":"x"}`,
		`{"model":"m","MODEL":"n"}`, `{"mod\u0065l":"m"}`, `{"model":"m","max_tokens":1,"max_tokens":2}`, `{"model":"m","max_to\u212aens":5}`,
	} {
		f.Add(s, uint8(0))
	}
	f.Fuzz(func(t *testing.T, body string, epn uint8) {
		ep := routing.Endpoint(epn%4 + 1)
		r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body))
		in, err := readInbound(r, nil, ep, newBodyReader(1<<20, 0), new(Inbound))
		if err != nil {
			if in != nil || err.Status < 400 || err.Status > 499 || err.Code != routing.CodeInvalidRequest {
				t.Fatalf("bad refusal %+v", err)
			}
			return
		}
		if in.Model == "" || !bytes.Equal(in.Body, []byte(body)) || in.MaxOutput < 0 {
			t.Fatalf("accepted %q as %+v", body, in)
		}
		// R-SEC-5: what the edge routes by is what a strict reader (names
		// as decoded, compared case-sensitively, duplicates refused) reads.
		strict, ok := strictFields([]byte(body))
		if !ok {
			t.Fatalf("accepted %q, which a strict reader refuses", body)
		}
		if string(strict["model"]) != strconvQuoteJSON(in.Model) {
			t.Fatalf("accepted %q with model %q, a strict reader reads %s", body, in.Model, strict["model"])
		}
		stream := string(strict["stream"]) == "true"
		if stream != in.Stream {
			t.Fatalf("accepted %q with stream %v, a strict reader reads %s", body, in.Stream, strict["stream"])
		}
		var want int64
		for _, k := range []string{"max_tokens", "max_completion_tokens", "max_output_tokens"} {
			if v := strict[k]; v != nil && string(v) != "null" && want == 0 {
				if err := json.Unmarshal(v, &want); err != nil {
					t.Fatalf("accepted %q whose %s a strict reader cannot read: %v", body, k, err)
				}
			}
		}
		if want != in.MaxOutput {
			t.Fatalf("accepted %q with max output %d, a strict reader reads %d", body, in.MaxOutput, want)
		}
	})
}

// strictFields reads the routed fields of a JSON object as a strict
// reader does: keys decoded, compared case-sensitively, a duplicate of any
// routed key refused (ok false). Values are re-encoded canonically.
func strictFields(b []byte) (map[string]json.RawMessage, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	out := map[string]json.RawMessage{}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		k := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		switch k {
		case "model", "stream", "max_tokens", "max_completion_tokens", "max_output_tokens", "stream_options":
			if seen[k] {
				return nil, false
			}
			seen[k] = true
			if k == "model" {
				var s string
				if json.Unmarshal(v, &s) != nil {
					return nil, false
				}
				v, _ = json.Marshal(s)
			}
			out[k] = v
		}
	}
	return out, true
}

func strconvQuoteJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func FuzzAPIKey(f *testing.F) {
	f.Add("Bearer abc", "")
	f.Add("", "key")
	f.Add("bearer", "x")
	f.Fuzz(func(t *testing.T, auth, xkey string) {
		h := http.Header{}
		if auth != "" {
			h.Set("Authorization", auth)
		}
		if xkey != "" {
			h.Set("X-Api-Key", xkey)
		}
		k := apiKey(h)
		if auth != "" && k != "" && !strings.Contains(auth, k) {
			t.Fatalf("key %q not from %q", k, auth)
		}
	})
}

// FuzzScanFields: scanFields, the fast path, reads every body it accepts
// as decodeFields (encoding/json and oneReading) does, and accepts only
// bodies decodeFields accepts.
func FuzzScanFields(f *testing.F) {
	for _, s := range []string{
		`{"model":"gpt-x","messages":[]}`, `{"model":"m","stream":true,"max_tokens":5,"metadata":{"user_id":"u"}}`,
		`{"model":5}`, `[]`, `{`, `null`, ` {"model":"m"} `, `{"model":"m","stream_options":{"include_usage":true},"prompt_cache_key":"k"}`,
		`{"model":"m","max_tokens":-1}`, "\x00\xff", `{"model":"m","metadata":"x"}`, `{"model":null,"stream":null,"metadata":null}`,
		`{"model":"m","MODEL":"n"}`, `{"mod\u0065l":"m"}`, `{"model":"m","max_tokens":1,"max_tokens":2}`, `{"model":"m","max_to\u212aens":5}`,
		`{"model":"m","n":2,"N":3}`, `{"model":"m","n":1.5}`, `{"model":"m","n":1e2}`, `{"model":"m","top_logprobs":99999999999999999999}`,
		`{"model":"m\u00e9","logprobs":true,"modalities":["text","audio"],"audio":{"voice":"x"}}`, `{"model":"m","modalities":null,"stream_options":null}`,
		`{"model":"m","response_format":{"type":"json_schema"},"text":{"format":{"type":"json_schema"}}}`, `{"model":"m","stream":"yes"}`,
		"{\"model\":\"m\xff\"}", `{"model":"m","stream_options":{"include_usage":true,"INCLUDE_USAGE":false}}`, `{"model":"m","n":-0,"x":{"model":1}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		var got fields
		if !scanFields([]byte(body), &got) {
			return
		}
		ref, e := decodeFields([]byte(body))
		if e != nil {
			t.Fatalf("scanFields accepted %q, decodeFields refuses it: %v", body, e.Message)
		}
		if want := ref.values(); !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: scanFields read %+v, decodeFields %+v", body, got, want)
		}
	})
}
