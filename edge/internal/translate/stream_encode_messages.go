package translate

// messagesStreamFormat writes Anthropic Messages events: message_start,
// content_block_start / _delta / _stop per part, then at the end
// message_delta (stop_reason, stop_sequence, the final usage) and
// message_stop. message_delta waits for EventDone because an OpenAI member
// tells the final usage after its finish.
type messagesStreamFormat struct{}

func appendMessagesUsage(b []byte, e *streamEncoder) []byte {
	u := e.usage
	b = append(b, `{"input_tokens":`...)
	b = appendInt(b, u.InputTokens)
	b = append(b, `,"cache_creation_input_tokens":`...)
	b = appendInt(b, u.CacheWriteTokens)
	b = append(b, `,"cache_read_input_tokens":`...)
	b = appendInt(b, u.CacheReadTokens)
	b = append(b, `,"output_tokens":`...)
	b = appendInt(b, u.OutputTokens)
	return append(b, '}')
}

func (f *messagesStreamFormat) start(e *streamEncoder, b []byte) []byte {
	b = append(b, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":"...)
	b = appendJSONString(b, "msg_"+e.id)
	b = append(b, `,"type":"message","role":"assistant","model":`...)
	b = appendJSONString(b, e.model)
	b = append(b, `,"content":[],"stop_reason":null,"stop_sequence":null,"usage":`...)
	b = appendMessagesUsage(b, e)
	return append(b, "}}\n\n"...)
}

func (f *messagesStreamFormat) open(e *streamEncoder, b []byte, p *encPart, first string) []byte {
	b = append(b, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":"...)
	b = appendInt(b, int64(p.n))
	if p.tool {
		b = append(b, `,"content_block":{"type":"tool_use","id":`...)
		b = appendJSONString(b, p.id)
		b = append(b, `,"name":`...)
		b = appendJSONString(b, p.name)
		return append(b, `,"input":{}}}`+"\n\n"...)
	}
	b = append(b, `,"content_block":{"type":"text","text":""}}`+"\n\n"...)
	return f.piece(e, b, p, first)
}

func (f *messagesStreamFormat) piece(e *streamEncoder, b []byte, p *encPart, s string) []byte {
	if s == "" {
		return b
	}
	b = append(b, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":"...)
	b = appendInt(b, int64(p.n))
	if p.tool {
		b = append(b, `,"delta":{"type":"input_json_delta","partial_json":`...)
	} else {
		b = append(b, `,"delta":{"type":"text_delta","text":`...)
	}
	b = appendJSONString(b, s)
	return append(b, "}}\n\n"...)
}

func (f *messagesStreamFormat) stop(e *streamEncoder, b []byte, p *encPart) []byte {
	b = append(b, "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":"...)
	b = appendInt(b, int64(p.n))
	return append(b, "}\n\n"...)
}

func (f *messagesStreamFormat) finish(e *streamEncoder, b []byte) []byte { return b }

func (f *messagesStreamFormat) done(e *streamEncoder, b []byte) []byte {
	b = append(b, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"...)
	reason := messagesStreamFinish(e.finish, e.tools > 0)
	b = appendJSONString(b, reason)
	b = append(b, `,"stop_sequence":`...)
	if reason == "stop_sequence" && e.seq != "" {
		b = appendJSONString(b, e.seq)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `},"usage":`...)
	b = appendMessagesUsage(b, e)
	b = append(b, "}\n\n"...)
	return append(b, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"...)
}

// messagesStreamFinish is the stop_reason for f (R-FMT-2); an unknown
// finish reads as tool_use when the answer called tools, else end_turn.
func messagesStreamFinish(f Finish, tools bool) string {
	switch f {
	case FinishLength:
		return "max_tokens"
	case FinishToolCalls:
		return "tool_use"
	case FinishStopSequence:
		return "stop_sequence"
	case FinishContentFilter:
		return "refusal"
	case FinishUnknown:
		if tools {
			return "tool_use"
		}
	}
	return "end_turn"
}
