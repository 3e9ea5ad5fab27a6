package wire

import (
	"encoding/json"
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

func FuzzEditTop(f *testing.F) {
	for _, s := range []string{`{"model":"a"}`, `{}`, `{"a":[1,2,{"b":"}"}],"model":null}`, `[1]`, `{"a":"\"","model":1}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var before map[string]any
		if json.Unmarshal([]byte(s), &before) != nil {
			_, _ = EditTop([]byte(s), Edit{Key: "model", Raw: []byte(`"z"`)}) // must not panic
			return
		}
		out, err := EditTop([]byte(s), Edit{Key: "model", Raw: []byte(`"z"`)}, Edit{Key: "stream", Delete: true})
		if err != nil {
			t.Fatalf("valid object refused: %v", err)
		}
		var after map[string]any
		if err := json.Unmarshal(out, &after); err != nil {
			t.Fatalf("edit broke JSON: %s → %s: %v", s, out, err)
		}
		if after["model"] != "z" {
			t.Fatalf("model not set: %s", out)
		}
		if _, ok := after["stream"]; ok {
			t.Fatalf("stream not deleted: %s", out)
		}
		delete(before, "model")
		delete(before, "stream")
		delete(after, "model")
		if !reflect.DeepEqual(before, after) {
			t.Fatalf("other members changed: %s → %s", s, out)
		}
	})
}
