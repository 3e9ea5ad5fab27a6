package gateway

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	telemetryv1 "weir.dev/proto/gen/weir/telemetry/v1"
	"weir.dev/routing"
	"weir.dev/tracing"
)

// Tracing (Config.Tracer): each call is a server span, and each attempt
// that goes out (or is about to) a client span under it. Names and the
// gen_ai.* attributes follow the OpenTelemetry GenAI semantic conventions
// ("{operation} {model}"); weir.* attributes are Weir's own. No attribute
// ever holds a header, a key or a body: only names, counts, codes and
// statuses.
//
// The caller's W3C trace context (traceparent, tracestate) is the call
// span's parent. Upstream, each attempt's request carries the attempt
// span's own context, written by the gateway: the caller's headers are
// never passed on (the adapters build upstream headers from an allow-list).
//
// With no tracer, none of this runs: callRun.traced stays nil and every
// hook below is behind that check, so a call allocates nothing more.

// callSpan is a call's span and the context holding it, the parent of its
// attempts' spans.
type callSpan struct {
	span trace.Span
	ctx  context.Context
}

// Attribute keys. gen_ai.system is the convention's older name of the
// provider, kept because trace backends still key GenAI views on it;
// gen_ai.provider.name is its newer name, set alongside.
const (
	attrGenAISystem       = attribute.Key("gen_ai.system")
	attrGenAIProvider     = attribute.Key("gen_ai.provider.name")
	attrGenAIOperation    = attribute.Key("gen_ai.operation.name")
	attrGenAIRequestModel = attribute.Key("gen_ai.request.model")
	attrGenAIRespModel    = attribute.Key("gen_ai.response.model")
	attrGenAIInputTokens  = attribute.Key("gen_ai.usage.input_tokens")
	attrGenAIOutputTokens = attribute.Key("gen_ai.usage.output_tokens")
	attrHTTPStatus        = attribute.Key("http.response.status_code")
	attrErrorType         = attribute.Key("error.type")
	attrServerAddress     = attribute.Key("server.address")
	attrURLPath           = attribute.Key("url.path")
	attrCallID            = attribute.Key("weir.call_id")
	attrEdge              = attribute.Key("weir.edge")
	attrTenant            = attribute.Key("weir.tenant")
	attrRecord            = attribute.Key("weir.record")
	attrMember            = attribute.Key("weir.member")
	attrAttempts          = attribute.Key("weir.attempts")
	attrOutcome           = attribute.Key("weir.outcome")
	attrStream            = attribute.Key("weir.stream")
	attrTranslated        = attribute.Key("weir.translated")
	attrAttemptIndex      = attribute.Key("weir.attempt.index")
	attrAttemptOutcome    = attribute.Key("weir.attempt.outcome")
	attrAttemptReason     = attribute.Key("weir.attempt.reason")
)

// operation is the GenAI operation name of a call on endpoint ep.
func operation(ep routing.Endpoint) string {
	if ep == routing.EndpointEmbeddings {
		return "embeddings"
	}
	return "chat"
}

// genAISystem is the GenAI convention's name of the provider behind m:
// by wire format, with Azure OpenAI (an api-version) and Vertex AI (a
// Google service account) told apart from OpenAI and the Gemini API.
func genAISystem(m *routing.Member) string {
	switch m.Format() {
	case routing.WireOpenAI:
		if m.APIVersion != "" {
			return "az.ai.openai"
		}
		return "openai"
	case routing.WireAnthropic:
		return "anthropic"
	case routing.WireBedrock:
		return "aws.bedrock"
	case routing.WireGemini:
		if m.Auth.Kind == routing.AuthGoogleServiceAccount {
			return "gcp.vertex_ai"
		}
		return "gcp.gemini"
	}
	return "_OTHER"
}

// startSpan starts the call's span, a child of the caller's trace context
// when its request has one.
func (c *callRun) startSpan() {
	ctx := tracing.Propagator().Extract(c.req.Context(), propagation.HeaderCarrier(c.req.Header))
	c.traced = &callSpan{}
	c.traced.ctx, c.traced.span = c.gw.cfg.Tracer.Start(ctx, operation(c.endpoint), trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attrGenAIOperation.String(operation(c.endpoint)), attrCallID.String(c.id),
			attrURLPath.String(c.endpoint.String()), attrEdge.String(c.gw.cfg.EdgeID)))
}

