package distrib_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"weir.dev/controlplane/internal/distrib"
	"weir.dev/controlplane/internal/natsembed"
	"weir.dev/controlplane/internal/store"
	"weir.dev/db/pgtest"
	"weir.dev/natsconf"
	"weir.dev/routing/natsnames"
)

// TestSetupIsIdempotent runs Setup twice, and once after an edge created
// the objects first, and checks the settings of the wire contract.
func TestSetupIsIdempotent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := natsembed.NewTest(t)
	e := &env{t: t, ns: ns}
	js, err := jetstream.New(e.connect())
	if err != nil {
		t.Fatal(err)
	}
	// An edge that came first creates the views bucket with the same
	// settings (edge/internal/distrib).
	if _, err := js.CreateKeyValue(ctx, natsconf.ViewsBucketConfig(1)); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := distrib.Setup(ctx, js, 1); err != nil {
			t.Fatal(err)
		}
	}
	buckets := []struct {
		name    string
		history int64
		ttl     time.Duration
	}{
		{natsnames.ConfigBucket, 1, 0},
		{natsnames.ViewsBucket, 1, 60 * time.Second},
		{natsnames.AffinityBucket, 1, time.Hour},
	}
	for _, b := range buckets {
		kv, err := js.KeyValue(ctx, b.name)
		if err != nil {
			t.Fatal(err)
		}
		st, err := kv.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.History() != b.history || st.TTL() != b.ttl {
			t.Errorf("%s: history %d ttl %s, want %d and %s", b.name, st.History(), st.TTL(), b.history, b.ttl)
		}
	}
	s, err := js.Stream(ctx, natsnames.UsageStream)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	if len(cfg.Subjects) != 1 || cfg.Subjects[0] != "weir.usage.>" || cfg.Duplicates != 2*time.Minute || cfg.Storage != jetstream.FileStorage ||
		cfg.Retention != jetstream.LimitsPolicy || cfg.MaxAge != 7*24*time.Hour || cfg.MaxBytes != -1 || cfg.MaxMsgs != -1 {
		t.Errorf("usage stream = %+v", cfg)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	good := distrib.DefaultConfig()
	good.EdgeKey = make([]byte, 32)
	good.Open = distrib.OpenWith(nil)
	good.SigningKey = make([]byte, 32)
	if err := good.Validate(); err != nil {
		t.Errorf("good config: %v", err)
	}
	bad := distrib.DefaultConfig()
	bad.PollInterval, bad.IngestBatch, bad.IngestConsumer = 0, 0, ""
	err := bad.Validate()
	for _, want := range []string{"edge key", "secret opener", "signing key", "poll interval", "ingest batch", "consumer"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want a problem about %q", err, want)
		}
	}
}

// TestJanitorClosesLeases checks that leases stop being open once they no
// longer count: returned ones after the settle lag, abandoned ones after the
// reclaim grace; and that closed ones are deleted after their retention.
func TestJanitorClosesLeases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := store.New(pgtest.New(t))
	var tenant, budget [16]byte
	if err := st.Pool().QueryRow(ctx, "INSERT INTO tenants (name) VALUES ('t') RETURNING id").Scan(&tenant); err != nil {
		t.Fatal(err)
	}
	if err := st.Pool().QueryRow(ctx, "INSERT INTO budgets (tenant_id, name, limit_nanos, period) VALUES ($1, 'b', 100, 'total') RETURNING id", tenant).Scan(&budget); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	leases := []struct {
		name              string
		expires           time.Duration // from now
		used, returned    int64
		closedAgo         time.Duration // 0: open
		openAfter, exists bool
	}{
		{"active", time.Minute, 0, 0, 0, true, true},
		{"expired recently", -time.Minute, 0, 0, 0, true, true},
		{"abandoned", -time.Hour, 0, 0, 0, false, true},
		{"returned just now", -time.Second, 3, 7, 0, true, true},
		{"returned long ago", -time.Hour, 3, 7, 0, false, true},
		{"closed long ago", -10 * 24 * time.Hour, 3, 7, 9 * 24 * time.Hour, false, false},
	}
	for _, l := range leases {
		var closed any
		if l.closedAgo > 0 {
			closed = now.Add(-l.closedAgo)
		}
		if _, err := st.Pool().Exec(ctx, `INSERT INTO budget_leases (budget_id, edge_id, granted_nanos, used_nanos, returned_nanos, created_at, expires_at, closed_at)
			VALUES ($1, $2, 10, $3, $4, $5, $6, $7)`, budget, l.name, l.used, l.returned, now.Add(l.expires-time.Minute*2), now.Add(l.expires), closed); err != nil {
			t.Fatal(err)
		}
	}
	cfg := distrib.DefaultConfig()
	j := distrib.NewJanitor(st, distrib.JanitorConfig{
		Interval: time.Minute, ClosedLeaseRetention: cfg.ClosedLeaseRetention, ViewRetention: cfg.ViewRetention,
		EdgeRetention: cfg.EdgeRetention, OutboxRetention: cfg.OutboxRetention,
		Leases: distrib.LeaseConfig{SettleLag: 30 * time.Second, ReclaimAfter: 11 * time.Minute},
	})
	if err := j.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	for _, l := range leases {
		var open bool
		err := st.Pool().QueryRow(ctx, "SELECT closed_at IS NULL FROM budget_leases WHERE edge_id = $1", l.name).Scan(&open)
		exists := err == nil
		if exists != l.exists || (exists && open != l.openAfter) {
			t.Errorf("%s: exists %v open %v, want %v and %v", l.name, exists, open, l.exists, l.openAfter)
		}
	}
}
