package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

func TestEditTop(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		in    string
		edits []Edit
		want  string
	}{
		{"replace model", `{"model":"a","x":{"model":"inner"}}`, []Edit{{Key: "model", Raw: []byte(`"b"`)}}, `{"model":"b","x":{"model":"inner"}}`},
		{"keep other options byte for byte", `{"input":"hi", "encoding_format":"base64","model":"m"}`, []Edit{{Key: "model", Raw: []byte(`"azure-dep"`)}}, `{"input":"hi", "encoding_format":"base64","model":"azure-dep"}`},
		{"add", `{"a":1}`, []Edit{{Key: "stream_options", Raw: []byte(`{"include_usage":true}`)}}, `{"a":1,"stream_options":{"include_usage":true}}`},
		{"add to empty", `{ }`, []Edit{{Key: "a", Raw: []byte(`1`)}}, `{ "a":1}`},
		{"delete middle", `{"a":1,"model":"x","b":2}`, []Edit{{Key: "model", Delete: true}}, `{"a":1,"b":2}`},
		{"delete last", `{"a":1,"model":"x"}`, []Edit{{Key: "model", Delete: true}}, `{"a":1}`},
		{"delete and add", `{"model":"x","stream":true,"m":[1,{"}":"]"}]}`, []Edit{{Key: "model", Delete: true}, {Key: "stream", Delete: true}, {Key: "anthropic_version", Raw: []byte(`"v"`)}}, `{"m":[1,{"}":"]"}],"anthropic_version":"v"}`},
		{"escaped key", `{"mo\u0064el":"x"}`, []Edit{{Key: "model", Raw: []byte(`"y"`)}}, `{"mo\u0064el":"y"}`},
		// Issue 11: what the SDKs send to a bedrock record. Both deletions
		// used to remove the comma between model and stream, and EditTop
		// panicked with "slice bounds out of range".
		{"bedrock: delete adjacent last members", `{"max_tokens":50,"messages":[{"role":"user","content":"hi"}],"model":"claude-x","stream":true}`,
			[]Edit{{Key: "model", Delete: true}, {Key: "stream", Delete: true}, {Key: "anthropic_version", Raw: []byte(`"bedrock-2023-05-31"`)}},
			`{"max_tokens":50,"messages":[{"role":"user","content":"hi"}],"anthropic_version":"bedrock-2023-05-31"}`},
		{"delete adjacent last members, reverse order", `{"a":1,"model":"x","stream":true}`, []Edit{{Key: "stream", Delete: true}, {Key: "model", Delete: true}}, `{"a":1}`},
		{"delete adjacent last members with whitespace", "{\n  \"a\": 1,\n  \"model\": \"x\" ,\n  \"stream\": true\n}\n", []Edit{{Key: "model", Delete: true}, {Key: "stream", Delete: true}}, "{\n  \"a\": 1\n}\n"},
		{"delete adjacent first members", `{"model":"x","stream":true,"a":1}`, []Edit{{Key: "model", Delete: true}, {Key: "stream", Delete: true}}, `{"a":1}`},
		{"delete every member", `{ "model":"x" , "stream":true }`, []Edit{{Key: "model", Delete: true}, {Key: "stream", Delete: true}}, `{  }`},
		{"delete every member and add", `{"model":"x","stream":true}`, []Edit{{Key: "model", Delete: true}, {Key: "stream", Delete: true}, {Key: "v", Raw: []byte(`1`)}}, `{"v":1}`},
		{"delete first and last around a kept one", `{"model":"x","a":1,"stream":true}`, []Edit{{Key: "model", Delete: true}, {Key: "stream", Delete: true}}, `{"a":1}`},
		{"replace and delete neighbours", `{"a":1,"model":"x","stream":true}`, []Edit{{Key: "model", Raw: []byte(`"y"`)}, {Key: "stream", Delete: true}}, `{"a":1,"model":"y"}`},
		{"same key twice: last wins (set then delete)", `{"a":1,"model":"x"}`, []Edit{{Key: "model", Raw: []byte(`"y"`)}, {Key: "model", Delete: true}}, `{"a":1}`},
		{"same key twice: last wins (delete then set)", `{"model":"x","a":1}`, []Edit{{Key: "model", Delete: true}, {Key: "model", Raw: []byte(`"y"`)}}, `{"model":"y","a":1}`},
		{"same absent key set twice: added once", `{"a":1}`, []Edit{{Key: "b", Raw: []byte(`1`)}, {Key: "b", Raw: []byte(`2`)}}, `{"a":1,"b":2}`},
		{"delete absent key", `{"a":1}`, []Edit{{Key: "model", Delete: true}}, `{"a":1}`},
		{"duplicate key: delete drops every occurrence", `{"model":"x","a":1,"model":"y"}`, []Edit{{Key: "model", Delete: true}}, `{"a":1}`},
		{"duplicate key: set keeps the last occurrence only", `{"model":"x","a":1,"model":"y"}`, []Edit{{Key: "model", Raw: []byte(`"z"`)}}, `{"a":1,"model":"z"}`},
		{"added key is JSON-quoted", `{}`, []Edit{{Key: "a\x01\"<", Raw: []byte(`1`)}}, `{"a\u0001\"\u003c":1}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := EditTop([]byte(tc.in), tc.edits...)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestEditTopRefuses(t *testing.T) {
	t.Parallel()
	if _, err := EditTop([]byte(`[1]`), Edit{Key: "a", Delete: true}); !errors.Is(err, ErrNotObject) {
		t.Fatalf("array: %v", err)
	}
	for _, raw := range []string{``, `{`, `1 2`, `"`} {
		if _, err := EditTop([]byte(`{"a":1}`), Edit{Key: "a", Raw: []byte(raw)}); !errors.Is(err, ErrBadValue) {
			t.Fatalf("raw %q: %v", raw, err)
		}
	}
}

func TestTopValueTakesLastDuplicate(t *testing.T) {
	t.Parallel()
	v, err := TopValue([]byte(`{"model":"x","a":{"model":1},"mo\u0064el":"y"}`), "model")
	if err != nil || string(v) != `"y"` {
		t.Fatalf("%s %v", v, err)
	}
}

// Keys and values the fuzzer's edits choose from: the first keys are
// fixed so that seeds stay meaningful; the body's own keys follow.
var (
	fuzzKeys   = []string{"model", "stream", "anthropic_version", "anthropic_beta", "stream_options", "a", "", "mo\"del", "é", "<&>"}
	fuzzValues = []string{`"bedrock-2023-05-31"`, `1`, `null`, `true`, `"x"`, `{"include_usage":true}`, ` [ 1 , {"}":"]"} ] `, `"\u00e9\",}"`, `-0.5e3`, `[]`, `{}`}
)

// FuzzEditTop checks EditTop against a decode–modify–encode reference: any
// body, any combination of deletions and settings (existing and absent
// keys, the same key several times, first, last and adjacent members). For
// a JSON object the result must be valid JSON that decodes to the body's
// decoding with the edits applied, each edited key at most once at the top
// level; for anything else EditTop may refuse but must not panic.
//
// ops is read three bytes per edit: kind (even: delete, odd: set), key
// index into fuzzKeys followed by the body's keys, value index.
func FuzzEditTop(f *testing.F) {
	bedrock := `{"max_tokens":50,"messages":[{"role":"user","content":"hello"}],"model":"claude-x","stream":true}`
	f.Add([]byte(bedrock), []byte{0, 0, 0, 0, 1, 0, 1, 2, 0})
	f.Add([]byte(bedrock), []byte{0, 1, 0, 0, 0, 0, 1, 3, 9})
	f.Add([]byte(`{"model":"a"}`), []byte{1, 0, 4})
	f.Add([]byte(`{}`), []byte{1, 5, 1, 1, 5, 2})
	f.Add([]byte(`{"a":[1,2,{"b":"}"}],"model":null}`), []byte{0, 0, 0, 1, 4, 5})
	f.Add([]byte(`[1]`), []byte{0, 0, 0})
	f.Add([]byte(`{"a":"\"","model":1}`), []byte{1, 0, 7, 0, 0, 0})
	f.Add([]byte(" {\n \"model\" : \"x\" ,\n \"stream\" : true ,\n \"model\" : 2 \n} \n"), []byte{0, 1, 0, 1, 0, 6})
	f.Add([]byte(`{"mo\u0064el":"x","\u00e9":1,"<&>":2}`), []byte{0, 0, 0, 1, 8, 3, 0, 9, 0})
	f.Fuzz(func(t *testing.T, body, ops []byte) {
		before, keys, ok := decodeObject(body)
		keys = append(append([]string(nil), fuzzKeys...), keys...)
		var edits []Edit
		for i := 0; i+2 < len(ops) && len(edits) < 16; i += 3 {
			e := Edit{Key: keys[int(ops[i+1])%len(keys)]}
			if ops[i]%2 == 0 {
				e.Delete = true
			} else {
				e.Raw = []byte(fuzzValues[int(ops[i+2])%len(fuzzValues)])
			}
			edits = append(edits, e)
		}
		out, err := EditTop(body, edits...) // must not panic, whatever body is
		if !ok {
			return
		}
		if err != nil {
			t.Fatalf("valid object refused: %s: %v", body, err)
		}
		if !json.Valid(out) {
			t.Fatalf("invalid JSON: %s %+v → %s", body, edits, out)
		}
		want := before
		for _, e := range edits {
			if e.Delete {
				delete(want, e.Key)
			} else {
				want[e.Key] = decodeValue(t, e.Raw)
			}
		}
		got, gotKeys, ok := decodeObject(out)
		if !ok {
			t.Fatalf("result is not an object: %s → %s", body, out)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("members differ: %s %+v → %s\ngot  %v\nwant %v", body, edits, out, got, want)
		}
		seen := map[string]int{}
		for _, k := range gotKeys {
			seen[k]++
		}
		for _, e := range edits {
			if seen[e.Key] > 1 {
				t.Fatalf("edited key %q appears %d times: %s", e.Key, seen[e.Key], out)
			}
		}
		for _, k := range keys {
			v, err := TopValue(out, k)
			if err != nil {
				t.Fatalf("TopValue(%s, %q): %v", out, k, err)
			}
			if w, present := want[k]; present != (v != nil) || (present && !reflect.DeepEqual(decodeValue(t, v), w)) {
				t.Fatalf("TopValue(%s, %q) = %s, want %v", out, k, v, w)
			}
		}
	})
}

// decodeObject decodes b with encoding/json (numbers kept as written) when
// it is one JSON object, returning its members (last duplicate wins, as
// encoding/json does) and its top-level keys in order, duplicates included.
func decodeObject(b []byte) (map[string]any, []string, bool) {
	if !json.Valid(b) {
		return nil, nil, false
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	if d.Decode(&m) != nil || m == nil {
		return nil, nil, false
	}
	d = json.NewDecoder(bytes.NewReader(b))
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		return nil, nil, false
	}
	var keys []string
	for d.More() {
		tok, err := d.Token()
		k, isKey := tok.(string)
		var v json.RawMessage
		if err != nil || !isKey || d.Decode(&v) != nil {
			return nil, nil, false
		}
		keys = append(keys, k)
	}
	return m, keys, true
}

func decodeValue(t *testing.T, raw []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("value %s: %v", raw, err)
	}
	return v
}
