package auth

import (
	"errors"
	"log/slog"
	"net/http"

	"connectrpc.com/connect"

	"weir.dev/controlplane/internal/throttle"
)

// RequireToken returns an HTTP handler that authenticates every request by
// its "Authorization: Bearer <token>" header before next sees it, and so
// before anything reads, decompresses or decodes the request body
// (DESIGN §5). A request without a usable token is answered at once with
// Unauthenticated in its own protocol (Connect: HTTP 401; gRPC and
// gRPC-Web: grpc-status 16; anything else: a plain 401) and its body is
// left unread: net/http discards at most a small bounded amount of it and
// closes the connection. A database failure is answered with Unavailable
// and logged without the token. An authenticated request reaches next with
// its Principal in the context, where the interceptor (NewInterceptor)
// finds it instead of looking the token up a second time.
//
// With a non-nil limiter, an address (r.RemoteAddr, the TCP peer; the
// console's in-process requests carry the browser's) that has run out of
// failed authentications is answered ResourceExhausted (HTTP 429) with
// Retry-After before its token is looked at, and every Unauthenticated
// answer to a request that presented a token counts as a failure of its
// address (see package throttle).
func RequireToken(q Queries, log *slog.Logger, limiter *throttle.Limiter, next http.Handler) http.Handler {
	errw := connect.NewErrorWriter()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		if limiter != nil {
			if wait := limiter.Wait(r.RemoteAddr); wait > 0 {
				ce := Throttled(wait)
				w.Header().Set("Retry-After", ce.Meta().Get("Retry-After"))
				if errw.IsSupported(r) {
					_ = errw.Write(w, r, ce)
					return
				}
				http.Error(w, ce.Message(), http.StatusTooManyRequests)
				return
			}
		}
		token := bearer(r.Header.Get("Authorization"))
		p, err := Authenticate(ctx, q, token)
		if err != nil {
			var ce *connect.Error
			if errors.As(err, &ce) && limiter != nil && ce.Code() == connect.CodeUnauthenticated && token != "" {
				limiter.Fail(r.RemoteAddr)
			}
			if !errors.As(err, &ce) {
				log.ErrorContext(ctx, "authentication failed", "path", r.URL.Path, "err", err)
				ce = connect.NewError(connect.CodeUnavailable, errors.New("cannot check the admin token now"))
			}
			if ce.Code() == connect.CodeUnauthenticated {
				w.Header().Set("WWW-Authenticate", "Bearer")
			}
			if errw.IsSupported(r) {
				_ = errw.Write(w, r, ce)
				return
			}
			status := http.StatusUnauthorized
			if ce.Code() != connect.CodeUnauthenticated {
				status = http.StatusServiceUnavailable
			}
			http.Error(w, ce.Message(), status)
			return
		}
		next.ServeHTTP(w, r.WithContext(WithPrincipal(ctx, p)))
	})
}
