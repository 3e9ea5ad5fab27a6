package routing

// Features are the parts of a chat request whose absence would change the
// answer's shape (R-FMT-3): a member whose wire format cannot say them is
// not eligible for the call when the call is translated to it, like a
// model it does not serve. Hints that only tune a provider (cache_control,
// prompt_cache_key, service_tier, …) are not features: translation drops
// them. The edge reads a call's features from its body once, with the
// fields it routes by (R-SEC-5).
type Features uint16

const (
	// FeatureN is OpenAI's n > 1 (several choices).
	FeatureN Features = 1 << iota
	// FeatureLogprobs is OpenAI's logprobs or top_logprobs.
	FeatureLogprobs
	// FeatureJSONSchema is a response_format (or Responses text.format)
	// that asks for output following a JSON schema.
	FeatureJSONSchema
	// FeatureAudio is audio output or audio input.
	FeatureAudio
)

// featureFields are the request fields of each feature, in bit order, as
// the 400 weir_unsupported_feature answer names them.
var featureFields = [...]string{"n", "logprobs", "response_format", "audio"}

// Field names the request field of the lowest feature in f, "" when f is
// empty.
func (f Features) Field() string {
	for i, name := range featureFields {
		if f&(1<<i) != 0 {
			return name
		}
	}
	return ""
}

// Lacks returns the features of f that a member of wire format w cannot
// serve for a caller on endpoint e: none when the call goes to w as sent
// (R-FMT-1, the member reads the caller's own body); otherwise what w
// cannot say. Anthropic and Bedrock say none of them; Gemini enforces a
// JSON schema (responseSchema) but has no n, logprobs or audio output in
// the translation; an openai member says them all.
func (w WireFormat) Lacks(e Endpoint, f Features) Features {
	if f == 0 || e.Native(w) {
		return 0
	}
	switch w {
	case WireOpenAI:
		return 0
	case WireGemini:
		return f &^ FeatureJSONSchema
	}
	return f
}

// ServesEndpoint reports whether a member of wire format w can answer a
// call on endpoint e at all: every chat member answers every chat caller
// (§11); embeddings go to openai members as sent and to gemini members
// translated (R-FMT-7).
func (w WireFormat) ServesEndpoint(e Endpoint) bool {
	switch e {
	case EndpointChatCompletions, EndpointResponses, EndpointMessages:
		return w != WireUnknown
	case EndpointEmbeddings:
		return w == WireOpenAI || w == WireGemini
	}
	return false
}
