package distrib

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	telemetryv1 "weir.dev/proto/gen/weir/telemetry/v1"
	"weir.dev/routing/natsnames"
)

// commandFlushTimeout bounds the wait for the NATS server to take a command
// when the caller's context has no deadline.
const commandFlushTimeout = 5 * time.Second

// ErrNotConnected is returned for a command sent while the control plane
// is not connected to NATS.
var ErrNotConnected = errors.New("not connected to NATS")

// Commander publishes operator commands to every edge on core NATS
// subjects (weir.cmd.reset, weir.cmd.revoke). It implements
// provider.Resetter and admin.Revoker. It is safe for concurrent use.
//
// Core NATS keeps nothing for an edge that is not connected when a command
// is sent: a reset reaches the edges connected at that moment (an edge that
// starts later has no cooldowns to clear), and a revocation also travels in
// the tenant's next snapshot (the key marked revoked), which an edge reads
// when it reconnects.
//
// Every command travels signed by s (a weir.config.v1.Signed envelope
// under its subject), and edges apply only commands that verify.
type Commander struct {
	nc *nats.Conn
	s  *Signer
}

// NewCommander returns a commander publishing on nc, signing with s.
func NewCommander(nc *nats.Conn, s *Signer) *Commander { return &Commander{nc: nc, s: s} }

// ResetMember publishes cmd (a ResetMember command) on weir.cmd.reset and
// returns once the NATS server has it (a flush), or an error when it could
// not be handed over before ctx ends (or within 5 s when ctx has no
// deadline). It does not keep cmd.
func (c *Commander) ResetMember(ctx context.Context, cmd *telemetryv1.Command) error {
	if cmd.GetResetMember() == nil {
		return errors.New("distrib: reset: the command is not a reset_member")
	}
	return c.publish(ctx, natsnames.ResetSubject, cmd)
}

// RevokeKey publishes cmd (a RevokeKey command) on weir.cmd.revoke, like
// ResetMember.
func (c *Commander) RevokeKey(ctx context.Context, cmd *telemetryv1.Command) error {
	if cmd.GetRevokeKey() == nil {
		return errors.New("distrib: revoke: the command is not a revoke_key")
	}
	return c.publish(ctx, natsnames.RevokeSubject, cmd)
}

func (c *Commander) publish(ctx context.Context, subject string, cmd *telemetryv1.Command) error {
	payload, err := proto.Marshal(cmd)
	if err != nil {
		return fmt.Errorf("distrib: %s: %w", subject, err)
	}
	data, err := c.s.Seal(subject, payload)
	if err != nil {
		return err
	}
	if !c.nc.IsConnected() {
		// Publish would only buffer the command for a reconnect that may
		// never come in time; say so now.
		return fmt.Errorf("distrib: %s: %w", subject, ErrNotConnected)
	}
	if err := c.nc.Publish(subject, data); err != nil {
		return fmt.Errorf("distrib: %s: %w", subject, err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, commandFlushTimeout)
		defer cancel()
	}
	if err := c.nc.FlushWithContext(ctx); err != nil {
		return fmt.Errorf("distrib: %s: %w", subject, err)
	}
	return nil
}
