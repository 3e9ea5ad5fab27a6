package console

import (
	"math/big"
	"net/http"
	"net/url"
	"strings"

	"connectrpc.com/connect"

	"weir.dev/controlplane/internal/money"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	"weir.dev/web"
)

// budgetsPage is the tenant's budgets page (/console/budgets): the list
// with spend, the set form and deletion.
type budgetsPage struct{ *base }

// budgetPeriods are the form's period choices, in order.
var budgetPeriods = []struct {
	value  string
	period configv1.BudgetPeriod
}{
	{"day", configv1.BudgetPeriod_BUDGET_PERIOD_DAY},
	{"month", configv1.BudgetPeriod_BUDGET_PERIOD_MONTH},
	{"total", configv1.BudgetPeriod_BUDGET_PERIOD_TOTAL},
}

func periodName(p configv1.BudgetPeriod) string {
	for _, bp := range budgetPeriods {
		if bp.period == p {
			return bp.value
		}
	}
	return "unknown"
}

// show lists the tenant's budgets with spend against limit, with
// the set form for tenant admins and cost owners.
func (c budgetsPage) show(w http.ResponseWriter, r *http.Request, s *session) {
	if c.needTenant(w, r, s, "Budgets", "budgets") {
		return
	}
	c.renderBudgets(w, r, s, http.StatusOK, web.BudgetsView{Form: web.BudgetForm{Period: "month"}})
}

// setBudget sets a budget. The limit is read as decimal dollars and
// converted exactly; a malformed amount is a problem of limit_nanos, shown
// without calling the API.
func (c budgetsPage) setBudget(w http.ResponseWriter, r *http.Request, s *session) {
	if c.needTenant(w, r, s, "Budgets", "budgets") {
		return
	}
	f := web.BudgetForm{
		Name:   strings.TrimSpace(r.PostFormValue("name")),
		Limit:  strings.TrimSpace(r.PostFormValue("limit_nanos")),
		Period: r.PostFormValue("period"),
		Key:    strings.TrimSpace(r.PostFormValue("key")),
	}
	var p web.Problems
	limit, err := parseUSD(f.Limit)
	if err != nil {
		addProblem(&p, "limit_nanos", err.Error())
	}
	period := configv1.BudgetPeriod_BUDGET_PERIOD_UNSPECIFIED
	for _, bp := range budgetPeriods {
		if bp.value == f.Period {
			period = bp.period
		}
	}
	if p.Any() {
		c.renderBudgets(w, r, s, http.StatusUnprocessableEntity, web.BudgetsView{Form: f, Problems: p})
		return
	}
	_, err = s.api.Budgets.SetBudget(r.Context(), connect.NewRequest(&adminv1.SetBudgetRequest{
		Tenant: s.tenant, Name: f.Name, LimitNanos: limit, Period: period, Key: f.Key,
	}))
	if err != nil {
		p, status, done := c.formError(w, r, s, err)
		if done {
			return
		}
		c.renderBudgets(w, r, s, status, web.BudgetsView{Form: f, Problems: p})
		return
	}
	c.redirect(w, r, acctURL("/console/budgets", s.tenant, nil), web.Flash{Kind: web.FlashOK, Text: "Budget " + f.Name + " set."})
}

// deleteBudget deletes the named budget.
func (c budgetsPage) deleteBudget(w http.ResponseWriter, r *http.Request, s *session) {
	name := r.PathValue("name")
	back := acctURL("/console/budgets", s.tenant, nil)
	_, err := s.api.Budgets.DeleteBudget(r.Context(), connect.NewRequest(&adminv1.DeleteBudgetRequest{Tenant: s.tenant, Name: name}))
	if err != nil {
		p, _, done := c.formError(w, r, s, err)
		if done {
			return
		}
		c.redirect(w, r, back, web.Flash{Kind: web.FlashError, Text: "Budget " + name + " was not deleted. " + p.Message})
		return
	}
	c.redirect(w, r, back, web.Flash{Kind: web.FlashOK, Text: "Budget " + name + " deleted."})
}

