package translate

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// reqFuzzParse holds a parser to its contract on any input: no panic; either
// a *BadRequest, or a Request every renderer accepts, writing valid JSON.
func reqFuzzParse(f *testing.F, caller string) {
	ins, _ := filepath.Glob(filepath.Join("testdata", "req", caller, "in", "*.json"))
	for _, in := range ins {
		if b, err := os.ReadFile(in); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{}`))
	f.Add([]byte(`null`))
	parse := reqParsers[caller]
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := parse(body)
		if err != nil {
			var br *BadRequest
			if !errors.As(err, &br) {
				t.Fatalf("error is not a *BadRequest: %T %v", err, err)
			}
			return
		}
		if r == nil {
			t.Fatal("nil request without error")
		}
		for member, render := range reqRenderers {
			out, err := render(r)
			if err != nil {
				t.Fatalf("%s refused a parsed request: %v", member, err)
			}
			if !json.Valid(out) {
				t.Fatalf("%s wrote invalid JSON: %s", member, out)
			}
		}
	})
}

func FuzzParseChat(f *testing.F)      { reqFuzzParse(f, "chat") }
func FuzzParseResponses(f *testing.F) { reqFuzzParse(f, "responses") }
func FuzzParseMessages(f *testing.F)  { reqFuzzParse(f, "messages") }
