package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"connectrpc.com/connect"

	"weir.dev/controlplane/internal/throttle"
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
//
// With a limiter (WithLimiter), every Unauthenticated answer to a request
// that presented a token (a guess; a request without one costs no lookup)
// counts as a failure of the request's peer address (connect.Peer.Addr, the TCP peer;
// X-Forwarded-For is not read), and an address out of failures is answered
// ResourceExhausted (HTTP 429) with a Retry-After header before its token
// is looked at: valid tokens from that address wait too, other addresses
// are not affected. RequireToken applies the same limiter in front of it.
func NewInterceptor(q Queries, log *slog.Logger, opts ...Option) connect.Interceptor {
	i := &interceptor{q: q, log: log}
	for _, o := range opts {
		o(i)
	}
	return i
}

// Option configures NewInterceptor.
type Option func(*interceptor)

// WithLimiter slows down repeated authentication failures per address.
func WithLimiter(l *throttle.Limiter) Option { return func(i *interceptor) { i.limiter = l } }

type interceptor struct {
	q       Queries
	log     *slog.Logger
	limiter *throttle.Limiter
}

// Throttled is the error of a request refused because its address failed
// to authenticate too often: ResourceExhausted, with Retry-After (whole
// seconds) in its metadata.
func Throttled(wait time.Duration) *connect.Error {
	secs := int(wait / time.Second)
	e := connect.NewError(connect.CodeResourceExhausted, fmt.Errorf("too many failed authentications from this address; retry in %d s", secs))
	e.Meta().Set("Retry-After", strconv.Itoa(secs))
	return e
}

func (i *interceptor) authenticate(ctx context.Context, procedure string, h http.Header, peer string) (context.Context, error) {
	if p, ok := FromContext(ctx); ok {
		p.Procedure = procedure
		return WithPrincipal(ctx, p), nil
	}
	if i.limiter != nil {
		if wait := i.limiter.Wait(peer); wait > 0 {
			return nil, Throttled(wait)
		}
	}
	token := bearer(h.Get("Authorization"))
	p, err := Authenticate(ctx, i.q, token)
	if err != nil {
		var ce *connect.Error
		if errors.As(err, &ce) {
			if i.limiter != nil && ce.Code() == connect.CodeUnauthenticated && token != "" {
				i.limiter.Fail(peer)
			}
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
		ctx, err := i.authenticate(ctx, req.Spec().Procedure, req.Header(), req.Peer().Addr)
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
		ctx, err := i.authenticate(ctx, conn.Spec().Procedure, conn.RequestHeader(), conn.Peer().Addr)
		if err != nil {
			return err
		}
		return next(ctx, conn)
	}
}
