package distrib

import (
	"crypto/ed25519"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"weir.dev/edge/internal/gateway"
	telemetryv1 "weir.dev/proto/gen/weir/telemetry/v1"
	"weir.dev/routing"
	"weir.dev/routing/natsnames"
)

// commands applies operator commands (DESIGN.md §1.6) the moment they
// arrive: a member reset (R-OBS-4) clears the member's cooldown, spent mark
// and disable in this edge's state; a key revocation refuses the key at once,
// before the tenant's next snapshot says so. They are core NATS messages: an
// edge that is disconnected when one is sent misses it (the next snapshot
// carries a revocation anyway; a missed reset only leaves a cooldown to run
// out on its own).
//
// A command is applied only when it is a Signed envelope that verifies
// under the control plane's public key for the subject it came on, was
// issued within CommandMaxAge of this edge's clock, and its id was not
// applied before (a replayed command is ignored).
type commands struct {
	reg    *gateway.Registry
	states *routing.States
	log    *slog.Logger
	pub    ed25519.PublicKey
	now    func() time.Time
	subs   []*nats.Subscription

	mu   sync.Mutex
	seen map[string]time.Time // command id → issued at, for CommandMaxAge
}

// CommandMaxAge is how far a command's issued_at may be from the edge's
// clock, either way, for the edge to apply it: it bounds replays of a
// captured command (ids seen within it are remembered) and tolerates that
// much clock skew between control plane and edge.
const CommandMaxAge = 2 * time.Minute

// subscribe starts listening on both command subjects.
func (c *commands) subscribe(nc *nats.Conn) error {
	for _, subj := range []string{natsnames.ResetSubject, natsnames.RevokeSubject} {
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
	payload, err := openSigned(c.pub, m.Subject, m.Data)
	if err != nil {
		c.log.Error("operator command refused", "subject", m.Subject, "err", err)
		return
	}
	var cmd telemetryv1.Command
	if err := proto.Unmarshal(payload, &cmd); err != nil {
		c.log.Error("operator command does not decode", "subject", m.Subject, "err", err)
		return
	}
	if err := c.fresh(&cmd); err != nil {
		c.log.Error("operator command refused", "subject", m.Subject, "id", cmd.GetId(), "err", err)
		return
	}
	c.apply(&cmd)
}

// fresh reports why cmd must not be applied: issued too long ago (or in the
// future), without an id, or already applied.
func (c *commands) fresh(cmd *telemetryv1.Command) error {
	if cmd.GetId() == "" || cmd.GetIssuedAt() == nil {
		return fmt.Errorf("distrib: a command without id or issue time")
	}
	now := c.now()
	at := cmd.GetIssuedAt().AsTime()
	if d := now.Sub(at); d > CommandMaxAge || d < -CommandMaxAge {
		return fmt.Errorf("distrib: a command issued at %s, more than %s from now", at.Format(time.RFC3339), CommandMaxAge)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = map[string]time.Time{}
	}
	for id, t := range c.seen {
		if now.Sub(t) > CommandMaxAge {
			delete(c.seen, id)
		}
	}
	if _, ok := c.seen[cmd.GetId()]; ok {
		return fmt.Errorf("distrib: command %s was applied already", cmd.GetId())
	}
	c.seen[cmd.GetId()] = at
	return nil
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
