package auth

import (
	"errors"
	"log/slog"
	"net/http"

	"connectrpc.com/connect"
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
func RequireToken(q Queries, log *slog.Logger, next http.Handler) http.Handler {
	errw := connect.NewErrorWriter()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		p, err := Authenticate(ctx, q, bearer(r.Header.Get("Authorization")))
		if err != nil {
			var ce *connect.Error
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
