package translate

import "strconv"

// responsesStreamFormat writes Responses API events ("event: <type>\ndata:
// {json}\n\n", each with its sequence_number): response.created and
// response.in_progress; per text part a message item
// (response.output_item.added, response.content_part.added,
// response.output_text.delta…, response.output_text.done,
// response.content_part.done, response.output_item.done); per tool call a
// function_call item (response.output_item.added,
// response.function_call_arguments.delta…, …arguments.done,
// response.output_item.done); at EventDone response.completed, or
// response.incomplete when the output cap or the content filter ended the
// answer, carrying the whole response with its usage.
type responsesStreamFormat struct {
	seq int64
}

// head appends the start of an event of type typ, up to its
// sequence_number included.
func (f *responsesStreamFormat) head(b []byte, typ string) []byte {
	b = append(b, "event: "...)
	b = append(b, typ...)
	b = append(b, "\ndata: {\"type\":\""...)
	b = append(b, typ...)
	b = append(b, `","sequence_number":`...)
	b = appendInt(b, f.seq)
	f.seq++
	return b
}

// itemRef appends the item_id and output_index of p.
func itemRef(b []byte, p *encPart) []byte {
	b = append(b, `,"item_id":`...)
	b = appendJSONString(b, p.itemID)
	b = append(b, `,"output_index":`...)
	return appendInt(b, int64(p.n))
}

// response appends the response object.
func (f *responsesStreamFormat) response(e *streamEncoder, b []byte, status string) []byte {
	b = append(b, `,"response":{"id":`...)
	b = appendJSONString(b, "resp_"+e.id)
	b = append(b, `,"object":"response","created_at":`...)
	b = appendInt(b, e.created)
	b = append(b, `,"status":"`...)
	b = append(b, status...)
	b = append(b, `","error":null,"incomplete_details":`...)
	switch {
	case status != "incomplete":
		b = append(b, "null"...)
	case e.finish == FinishLength:
		b = append(b, `{"reason":"max_output_tokens"}`...)
	default:
		b = append(b, `{"reason":"content_filter"}`...)
	}
	b = append(b, `,"model":`...)
	b = appendJSONString(b, e.model)
	b = append(b, `,"output":[`...)
	if e.done {
		for i, p := range e.order {
			if i > 0 {
				b = append(b, ',')
			}
			b = f.item(b, p, "completed")
		}
	}
	b = append(b, `],"parallel_tool_calls":true,"tool_choice":"auto","tools":[],"usage":`...)
	if !e.done {
		return append(b, "null}"...)
	}
	u := e.usage
	in := callerInput(u)
	b = append(b, `{"input_tokens":`...)
	b = appendInt(b, in)
	b = append(b, `,"input_tokens_details":{"cached_tokens":`...)
	b = appendInt(b, u.CacheReadTokens)
	b = append(b, `},"output_tokens":`...)
	b = appendInt(b, u.OutputTokens)
	b = append(b, `,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":`...)
	b = appendInt(b, in+u.OutputTokens)
	return append(b, "}}"...)
}

// item appends p's output item: empty while in progress, with the text or
// arguments kept when completed.
func (f *responsesStreamFormat) item(b []byte, p *encPart, status string) []byte {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, p.itemID)
	if p.tool {
		b = append(b, `,"type":"function_call","status":"`...)
		b = append(b, status...)
		b = append(b, `","call_id":`...)
		b = appendJSONString(b, p.id)
		b = append(b, `,"name":`...)
		b = appendJSONString(b, p.name)
		b = append(b, `,"arguments":`...)
		if status == "completed" {
			b = appendJSONString(b, p.kept.String())
		} else {
			b = append(b, `""`...)
		}
		return append(b, '}')
	}
	b = append(b, `,"type":"message","status":"`...)
	b = append(b, status...)
	b = append(b, `","role":"assistant","content":[`...)
	if status == "completed" {
		b = f.textPart(b, p)
	}
	return append(b, "]}"...)
}

func (f *responsesStreamFormat) textPart(b []byte, p *encPart) []byte {
	b = append(b, `{"type":"output_text","text":`...)
	b = appendJSONString(b, p.kept.String())
	return append(b, `,"annotations":[]}`...)
}

func (f *responsesStreamFormat) start(e *streamEncoder, b []byte) []byte {
	b = f.head(b, "response.created")
	b = f.response(e, b, "in_progress")
	b = append(b, "}\n\n"...)
	b = f.head(b, "response.in_progress")
	b = f.response(e, b, "in_progress")
	return append(b, "}\n\n"...)
}

func (f *responsesStreamFormat) open(e *streamEncoder, b []byte, p *encPart, first string) []byte {
	if p.tool {
		p.itemID = "fc_" + e.id + "_" + strconv.Itoa(p.n)
	} else {
		p.itemID = "msg_" + e.id + "_" + strconv.Itoa(p.n)
	}
	b = f.head(b, "response.output_item.added")
	b = append(b, `,"output_index":`...)
	b = appendInt(b, int64(p.n))
	b = append(b, `,"item":`...)
	b = f.item(b, p, "in_progress")
	b = append(b, "}\n\n"...)
	if p.tool {
		return b
	}
	b = f.head(b, "response.content_part.added")
	b = itemRef(b, p)
	b = append(b, `,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}}`+"\n\n"...)
	return f.piece(e, b, p, first)
}

func (f *responsesStreamFormat) piece(e *streamEncoder, b []byte, p *encPart, s string) []byte {
	if s == "" {
		return b
	}
	if p.tool {
		b = f.head(b, "response.function_call_arguments.delta")
		b = itemRef(b, p)
	} else {
		b = f.head(b, "response.output_text.delta")
		b = itemRef(b, p)
		b = append(b, `,"content_index":0,"logprobs":[]`...)
	}
	b = append(b, `,"delta":`...)
	b = appendJSONString(b, s)
	return append(b, "}\n\n"...)
}

func (f *responsesStreamFormat) stop(e *streamEncoder, b []byte, p *encPart) []byte {
	if p.tool {
		b = f.head(b, "response.function_call_arguments.done")
		b = itemRef(b, p)
		b = append(b, `,"name":`...)
		b = appendJSONString(b, p.name)
		b = append(b, `,"arguments":`...)
		b = appendJSONString(b, p.kept.String())
		b = append(b, "}\n\n"...)
	} else {
		b = f.head(b, "response.output_text.done")
		b = itemRef(b, p)
		b = append(b, `,"content_index":0,"logprobs":[],"text":`...)
		b = appendJSONString(b, p.kept.String())
		b = append(b, "}\n\n"...)
		b = f.head(b, "response.content_part.done")
		b = itemRef(b, p)
		b = append(b, `,"content_index":0,"part":`...)
		b = f.textPart(b, p)
		b = append(b, "}\n\n"...)
	}
	b = f.head(b, "response.output_item.done")
	b = append(b, `,"output_index":`...)
	b = appendInt(b, int64(p.n))
	b = append(b, `,"item":`...)
	b = f.item(b, p, "completed")
	return append(b, "}\n\n"...)
}

func (f *responsesStreamFormat) finish(e *streamEncoder, b []byte) []byte { return b }

func (f *responsesStreamFormat) done(e *streamEncoder, b []byte) []byte {
	typ, status := "response.completed", "completed"
	if e.finish == FinishLength || e.finish == FinishContentFilter {
		typ, status = "response.incomplete", "incomplete"
	}
	b = f.head(b, typ)
	b = f.response(e, b, status)
	return append(b, "}\n\n"...)
}
