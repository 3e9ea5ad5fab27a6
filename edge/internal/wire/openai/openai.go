// Package openai is the adapter for the openai wire format: OpenAI, Azure
// OpenAI (deployment URLs with api-version, and the v1 path), vLLM and any
// OpenAI-compatible server.
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"

	"weir.dev/edge/internal/wire"
	"weir.dev/routing"
)

// Adapter implements wire.Adapter for the openai wire format.
type Adapter struct{}

var _ wire.Adapter = Adapter{}

// path is the resource of an endpoint below an OpenAI base URL.
func path(ep routing.Endpoint) (string, error) {
	switch ep {
	case routing.EndpointChatCompletions:
		return "/chat/completions", nil
	case routing.EndpointEmbeddings:
		return "/embeddings", nil
	case routing.EndpointResponses:
		return "/responses", nil
	}
	return "", fmt.Errorf("openai: endpoint %v not served", ep)
}

// URL is the upstream URL of an endpoint for a member. A member with an
// api-version is an Azure OpenAI deployment: base/deployments/<model>/<path>
// ?api-version=<v>, where model is the deployment name from the member's
// model map. Otherwise the base URL is an OpenAI-style root ending in /v1
// (OpenAI, vLLM, Azure's /openai/v1 path) and the model goes in the body.
func URL(base string, ep routing.Endpoint, model, apiVersion string) (string, error) {
	p, err := path(ep)
	if err != nil {
		return "", err
	}
	if apiVersion == "" {
		return rootURL(base, ep, p), nil
	}
	base = strings.TrimRight(base, "/")
	return base + "/deployments/" + url.PathEscape(model) + p + "?api-version=" + url.QueryEscape(apiVersion), nil
}

// urlKey is a member's base URL and an endpoint below it.
type urlKey struct {
	base string
	ep   routing.Endpoint
}

// rootURLs memoizes URL for members without an api-version, whose URL
// depends on the base URL and the endpoint alone: it is read on every
// attempt and made once per base and endpoint. A stored map is never
// changed (a new entry stores a copy); it holds at most maxRootURLs
// entries, past which further URLs are made on each call.
var rootURLs atomic.Pointer[map[urlKey]string]

const maxRootURLs = 1024

// rootURL is base, less trailing slashes, followed by p, the path of ep.
func rootURL(base string, ep routing.Endpoint, p string) string {
	k := urlKey{base, ep}
	m := rootURLs.Load()
	var known map[urlKey]string
	if m != nil {
		known = *m
	}
	if u, ok := known[k]; ok {
		return u
	}
	u := strings.TrimRight(base, "/") + p
	if len(known) < maxRootURLs {
		next := make(map[urlKey]string, len(known)+1)
		maps.Copy(next, known)
		next[k] = u
		rootURLs.CompareAndSwap(m, &next) // losing a race only leaves k out
	}
	return u
}

// Build implements wire.Adapter.
func (Adapter) Build(ctx context.Context, req *wire.Request, m *routing.Member, model string) (*http.Request, error) {
	u, err := URL(m.BaseURL, req.Endpoint, model, m.APIVersion)
	if err != nil {
		return nil, err
	}
	var edits []wire.Edit
	if model != req.Model {
		q, _ := json.Marshal(model)
		edits = append(edits, wire.Edit{Key: "model", Raw: q})
	}
	body := req.Body
	switch {
	case req.Stream && req.Endpoint == routing.EndpointChatCompletions && !req.IncludeUsage && len(edits) == 0:
		// The usual streamed chat: the caller named no stream_options, so
		// the member is appended without EditTop's reading of every key.
		if b, ok := wire.SetAbsent(body, "stream_options", includeUsage); ok {
			body = b
			break
		}
		fallthrough
	case req.Stream && req.Endpoint == routing.EndpointChatCompletions && !req.IncludeUsage:
		opts, err := streamOptionsWithUsage(req.Body)
		if err != nil {
			return nil, err
		}
		edits = append(edits, wire.Edit{Key: "stream_options", Raw: opts})
	}
	if len(edits) > 0 {
		if body, err = wire.EditTop(req.Body, edits...); err != nil {
			return nil, err
		}
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	wire.SetRequestHeaders(r.Header, req.Stream)
	if v := req.Header.Get("OpenAI-Beta"); v != "" {
		r.Header.Set("OpenAI-Beta", v)
	}
	return r, nil
}

// streamOptionsWithUsage returns the caller's stream_options with
// include_usage set, keeping any other option the caller chose.
func streamOptionsWithUsage(body []byte) ([]byte, error) {
	raw, err := wire.TopValue(body, "stream_options")
	if err != nil {
		return nil, err
	}
	if len(raw) == 0 || string(raw) == "null" {
		return includeUsage, nil
	}
	var opts map[string]json.RawMessage
	if err := json.Unmarshal(raw, &opts); err != nil {
		return nil, err
	}
	opts["include_usage"] = json.RawMessage("true")
	return json.Marshal(opts)
}

// includeUsage is the stream_options the edge sends when the caller named
// none (shared: never changed in place).
var includeUsage = []byte(`{"include_usage":true}`)

// Relay implements wire.Adapter.
func (Adapter) Relay(req *wire.Request, resp *http.Response, out wire.Out) (routing.Usage, error) {
	if !req.Stream || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return wire.RelayBody(resp, out, wire.OpenAIBodyUsage)
	}
	wire.StartFrom(out, resp.StatusCode, resp.Header, true)
	rd := wire.NewSSEReader(resp.Body)
	defer rd.Release() // every event was written out, none is kept
	var usage routing.Usage
	done := false
	for {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			if !done {
				// A stream that ends before its last event was cut (R-FAIL-11).
				return usage, io.ErrUnexpectedEOF
			}
			return usage, nil
		}
		if err != nil {
			return usage, err
		}
		if u, ok, usageOnly := wire.OpenAIChunkUsage(ev.Data); ok {
			usage = u
			if usageOnly && !req.IncludeUsage {
				continue // the caller did not ask for the usage chunk
			}
		}
		// Chat completions end with "data: [DONE]" (after the usage chunk);
		// the Responses API with a terminal response event carrying the
		// usage. The answer is complete before the caller sees its end.
		if !done && (string(ev.Data) == "[DONE]" || ev.Name == "response.completed" || ev.Name == "response.failed" || ev.Name == "response.incomplete") {
			done = true
			out.Complete(usage)
		}
		if _, err := out.Write(ev.Raw); err != nil {
			return usage, err
		}
		if !rd.Buffered() {
			out.Flush() // every event reaches the caller as it arrives
		}
	}
}
