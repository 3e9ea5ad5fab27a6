package translate

// chatStreamFormat writes Chat Completions chunks: "data: {json}\n\n"
// lines ending with "data: [DONE]\n\n". The first chunk says the role;
// tool calls are numbered among tool calls only, the first chunk of each
// carrying its id and name; the finish_reason chunk is written at the
// finish, the usage chunk (choices: []) only when the caller asked for it,
// right before [DONE].
type chatStreamFormat struct {
	includeUsage bool
}

// chunkHead appends the start of a chunk up to its choices.
func (f *chatStreamFormat) chunkHead(e *streamEncoder, b []byte) []byte {
	b = append(b, `data: {"id":`...)
	b = appendJSONString(b, "chatcmpl-"+e.id)
	b = append(b, `,"object":"chat.completion.chunk","created":`...)
	b = appendInt(b, e.created)
	b = append(b, `,"model":`...)
	b = appendJSONString(b, e.model)
	return append(b, `,"choices":`...)
}

func (f *chatStreamFormat) start(e *streamEncoder, b []byte) []byte {
	b = f.chunkHead(e, b)
	return append(b, `[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`+"\n\n"...)
}

func (f *chatStreamFormat) open(e *streamEncoder, b []byte, p *encPart, first string) []byte {
	if !p.tool {
		return f.piece(e, b, p, first)
	}
	b = f.chunkHead(e, b)
	b = append(b, `[{"index":0,"delta":{"tool_calls":[{"index":`...)
	b = appendInt(b, int64(p.toolN))
	b = append(b, `,"id":`...)
	b = appendJSONString(b, p.id)
	b = append(b, `,"type":"function","function":{"name":`...)
	b = appendJSONString(b, p.name)
	return append(b, `,"arguments":""}}]},"finish_reason":null}]}`+"\n\n"...)
}

func (f *chatStreamFormat) piece(e *streamEncoder, b []byte, p *encPart, s string) []byte {
	if s == "" {
		return b
	}
	b = f.chunkHead(e, b)
	if p.tool {
		b = append(b, `[{"index":0,"delta":{"tool_calls":[{"index":`...)
		b = appendInt(b, int64(p.toolN))
		b = append(b, `,"function":{"arguments":`...)
		b = appendJSONString(b, s)
		return append(b, `}}]},"finish_reason":null}]}`+"\n\n"...)
	}
	b = append(b, `[{"index":0,"delta":{"content":`...)
	b = appendJSONString(b, s)
	return append(b, `},"finish_reason":null}]}`+"\n\n"...)
}

func (f *chatStreamFormat) stop(e *streamEncoder, b []byte, p *encPart) []byte { return b }

func (f *chatStreamFormat) finish(e *streamEncoder, b []byte) []byte {
	b = f.chunkHead(e, b)
	b = append(b, `[{"index":0,"delta":{},"finish_reason":`...)
	b = appendJSONString(b, chatStreamFinish(e.finish, e.tools > 0))
	return append(b, `}]}`+"\n\n"...)
}

func (f *chatStreamFormat) done(e *streamEncoder, b []byte) []byte {
	if f.includeUsage {
		u := e.usage
		in := callerInput(u)
		b = f.chunkHead(e, b)
		b = append(b, `[],"usage":{"prompt_tokens":`...)
		b = appendInt(b, in)
		b = append(b, `,"completion_tokens":`...)
		b = appendInt(b, u.OutputTokens)
		b = append(b, `,"total_tokens":`...)
		b = appendInt(b, in+u.OutputTokens)
		b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
		b = appendInt(b, u.CacheReadTokens)
		b = append(b, `}}}`+"\n\n"...)
	}
	return append(b, "data: [DONE]\n\n"...)
}

// chatStreamFinish is the finish_reason for f (R-FMT-2); an unknown
// finish reads as tool_calls when the answer called tools, else stop.
func chatStreamFinish(f Finish, tools bool) string {
	switch f {
	case FinishLength:
		return "length"
	case FinishToolCalls:
		return "tool_calls"
	case FinishContentFilter:
		return "content_filter"
	case FinishUnknown:
		if tools {
			return "tool_calls"
		}
	}
	return "stop"
}
