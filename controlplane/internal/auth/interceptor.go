package auth

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"connectrpc.com/connect"
)

// NewInterceptor returns a Connect interceptor that authenticates every
// unary and streaming request with its "Authorization: Bearer <token>"
// header and puts the caller's Principal (with the procedure) in the
// handler's context. A request that RequireToken already authenticated
// carries its Principal in the context; the interceptor then only adds the
// procedure, without a second look-up. A request without a usable token
// fails with Unauthenticated before the handler runs; a database failure
// fails with Unavailable, logged to log without the token. Client-side
// calls pass through untouched.
func NewInterceptor(q Queries, log *slog.Logger) connect.Interceptor {
	return &interceptor{q: q, log: log}
}

type interceptor struct {
	q   Queries
	log *slog.Logger
}

func (i *interceptor) authenticate(ctx context.Context, procedure string, h http.Header) (context.Context, error) {
	if p, ok := FromContext(ctx); ok {
		p.Procedure = procedure
		return WithPrincipal(ctx, p), nil
	}
	p, err := Authenticate(ctx, i.q, bearer(h.Get("Authorization")))
	if err != nil {
		var ce *connect.Error
		if errors.As(err, &ce) {
			return nil, ce
		}
		i.log.ErrorContext(ctx, "authentication failed", "procedure", procedure, "err", err)
		return nil, connect.NewError(connect.CodeUnavailable, errors.New("cannot check the admin token now"))
	}
	p.Procedure = procedure
	return WithPrincipal(ctx, p), nil
}

func (i *interceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		if req.Spec().IsClient {
			return next(ctx, req)
		}
		ctx, err := i.authenticate(ctx, req.Spec().Procedure, req.Header())
		if err != nil {
			return nil, err
		}
		return next(ctx, req)
	}
}

func (i *interceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (i *interceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		ctx, err := i.authenticate(ctx, conn.Spec().Procedure, conn.RequestHeader())
		if err != nil {
			return err
		}
		return next(ctx, conn)
	}
}