// endSpan ends the call's span with what the call's record says: tenant,
// model, the member that answered (else the last tried), usage, attempts
// and outcome. A failed call (or one of unknown outcome) has error status.
func (c *callRun) endSpan() {
	s := c.traced.span
	op := operation(c.endpoint)
	if c.table != nil {
		s.SetAttributes(attrTenant.String(c.table.TenantName))
	}
	if c.request != nil {
		s.SetName(op + " " + c.request.Model)
		s.SetAttributes(attrGenAIRequestModel.String(c.request.Model), attrStream.Bool(c.request.Stream))
	}
	if c.call != nil {
		s.SetAttributes(attrAttempts.Int(c.call.Sent()))
		if m := c.call.Served(); m != nil {
			s.SetAttributes(memberAttrs(m)...)
			s.SetAttributes(attrGenAIRespModel.String(m.UpstreamModel(c.call.Model())),
				attrTranslated.Bool(!c.endpoint.Native(m.Format())),
				attrGenAIInputTokens.Int64(c.usage.InputTokens), attrGenAIOutputTokens.Int64(c.usage.OutputTokens))
		} else if m := c.call.LastTried(); m != nil {
			s.SetAttributes(memberAttrs(m)...)
		}
	}
	outcome := strings.ToLower(strings.TrimPrefix(c.outcome.String(), "CALL_OUTCOME_"))
	s.SetAttributes(attrHTTPStatus.Int(c.status), attrOutcome.String(outcome))
	if c.errorCode != "" {
		s.SetAttributes(attrErrorType.String(c.errorCode))
	}
	switch c.outcome {
	case telemetryv1.CallOutcome_CALL_OUTCOME_FAILED, telemetryv1.CallOutcome_CALL_OUTCOME_UNKNOWN:
		desc := c.errorCode
		if desc == "" {
			desc = "status " + strconv.Itoa(c.status)
			s.SetAttributes(attrErrorType.String(strconv.Itoa(c.status)))
		}
		s.SetStatus(codes.Error, desc)
	}
	s.End()
}

// memberAttrs names member m and its provider.
func memberAttrs(m *routing.Member) []attribute.KeyValue {
	sys := genAISystem(m)
	return []attribute.KeyValue{attrRecord.String(m.Record.Name), attrMember.String(m.Name),
		attrGenAISystem.String(sys), attrGenAIProvider.String(sys)}
}

// startAttempt starts the span of attempt idx of the call, to member m.
func (c *callRun) startAttempt(m *routing.Member, idx int) trace.Span {
	model := m.UpstreamModel(c.call.Model())
	op := operation(c.endpoint)
	_, s := c.gw.cfg.Tracer.Start(c.traced.ctx, op+" "+model, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(append(memberAttrs(m), attrGenAIOperation.String(op), attrGenAIRequestModel.String(model),
			attrAttemptIndex.Int(idx))...))
	return s
}

// injectAttempt writes attempt span s's W3C trace context into the
// upstream request's headers, replacing any there.
func injectAttempt(s trace.Span, h http.Header) {
	tracing.Propagator().Inject(trace.ContextWithSpan(context.Background(), s), propagation.HeaderCarrier(h))
}

// endAttempt ends attempt idx's span s with the attempt's status, outcome
// and reason as the routing core recorded them; an attempt that did not
// answer has error status, its reason as description.
func (c *callRun) endAttempt(s trace.Span, idx int) {
	if idx >= 0 && idx < len(c.call.Attempts) {
		a := c.call.Attempts[idx]
		if a.Status > 0 {
			s.SetAttributes(attrHTTPStatus.Int(a.Status))
		}
		s.SetAttributes(attrAttemptOutcome.String(a.Outcome.String()))
		if a.Reason != "" {
			s.SetAttributes(attrAttemptReason.String(a.Reason))
		}
		switch a.Outcome {
		case routing.OutcomeAnswered:
			if c.call.Served() == a.Member {
				s.SetAttributes(attrGenAIRespModel.String(a.Member.UpstreamModel(c.call.Model())),
					attrGenAIInputTokens.Int64(c.usage.InputTokens), attrGenAIOutputTokens.Int64(c.usage.OutputTokens))
			}
		case routing.OutcomePending:
		default:
			reason := a.Reason
			if reason == "" {
				reason = a.Kind.String()
			}
			s.SetAttributes(attrErrorType.String(reason))
			s.SetStatus(codes.Error, reason)
		}
	}
	s.End()
}
