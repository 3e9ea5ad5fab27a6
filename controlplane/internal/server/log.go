package server

import (
	"context"
	"log/slog"
	"time"

	"connectrpc.com/connect"

	"weir.dev/controlplane/internal/admin/apierr"
	"weir.dev/controlplane/internal/auth"
)

// newLogInterceptor logs one line per RPC: procedure, code, duration and the
// admin's name — never headers, request or response bodies, or an error's
// details, so no token, key or secret value can reach the log. Internal
// errors are logged with their hidden cause (which by construction holds no
// secret value). It runs outside the auth interceptor, so it sees refused
// requests too.
func newLogInterceptor(log *slog.Logger) connect.Interceptor {
	return &logInterceptor{log: log}
}

type logInterceptor struct{ log *slog.Logger }

func (l *logInterceptor) record(ctx context.Context, procedure string, start time.Time, err error) {
	attrs := []any{"procedure", procedure, "duration", time.Since(start).Round(time.Microsecond)}
	if p, ok := auth.FromContext(ctx); ok {
		attrs = append(attrs, "admin", p.Name)
	}
	if err == nil {
		l.log.DebugContext(ctx, "rpc", append(attrs, "code", "ok")...)
		return
	}
	code := connect.CodeOf(err)
	attrs = append(attrs, "code", code.String())
	if code == connect.CodeInternal || code == connect.CodeUnknown {
		l.log.ErrorContext(ctx, "rpc failed", append(attrs, "err", apierr.Cause(err))...)
		return
	}
	l.log.InfoContext(ctx, "rpc refused", attrs...)
}

func (l *logInterceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		start := time.Now()
		ctx = withPrincipalSlot(ctx)
		resp, err := next(ctx, req)
		if !req.Spec().IsClient {
			l.record(principalCtx(ctx), req.Spec().Procedure, start, err)
		}
		return resp, err
	}
}

func (l *logInterceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (l *logInterceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		start := time.Now()
		ctx = withPrincipalSlot(ctx)
		err := next(ctx, conn)
		l.record(principalCtx(ctx), conn.Spec().Procedure, start, err)
		return err
	}
}

// The auth interceptor runs inside this one, so the Principal it adds is in
// a child context this interceptor never sees. A slot in the outer context
// lets the inner one leave the name for the log line.
type slotKey struct{}

type slot struct{ p *auth.Principal }

func withPrincipalSlot(ctx context.Context) context.Context {
	return context.WithValue(ctx, slotKey{}, &slot{})
}

func principalCtx(ctx context.Context) context.Context {
	if s, ok := ctx.Value(slotKey{}).(*slot); ok && s.p != nil {
		return auth.WithPrincipal(ctx, *s.p)
	}
	return ctx
}

// fillSlot is an interceptor placed after auth that records the principal
// in the log slot.
type fillSlot struct{}

func (fillSlot) fill(ctx context.Context) {
	s, ok := ctx.Value(slotKey{}).(*slot)
	if !ok {
		return
	}
	if p, ok := auth.FromContext(ctx); ok {
		s.p = &p
	}
}

func (f fillSlot) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		f.fill(ctx)
		return next(ctx, req)
	}
}

func (fillSlot) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (f fillSlot) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		f.fill(ctx)
		return next(ctx, conn)
	}
}
