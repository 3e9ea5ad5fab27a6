package translate

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// updateReq rewrites the request goldens: go test ./internal/translate
// -run TestRequestGolden -update-req
var updateReq = flag.Bool("update-req", false, "rewrite the request translation goldens under testdata/req")

// reqParsers are the caller formats, by testdata directory.
var reqParsers = map[string]func([]byte) (*Request, error){
	"chat":      ParseChat,
	"responses": ParseResponses,
	"messages":  ParseMessages,
}

// reqRenderers are the member formats, by golden suffix. The Anthropic
// default cap is the record's (1000 here) so the goldens show where it
// applies.
var reqRenderers = map[string]func(*Request) ([]byte, error){
	"openai":    func(r *Request) ([]byte, error) { return RenderOpenAI(r, "member-model") },
	"anthropic": func(r *Request) ([]byte, error) { return RenderAnthropic(r, "member-model", 1000) },
	"gemini":    RenderGemini,
}

// TestRequestGolden translates every caller input under testdata/req/<caller>/in
// into every member format and compares with testdata/req/<caller>/out
// (R-FMT-2: every chat caller reaches every chat member).
func TestRequestGolden(t *testing.T) {
	for caller, parse := range reqParsers {
		ins, err := filepath.Glob(filepath.Join("testdata", "req", caller, "in", "*.json"))
		if err != nil || len(ins) == 0 {
			t.Fatalf("no inputs for %s: %v", caller, err)
		}
		inputs := map[string]bool{}
		for _, in := range ins {
			inputs[strings.TrimSuffix(filepath.Base(in), ".json")] = true
		}
		// Every golden belongs to an input and a member (no stale ones).
		outs, _ := filepath.Glob(filepath.Join("testdata", "req", caller, "out", "*.json"))
		for _, out := range outs {
			parts := strings.Split(strings.TrimSuffix(filepath.Base(out), ".json"), ".")
			if len(parts) != 2 || !inputs[parts[0]] || reqRenderers[parts[1]] == nil {
				t.Errorf("stale golden %s", out)
			}
		}
		for _, in := range ins {
			name := strings.TrimSuffix(filepath.Base(in), ".json")
			body, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			r, err := parse(body)
			if err != nil {
				t.Errorf("%s/%s: parse: %v", caller, name, err)
				continue
			}
			for member, render := range reqRenderers {
				t.Run(caller+"/"+name+"/"+member, func(t *testing.T) {
					got, err := render(r)
					if err != nil {
						t.Fatalf("render: %v", err)
					}
					var ind bytes.Buffer
					if err := json.Indent(&ind, got, "", "  "); err != nil {
						t.Fatalf("output is not JSON: %v\n%s", err, got)
					}
					ind.WriteByte('\n')
					golden := filepath.Join("testdata", "req", caller, "out", name+"."+member+".json")
					if *updateReq {
						if err := os.WriteFile(golden, ind.Bytes(), 0o644); err != nil {
							t.Fatal(err)
						}
						return
					}
					want, err := os.ReadFile(golden)
					if err != nil {
						t.Fatalf("missing golden (run with -update-req): %v", err)
					}
					if !bytes.Equal(ind.Bytes(), want) {
						t.Errorf("%s differs from golden:\n got: %s\nwant: %s", golden, ind.Bytes(), want)
					}
					// Rendering is deterministic.
					again, _ := render(r)
					if !bytes.Equal(again, got) {
						t.Errorf("second render differs")
					}
				})
			}
		}
	}
}
