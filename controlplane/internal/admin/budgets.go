package admin

import (
	"context"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5/pgtype"

	"weir.dev/controlplane/internal/admin/apierr"
	"weir.dev/controlplane/internal/auth"
	"weir.dev/controlplane/internal/store"
	"weir.dev/db/sqlc"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// budgetQueries are the reads BudgetService makes.
type budgetQueries interface {
	tenantGetter
	ListBudgets(ctx context.Context, tenantID pgtype.UUID) ([]sqlc.Budget, error)
	ListAPIKeys(ctx context.Context, tenantID pgtype.UUID) ([]sqlc.APIKey, error)
	OutstandingLeaseNanos(ctx context.Context, budgetID pgtype.UUID) (int64, error)
}

// BudgetService implements weir.admin.v1.BudgetService. Money is integer
// nano-dollars; a limit of 0 is allowed and blocks every priced call.
type BudgetService struct {
	base
	q budgetQueries
}

func budgetWriters() []auth.Role { return []auth.Role{auth.RoleTenantAdmin, auth.RoleCostOwner} }

var periods = map[configv1.BudgetPeriod]string{
	configv1.BudgetPeriod_BUDGET_PERIOD_DAY:   "day",
	configv1.BudgetPeriod_BUDGET_PERIOD_MONTH: "month",
	configv1.BudgetPeriod_BUDGET_PERIOD_TOTAL: "total",
}

func periodProto(p string) configv1.BudgetPeriod {
	for k, v := range periods {
		if v == p {
			return k
		}
	}
	return configv1.BudgetPeriod_BUDGET_PERIOD_UNSPECIFIED
}

// periodStart is the start of the calendar period (UTC) holding now; a total
// budget's period starts now.
func periodStart(period string, now time.Time) time.Time {
	now = now.UTC()
	switch period {
	case "day":
		return time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	case "month":
		return time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	}
	return now
}

// periodEnd is when a period that started at start resets (zero for total).
func periodEnd(period string, start time.Time) time.Time {
	start = start.UTC()
	switch period {
	case "day":
		return start.AddDate(0, 0, 1)
	case "month":
		return start.AddDate(0, 1, 0)
	}
	return time.Time{}
}

// SetBudget creates or replaces a budget. Cost owners and tenant admins.
func (s *BudgetService) SetBudget(ctx context.Context, req *connect.Request[adminv1.SetBudgetRequest]) (*connect.Response[adminv1.SetBudgetResponse], error) {
	m := req.Msg
	p, t, err := scope(ctx, s.q, m.GetTenant(), budgetWriters()...)
	if err != nil {
		return nil, err
	}
	var ps apierr.Problems
	if m.GetTenant() == "" {
		ps.Add("tenant", apierr.CodeRequired, "budgets belong to a tenant; a tenant is required")
	}
	apierr.Name(&ps, "name", m.GetName())
	if m.GetLimitNanos() < 0 {
		ps.Add("limit_nanos", apierr.CodeNegative, "the limit must not be negative")
	}
	period, ok := periods[m.GetPeriod()]
	if !ok {
		ps.Add("period", apierr.CodeRequired, "period must be day, month or total")
	}
	if m.GetKey() != "" {
		apierr.Name(&ps, "key", m.GetKey())
	}
	if err := ps.Err(); err != nil {
		return nil, err
	}
	var b sqlc.Budget
	var created bool
	var leased int64
	err = s.tx.Tx(ctx, p.Actor(), func(tx *store.Tx) error {
		var keyID pgtype.UUID
		if m.GetKey() != "" {
			k, err := tx.Q.GetAPIKeyByName(ctx, sqlc.GetAPIKeyByNameParams{TenantID: t.ID, Name: m.GetKey()})
			if err != nil {
				if store.IsNotFound(err) {
					return apierr.Invalid(apierr.NewProblem("key", apierr.CodeNotFound, "no active API key of that name in the tenant"))
				}
				return err
			}
			keyID = k.ID
		}
		old, err := tx.Q.GetBudget(ctx, sqlc.GetBudgetParams{TenantID: t.ID, Name: m.GetName()})
		switch {
		case store.IsNotFound(err):
			created = true
		case err != nil:
			return err
		}
		if b, err = tx.Q.UpsertBudget(ctx, sqlc.UpsertBudgetParams{
			TenantID: t.ID, Name: m.GetName(), LimitNanos: m.GetLimitNanos(), Period: period, KeyID: keyID,
		}); err != nil {
			return err
		}
		// A new budget, or a new period or key, starts a new period;
		// changing only the limit keeps the current period's spend.
		if created || old.Period != period || old.KeyID != keyID {
			if b, err = tx.Q.StartBudgetPeriod(ctx, sqlc.StartBudgetPeriodParams{
				TenantID: t.ID, ID: b.ID, PeriodStart: pgts(periodStart(period, s.now())),
			}); err != nil {
				return err
			}
		}
		if leased, err = tx.Q.OutstandingLeaseNanos(ctx, b.ID); err != nil {
			return err
		}
		if err := tx.Changed(ctx, t.ID); err != nil {
			return err
		}
		return tx.Audit(ctx, "set", "budgets", b.Name, map[string]any{
			"id": store.UUIDString(b.ID), "limit_nanos": b.LimitNanos, "period": b.Period, "key": m.GetKey(), "created": created,
		})
	})
	if err != nil {
		return nil, apierr.FromStore(err)
	}
	return connect.NewResponse(&adminv1.SetBudgetResponse{Budget: budgetProto(b, m.GetKey(), leased), Created: created}), nil
}

// ListBudgets lists the tenant's budgets with their spend.
func (s *BudgetService) ListBudgets(ctx context.Context, req *connect.Request[adminv1.ListBudgetsRequest]) (*connect.Response[adminv1.ListBudgetsResponse], error) {
	m := req.Msg
	_, t, err := scope(ctx, s.q, m.GetTenant(), auth.TenantRoles()...)
	if err != nil {
		return nil, err
	}
	var ps apierr.Problems
	if m.GetTenant() == "" {
		ps.Add("tenant", apierr.CodeRequired, "a tenant is required")
	}
	size := pageSize(&ps, m.GetPageSize())
	off := offsetToken(&ps, m.GetPageToken())
	if err := ps.Err(); err != nil {
		return nil, err
	}
	list, err := s.q.ListBudgets(ctx, t.ID)
	if err != nil {
		return nil, apierr.FromStore(err)
	}
	keys, err := s.q.ListAPIKeys(ctx, t.ID)
	if err != nil {
		return nil, apierr.FromStore(err)
	}
	names := map[pgtype.UUID]string{}
	for _, k := range keys {
		names[k.ID] = k.Name
	}
	items, next := page(list, off, size)
	resp := &adminv1.ListBudgetsResponse{NextPageToken: next}
	for _, b := range items {
		leased, err := s.q.OutstandingLeaseNanos(ctx, b.ID)
		if err != nil {
			return nil, apierr.FromStore(err)
		}
		resp.Budgets = append(resp.Budgets, budgetProto(b, names[b.KeyID], leased))
	}
	return connect.NewResponse(resp), nil
}

// DeleteBudget deletes a budget. Cost owners and tenant admins.
func (s *BudgetService) DeleteBudget(ctx context.Context, req *connect.Request[adminv1.DeleteBudgetRequest]) (*connect.Response[adminv1.DeleteBudgetResponse], error) {
	m := req.Msg
	p, t, err := scope(ctx, s.q, m.GetTenant(), budgetWriters()...)
	if err != nil {
		return nil, err
	}
	var ps apierr.Problems
	if m.GetTenant() == "" {
		ps.Add("tenant", apierr.CodeRequired, "a tenant is required")
	}
	apierr.Name(&ps, "name", m.GetName())
	if err := ps.Err(); err != nil {
		return nil, err
	}
	err = s.tx.Tx(ctx, p.Actor(), func(tx *store.Tx) error {
		n, err := tx.Q.DeleteBudget(ctx, sqlc.DeleteBudgetParams{TenantID: t.ID, Name: m.GetName()})
		if err != nil {
			return err
		}
		if n == 0 {
			return apierr.NotFound("budget", m.GetName())
		}
		if err := tx.Changed(ctx, t.ID); err != nil {
			return err
		}
		return tx.Audit(ctx, "delete", "budgets", m.GetName(), nil)
	})
	if err != nil {
		return nil, apierr.FromStore(err)
	}
	return connect.NewResponse(&adminv1.DeleteBudgetResponse{}), nil
}

func budgetProto(b sqlc.Budget, key string, leased int64) *adminv1.Budget {
	out := &adminv1.Budget{
		Id: store.UUIDString(b.ID), Name: b.Name, LimitNanos: b.LimitNanos, Period: periodProto(b.Period),
		Key: key, SpentNanos: b.SpentNanos, LeasedNanos: leased, PeriodStart: ts(b.PeriodStart),
		CreatedAt: ts(b.CreatedAt), UpdatedAt: ts(b.UpdatedAt),
	}
	if end := periodEnd(b.Period, b.PeriodStart.Time); !end.IsZero() {
		out.PeriodEnd = ts(pgts(end))
	}
	return out
}