func (c budgetsPage) renderBudgets(w http.ResponseWriter, r *http.Request, s *session, status int, v web.BudgetsView) {
	var list []*adminv1.Budget
	tok := ""
	for {
		resp, err := s.api.Budgets.ListBudgets(r.Context(), connect.NewRequest(&adminv1.ListBudgetsRequest{
			Tenant: s.tenant, PageSize: 1000, PageToken: tok,
		}))
		if err != nil {
			c.fail(w, r, s, err)
			return
		}
		list = append(list, resp.Msg.GetBudgets()...)
		if tok = resp.Msg.GetNextPageToken(); tok == "" {
			break
		}
	}
	v.Tenant, v.CSRF = s.tenant, s.csrf
	v.CanManage = s.can(adminv1.Role_ROLE_TENANT_ADMIN, adminv1.Role_ROLE_COST_OWNER)
	v.Action = acctURL("/console/budgets", s.tenant, nil)
	for _, b := range list {
		v.Budgets = append(v.Budgets, budgetRow(b, s.tenant))
	}
	if v.CanManage {
		keys, err := listKeys(r, s, false)
		if err != nil {
			c.fail(w, r, s, err)
			return
		}
		v.Keys = []web.Option{{Value: "", Label: "(whole tenant)", Selected: v.Form.Key == ""}}
		for _, k := range keys {
			v.Keys = append(v.Keys, web.Option{Value: k.GetName(), Label: k.GetName(), Selected: k.GetName() == v.Form.Key})
		}
		if v.Form.Key != "" && !budgetHasOption(v.Keys, v.Form.Key) {
			// A key that is gone still shows what was submitted.
			v.Keys = append(v.Keys, web.Option{Value: v.Form.Key, Label: v.Form.Key, Selected: true})
		}
		for _, bp := range budgetPeriods {
			v.Periods = append(v.Periods, web.Option{Value: bp.value, Label: bp.value, Selected: bp.value == v.Form.Period})
		}
	}
	c.page(w, r, s, status, "Budgets", "budgets", web.BudgetsPage(v))
}

func budgetHasOption(opts []web.Option, v string) bool {
	for _, o := range opts {
		if o.Value == v {
			return true
		}
	}
	return false
}

// budgetRow turns a budget into its row: every amount an exact decimal.
func budgetRow(b *adminv1.Budget, tenant string) web.BudgetRow {
	limit, spent := b.GetLimitNanos(), b.GetSpentNanos()
	left := limit - spent
	if left < 0 {
		left = 0
	}
	row := web.BudgetRow{
		Name: b.GetName(), Period: periodName(b.GetPeriod()), Key: b.GetKey(),
		Limit: fmtUSD(limit), Spent: fmtUSD(spent), Leased: fmtUSD(b.GetLeasedNanos()), Left: fmtUSD(left),
		MeterMax: money.FormatNanos(limit), MeterHigh: money.FormatNanos(limit - limit/5),
		Percent: budgetPercent(spent, limit), Over: limit > 0 && spent >= limit,
		DeleteURL: acctURL("/console/budgets/"+url.PathEscape(b.GetName())+"/delete", tenant, nil),
	}
	// The meter's value stays within [0, max], as HTML requires.
	mv := spent
	if mv > limit {
		mv = limit
	}
	if mv < 0 {
		mv = 0
	}
	row.MeterValue = money.FormatNanos(mv)
	if t := b.GetPeriodStart(); t != nil {
		row.PeriodStart = t.AsTime()
	}
	if t := b.GetPeriodEnd(); t != nil {
		row.PeriodEnd = t.AsTime()
	}
	return row
}

// percent is part/whole as a whole percentage rounded down, computed on
// integers ("—" for a zero whole).
func budgetPercent(part, whole int64) string {
	if whole <= 0 {
		return "—"
	}
	p := new(big.Int).Mul(big.NewInt(part), big.NewInt(100))
	p.Quo(p, big.NewInt(whole))
	return p.String() + "%"
}
