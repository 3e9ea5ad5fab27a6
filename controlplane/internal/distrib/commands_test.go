package distrib_test

import (
	"context"
	"crypto/sha256"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"weir.dev/controlplane/internal/distrib"
	"weir.dev/controlplane/internal/store"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	telemetryv1 "weir.dev/proto/gen/weir/telemetry/v1"
	"weir.dev/routing/natsnames"
)

// TestOperatorCommands resets a pool member and revokes a key through the
// admin API and checks that an edge subscribed to weir.cmd.> receives each
// command, on its subject, within a second of the request.
func TestOperatorCommands(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	tid := e.tenant("acme")
	e.pool("acme", "p", "m1", "m2")
	_, key := e.key("acme", "ci")

	edge := e.connect()
	got := make(chan *nats.Msg, 8)
	if _, err := edge.ChanSubscribe("weir.cmd.>", got); err != nil {
		t.Fatal(err)
	}
	if err := edge.Flush(); err != nil {
		t.Fatal(err)
	}
	receive := func(subject string) *telemetryv1.Command {
		t.Helper()
		select {
		case m := <-got:
			if m.Subject != subject {
				t.Errorf("subject %q, want %q", m.Subject, subject)
			}
			payload, err := e.signer.Open(subject, m.Data)
			if err != nil {
				t.Fatalf("command on %s: %v", subject, err)
			}
			c := &telemetryv1.Command{}
			if err := proto.Unmarshal(payload, c); err != nil {
				t.Fatal(err)
			}
			return c
		case <-time.After(time.Second):
			t.Fatalf("no command on %s within 1s", subject)
			return nil
		}
	}

	reset, err := e.api.pools.ResetPoolMember(ctx, connect.NewRequest(&adminv1.ResetPoolMemberRequest{Tenant: "acme", Record: "p", Member: "m2"}))
	if err != nil {
		t.Fatal(err)
	}
	c := receive(natsnames.ResetSubject)
	detail, err := e.api.providers.GetProvider(ctx, connect.NewRequest(&adminv1.GetProviderRequest{Tenant: "acme", Name: "p"}))
	if err != nil {
		t.Fatal(err)
	}
	want := &telemetryv1.ResetMember{TenantId: store.UUIDString(tid), RecordId: detail.Msg.GetDetail().GetRecord().GetId(), MemberName: "m2"}
	if diff := cmp.Diff(want, c.GetResetMember(), protocmp.Transform()); diff != "" || c.GetId() != reset.Msg.GetCommandId() {
		t.Errorf("reset command (-want +got):\n%s\nid %q, response id %q", diff, c.GetId(), reset.Msg.GetCommandId())
	}

	if _, err := e.api.keys.RevokeApiKey(ctx, connect.NewRequest(&adminv1.RevokeApiKeyRequest{Tenant: "acme", Name: "ci"})); err != nil {
		t.Fatal(err)
	}
	c = receive(natsnames.RevokeSubject)
	sum := sha256.Sum256([]byte(key))
	if diff := cmp.Diff(&telemetryv1.RevokeKey{TenantId: store.UUIDString(tid), Sha256: sum[:]}, c.GetRevokeKey(), protocmp.Transform()); diff != "" || c.GetId() == "" || c.GetIssuedAt() == nil {
		t.Errorf("revoke command (-want +got):\n%s\n%v", diff, c)
	}

	// A command of the wrong kind is refused, not sent.
	cmd := distrib.NewCommander(e.nc, e.signer)
	if err := cmd.ResetMember(ctx, c); err == nil {
		t.Error("a revoke sent as a reset")
	}
	// Without NATS a reset fails, and the API says so.
	closed, err := nats.Connect(e.ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	if err := distrib.NewCommander(closed, e.signer).ResetMember(ctx, &telemetryv1.Command{Command: &telemetryv1.Command_ResetMember{ResetMember: want}}); err == nil {
		t.Error("a reset on a closed connection reported sent")
	}
}
