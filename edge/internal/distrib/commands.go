package distrib

import (
	"fmt"
	"log/slog"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"weir.dev/edge/internal/gateway"
	"weir.dev/edge/internal/routing"
	telemetryv1 "weir.dev/proto/gen/weir/telemetry/v1"
)

// commands applies operator commands (DESIGN.md §1.6) the moment they
// arrive: a member reset (R-OBS-4) clears the member's cooldown, spent mark
// and disable in this edge's state; a key revocation refuses the key at once,
// before the tenant's next snapshot says so. They are core NATS messages: an
// edge that is disconnected when one is sent misses it (the next snapshot
// carries a revocation anyway; a missed reset only leaves a cooldown to run
// out on its own).
type commands struct {
	reg    *gateway.Registry
	states *routing.States
	log    *slog.Logger
	subs   []*nats.Subscription
}

// subscribe starts listening on both command subjects.
func (c *commands) subscribe(nc *nats.Conn) error {
	for _, subj := range []string{ResetSubject, RevokeSubject} {
		sub, err := nc.Subscribe(subj, c.handle)
		if err != nil {
			c.unsubscribe()
			return fmt.Errorf("distrib: subscribing to %s: %w", subj, err)
		}
		c.subs = append(c.subs, sub)
	}
	return nil
}

func (c *commands) unsubscribe() {
	for _, s := range c.subs {
		_ = s.Unsubscribe()
	}
	c.subs = nil
}

func (c *commands) handle(m *nats.Msg) {
	var cmd telemetryv1.Command
	if err := proto.Unmarshal(m.Data, &cmd); err != nil {
		c.log.Error("operator command does not decode", "subject", m.Subject, "err", err)
		return
	}
	c.apply(&cmd)
}

// apply carries out one command.
func (c *commands) apply(cmd *telemetryv1.Command) {
	switch x := cmd.GetCommand().(type) {
	case *telemetryv1.Command_ResetMember:
		r := x.ResetMember
		if r.GetRecordId() == "" || r.GetMemberName() == "" {
			c.log.Error("reset command without record or member", "id", cmd.GetId())
			return
		}
		c.states.Reset(r.GetRecordId() + "/" + r.GetMemberName())
		c.log.Info("member reset by operator", "id", cmd.GetId(), "tenant_id", r.GetTenantId(), "record_id", r.GetRecordId(), "member", r.GetMemberName())
	case *telemetryv1.Command_RevokeKey:
		sum := x.RevokeKey.GetSha256()
		if len(sum) != 32 {
			c.log.Error("revoke command with a malformed key hash", "id", cmd.GetId(), "len", len(sum))
			return
		}
		c.reg.Revoke([32]byte(sum))
		c.log.Info("key revoked by operator", "id", cmd.GetId(), "tenant_id", x.RevokeKey.GetTenantId())
	default:
		c.log.Warn("unknown operator command ignored", "id", cmd.GetId())
	}
}
