package translate

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"weir.dev/routing"
)

// TestRenderGeminiEmbed_RFMT7: an OpenAI embeddings request becomes one
// batchEmbedContents request per input, in order.
func TestRenderGeminiEmbed_RFMT7(t *testing.T) {
	tests := []struct {
		name, body, model, want string
	}{
		{"one string", `{"model":"text-embedding-3-small","input":"The food was delicious"}`, "gemini-embedding-001",
			`{"requests":[{"model":"models/gemini-embedding-001","content":{"parts":[{"text":"The food was delicious"}]}}]}`},
		{"list with dimensions, user dropped", `{"input":["a","b <&>"],"dimensions":768,"user":"u-1","encoding_format":"base64"}`, "models/text-embedding-004",
			`{"requests":[{"model":"models/text-embedding-004","content":{"parts":[{"text":"a"}]},"outputDimensionality":768},{"model":"models/text-embedding-004","content":{"parts":[{"text":"b \u003c\u0026\u003e"}]},"outputDimensionality":768}]}`},
		{"float format, null dimensions", `{"input":[""],"encoding_format":"float","dimensions":null}`, "m",
			`{"requests":[{"model":"models/m","content":{"parts":[{"text":""}]}}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := RenderGeminiEmbed([]byte(tt.body), tt.model)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

// TestRenderGeminiEmbedRefuses_RFMT7: what Gemini cannot be told is a
// *BadRequest naming the field.
func TestRenderGeminiEmbedRefuses_RFMT7(t *testing.T) {
	tests := []struct{ body, field, msg string }{
		{`{"input":[1,2,3]}`, "input", "token arrays cannot be sent to a gemini member"},
		{`{"input":[[1,2],[3]]}`, "input", "token arrays cannot be sent to a gemini member"},
		{`{"input":["ok",[3]]}`, "input", "token arrays cannot be sent to a gemini member"},
		{`{"model":"x"}`, "input", "required"},
		{`{"input":[]}`, "input", "must not be empty"},
		{`{"input":["a",{"text":"b"}]}`, "input[1]", "must be a string"},
		{`{"input":42}`, "input", ""},
		{`{"input":"a","dimensions":0}`, "dimensions", ""},
		{`{"input":"a","dimensions":"256"}`, "dimensions", ""},
		{`{"input":"a","encoding_format":"int8"}`, "encoding_format", ""},
		{`["input"]`, "", ""},
		{`not json`, "", ""},
	}
	for _, tt := range tests {
		_, err := RenderGeminiEmbed([]byte(tt.body), "m")
		var br *BadRequest
		if !errors.As(err, &br) {
			t.Errorf("%s: %v, want a *BadRequest", tt.body, err)
			continue
		}
		if br.Field != tt.field || tt.msg != "" && br.Msg != tt.msg {
			t.Errorf("%s: %q %q", tt.body, br.Field, br.Msg)
		}
	}
}

func TestEmbedShape_RFMT7(t *testing.T) {
	type shape struct {
		b64    bool
		inputs int
	}
	for body, want := range map[string]shape{
		`{"input":"a","encoding_format":"base64"}`:      {true, 1},
		`{"input":["a","b"],"encoding_format":"float"}`: {false, 2},
		`{"input":"a"}`:                {false, 1},
		`{"input":[[1,2]]}`:            {false, 0},
		`{"encoding_format":"BASE64"}`: {false, 0},
		`{"encoding_format":1}`:        {false, 0},
		`garbage`:                      {false, 0},
	} {
		if b64, n := EmbedShape([]byte(body)); b64 != want.b64 || n != want.inputs {
			t.Errorf("%s: (%v, %d), want %v", body, b64, n, want)
		}
	}
}

const geminiEmbedAnswer = `{"embeddings":[{"values":[0.013168523, -0.008711934, 1e-7, 3]},{"values":[-0.5,0.25]}]}`

// TestEncodeGeminiEmbedFloat_RFMT7: vectors in OpenAI's shape, each number
// as Gemini wrote it; usage zero (Gemini gives none).
func TestEncodeGeminiEmbedFloat_RFMT7(t *testing.T) {
	out, u, err := EncodeGeminiEmbed([]byte(geminiEmbedAnswer), "text-embedding-3-small", false, 2)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.013168523,-0.008711934,1e-7,3]},{"object":"embedding","index":1,"embedding":[-0.5,0.25]}],"model":"text-embedding-3-small","usage":{"prompt_tokens":0,"total_tokens":0}}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
	if u != (routing.Usage{}) {
		t.Errorf("usage %+v", u)
	}
}

// TestEncodeGeminiEmbedBase64_RFMT7: with base64, each vector is the
// little-endian float32s of its values.
func TestEncodeGeminiEmbedBase64_RFMT7(t *testing.T) {
	out, _, err := EncodeGeminiEmbed([]byte(geminiEmbedAnswer), "m", true, 0)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Data []struct {
			Index     int    `json:"index"`
			Embedding string `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatal(err)
	}
	want := [][]float32{{0.013168523, -0.008711934, 1e-7, 3}, {-0.5, 0.25}}
	if len(r.Data) != len(want) {
		t.Fatalf("%s", out)
	}
	for i, d := range r.Data {
		raw, err := base64.StdEncoding.DecodeString(d.Embedding)
		if err != nil || d.Index != i || len(raw) != 4*len(want[i]) {
			t.Fatalf("%d: %v %s", i, err, out)
		}
		for j, w := range want[i] {
			if got := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*j:])); got != w {
				t.Errorf("%d.%d: %v, want %v", i, j, got, w)
			}
		}
	}
}

