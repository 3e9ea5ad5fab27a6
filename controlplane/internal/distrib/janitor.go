package distrib

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"weir.dev/controlplane/internal/store"
	"weir.dev/db/sqlc"
)

// JanitorConfig configures the janitor.
type JanitorConfig struct {
	// Interval is how often it runs.
	Interval time.Duration
	// Leases are the lease settings whose grace periods decide when a
	// lease stops counting and is closed.
	Leases LeaseConfig
	// ClosedLeaseRetention is how long closed leases are kept.
	ClosedLeaseRetention time.Duration
	// ViewRetention is how long a member view is kept after it was
	// observed (it is shown expired after ViewsMaxAge).
	ViewRetention time.Duration
	// EdgeRetention is how long an edge that stopped reporting is kept
	// (and reported silent by the doctor).
	EdgeRetention time.Duration
	// OutboxRetention is how long published outbox rows are kept.
	OutboxRetention time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Log receives failures; nil discards.
	Log *slog.Logger
}

// Janitor keeps the distribution tables small: it closes leases that no
// longer count (so the admin API stops showing them as leased) and deletes
// old closed leases, member views, silent edges and published outbox rows.
// Every step is idempotent, so several control planes may each run one.
type Janitor struct {
	st   *store.Store
	cfg  JanitorConfig
	fail *failureLog
}

// NewJanitor returns a janitor over st.
func NewJanitor(st *store.Store, cfg JanitorConfig) *Janitor {
	cfg.Log, cfg.Now = orDiscard(cfg.Log), orNow(cfg.Now)
	return &Janitor{st: st, cfg: cfg, fail: newFailureLog(cfg.Log, "janitor")}
}

// Run sweeps every Interval until ctx ends; it returns nil then.
func (j *Janitor) Run(ctx context.Context) error {
	t := time.NewTicker(j.cfg.Interval)
	defer t.Stop()
	for {
		if err := j.Sweep(ctx); err != nil {
			j.fail.fail(ctx, err)
		} else {
			j.fail.ok(ctx)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Sweep runs every step once and reports every failure.
func (j *Janitor) Sweep(ctx context.Context) error {
	now := j.cfg.Now()
	q := j.st.Q
	var errs []error
	step := func(what string, _ int64, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("distrib: janitor: %s: %w", what, err))
		}
	}
	n, err := q.CloseSettledLeases(ctx, sqlc.CloseSettledLeasesParams{
		Now: ts(now), SettleCutoff: ts(now.Add(-j.cfg.Leases.SettleLag)), ReclaimCutoff: ts(now.Add(-j.cfg.Leases.ReclaimAfter)),
	})
	step("close leases", n, err)
	n, err = q.DeleteClosedLeasesBefore(ctx, ts(now.Add(-j.cfg.ClosedLeaseRetention)))
	step("delete closed leases", n, err)
	n, err = q.DeleteMemberViewsBefore(ctx, ts(now.Add(-j.cfg.ViewRetention)))
	step("delete old member views", n, err)
	n, err = q.DeleteEdgesNotSeenSince(ctx, ts(now.Add(-j.cfg.EdgeRetention)))
	step("delete silent edges", n, err)
	n, err = q.DeletePublishedOutbox(ctx, ts(now.Add(-j.cfg.OutboxRetention)))
	step("delete published outbox rows", n, err)
	return errors.Join(errs...)
}
