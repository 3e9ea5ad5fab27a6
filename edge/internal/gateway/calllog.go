package gateway

import (
	"log/slog"

	"weir.dev/routing"
)

// Every log line about a call carries its call id ("call_id") and, once
// its key named one, its tenant: "tenant" (the name, as in the metrics'
// tenant label) and "tenant_id" (as in its call record). Lines never carry
// keys, secrets, headers or bodies.
//
// The call's logger is built only when a line is to be written: a call that
// logs nothing (every call at the default level, unless something is lost
// or panics) costs no allocation for logging.

// callLogger is base with the attributes of call id on a call of tenant t
// (nil: the key is unknown, the call belongs to no tenant).
func callLogger(base *slog.Logger, id string, t *routing.Table) *slog.Logger {
	if t == nil {
		return base.With(slog.String("call_id", id))
	}
	return base.With(slog.String("call_id", id), slog.String("tenant", t.TenantName), slog.String("tenant_id", t.TenantID))
}

// logger is the call's logger, built on first use and kept once the
// tenant is known. It belongs to the call's goroutine: another goroutine
// of the call (the keep-alive) builds its own with callLogger.
func (c *callRun) logger() *slog.Logger {
	if c.log != nil {
		return c.log
	}
	l := callLogger(c.gw.cfg.Log, c.id, c.table)
	if c.table != nil {
		c.log = l
	}
	return l
}

// logAttempt logs, at debug level, what attempt of the call to m came to:
// ev is its event as counted in weir_pool_events_total, with the status
// of the member's error answer when there was one. Nothing is built unless
// debug is enabled.
func (c *callRun) logAttempt(m *routing.Member, ev string) {
	ctx := c.req.Context()
	if !c.gw.cfg.Log.Enabled(ctx, slog.LevelDebug) {
		return
	}
	idx := len(c.call.Attempts) - 1
	attrs := []slog.Attr{slog.Int("attempt", idx), slog.String("record", m.Record.Name), slog.String("member", m.Name), slog.String("event", ev)}
	if h := c.held(idx); h != nil {
		attrs = append(attrs, slog.Int("status", h.status))
	}
	c.logger().LogAttrs(ctx, slog.LevelDebug, "attempt", attrs...)
}
