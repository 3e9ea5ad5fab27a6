package distrib_test

import (
	"context"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"weir.dev/controlplane/internal/distrib"
	"weir.dev/controlplane/internal/natsembed"
	"weir.dev/controlplane/internal/store"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	"weir.dev/routing/natsnames"
)

// TestDistributorSurvivesNATSRestart stops NATS under a running
// distributor, makes a config change while it is down, and restarts it on
// the same port and store: the change must reach WEIR_CONFIG, and call
// records published after the restart must be ingested. Then NATS comes
// back once more without any state, and both must work again.
func TestDistributorSurvivesNATSRestart(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	ns, err := natsembed.Start(natsembed.Options{StoreDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	port := ns.Port()
	defer func() { ns.Close() }()
	nc, err := nats.Connect(ns.ClientURL(), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	e.nc = nc
	tid := e.tenant("acme")
	e.cfg.IngestMaxWait = 50 * time.Millisecond
	e.cfg.ResyncInterval = time.Second
	e.runDistributor()
	js, _ := jetstream.New(nc)
	kv := func() jetstream.KeyValue {
		for {
			b, err := js.KeyValue(ctx, natsnames.ConfigBucket)
			if err == nil {
				return b
			}
			if ctx.Err() != nil {
				t.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	version := func() uint64 {
		entry, err := kv().Get(ctx, natsnames.TenantKey(store.UUIDString(tid)))
		if err != nil {
			return 0
		}
		v, _ := distrib.StoredVersion(e.signer, natsnames.TenantKey(store.UUIDString(tid)), entry.Value())
		return v
	}
	eventually(t, 10*time.Second, "the first snapshot", func() bool { return version() > 0 })

	ns.Close()
	if _, err := e.api.budgets.SetBudget(ctx, connect.NewRequest(&adminv1.SetBudgetRequest{
		Tenant: "acme", Name: "b", LimitNanos: 5, Period: configv1.BudgetPeriod_BUDGET_PERIOD_TOTAL,
	})); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the publisher fails meanwhile
	if ns, err = natsembed.Start(natsembed.Options{StoreDir: dir, Port: port}); err != nil {
		t.Fatal(err)
	}
	rev, err := e.st.Q.GetConfigRevision(ctx, tid)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "the change made while NATS was down", func() bool { return version() == uint64(rev.DesiredRevision) })

	rec := callRecord(store.UUIDString(tid), "", 1, 3)
	for {
		if _, err := js.Publish(ctx, natsnames.UsageSubjectPrefix+rec.GetTenantId(), mustMarshal(t, rec)); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	eventually(t, 20*time.Second, "the record published after the restart", func() bool {
		_, err := e.st.Q.GetCall(ctx, sqlcGetCall(tid, rec.GetCallId()))
		return err == nil
	})

	// NATS comes back without its state: the buckets, the stream and the
	// consumer are created again and every snapshot is published again.
	ns.Close()
	if ns, err = natsembed.Start(natsembed.Options{StoreDir: t.TempDir(), Port: port}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the snapshot republished to a NATS without state", func() bool { return version() == uint64(rev.DesiredRevision) })
	rec = callRecord(store.UUIDString(tid), "", 2, 3)
	eventually(t, 30*time.Second, "the usage stream back", func() bool {
		_, err := js.Publish(ctx, natsnames.UsageSubjectPrefix+rec.GetTenantId(), mustMarshal(t, rec))
		return err == nil
	})
	eventually(t, 30*time.Second, "a record ingested after the state loss", func() bool {
		_, err := e.st.Q.GetCall(ctx, sqlcGetCall(tid, rec.GetCallId()))
		return err == nil
	})
}