func TestEncodeGeminiEmbedRefuses_RFMT7(t *testing.T) {
	tests := []struct {
		body  string
		b64   bool
		count int
	}{
		{geminiEmbedAnswer, false, 3},
		{`{"embeddings":[{"values":["x"]}]}`, false, 0},
		{`{"embeddings":[{"values":[1e40]}]}`, true, 0},
		{`{"embedding":{"values":[1]}}`, false, 0},
		{`[]`, false, 0},
		{`{"error":{"code":400,"message":"bad"}}`, false, 0},
	}
	for _, tt := range tests {
		if out, _, err := EncodeGeminiEmbed([]byte(tt.body), "m", tt.b64, tt.count); err == nil {
			t.Errorf("%s: %s", tt.body, out)
		}
	}
	// Empty vectors and no vectors at all are still well-formed answers.
	out, _, err := EncodeGeminiEmbed([]byte(`{"embeddings":[{}]}`), "m", false, 1)
	if err != nil || !strings.Contains(string(out), `"embedding":[]`) {
		t.Errorf("%s %v", out, err)
	}
	out, _, err = EncodeGeminiEmbed([]byte(`{"embeddings":[{}]}`), "m", true, 1)
	if err != nil || !strings.Contains(string(out), `"embedding":""`) {
		t.Errorf("%s %v", out, err)
	}
}

// TestEmbedOpenAISDK_RFMT7: the official openai-go client reads the
// translated answer, served over loopback, as the vectors Gemini gave.
func TestEmbedOpenAISDK_RFMT7(t *testing.T) {
	out, _, err := EncodeGeminiEmbed([]byte(geminiEmbedAnswer), "text-embedding-3-small", false, 2)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(out)
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("k"), option.WithMaxRetries(0))
	r, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "text-embedding-3-small",
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"a", "b"}}})
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(len(r.Data), r.Data[0].Embedding, r.Data[1].Index, r.Data[1].Embedding, r.Model)
	if want := "2 [0.013168523 -0.008711934 1e-07 3] 1 [-0.5 0.25]text-embedding-3-small"; got != want {
		t.Errorf("SDK read %s, want %s", got, want)
	}
}
