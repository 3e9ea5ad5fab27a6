package provider

import (
	"context"
	"strconv"
	"strings"

	"connectrpc.com/connect"

	"weir.dev/controlplane/internal/store"
	"weir.dev/db/sqlc"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	"weir.dev/proto/gen/weir/admin/v1/adminv1connect"
	configv1 "weir.dev/proto/gen/weir/config/v1"
	"weir.dev/routing/rules"
)

// ListPrices implements adminv1connect.PriceServiceHandler.
func (s *Service) ListPrices(ctx context.Context, req *connect.Request[adminv1.ListPricesRequest]) (*connect.Response[adminv1.ListPricesResponse], error) {
	m := req.Msg
	out, err := s.listPrices(ctx, m)
	if err != nil {
		return nil, s.rpcError(ctx, adminv1connect.PriceServiceListPricesProcedure, err)
	}
	return connect.NewResponse(out), nil
}

func (s *Service) listPrices(ctx context.Context, m *adminv1.ListPricesRequest) (*adminv1.ListPricesResponse, error) {
	var entries []*adminv1.PriceEntry
	err := s.read(ctx, m.GetTenant(), func(q *sqlc.Queries, sc scope) error {
		var recs []listed
		if m.GetRecord() != "" {
			st, found, err := loadRecord(ctx, q, sc.owner, m.GetRecord(), false)
			if err != nil {
				return err
			}
			shared := false
			if !found && !sc.managed() {
				if st, found, err = sharedRecordNamed(ctx, q, sc.owner, m.GetRecord(), false); err != nil {
					return err
				}
				shared = true
			}
			if !found {
				return errRecordNotFound(m.GetRecord())
			}
			recs = []listed{{st: st, shared: shared}}
		} else {
			var err error
			if recs, err = records(ctx, q, sc, m.GetIncludeShared()); err != nil {
				return err
			}
		}
		for _, l := range recs {
			entries = append(entries, PriceEntries(l.st.rec, m.GetModel())...)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	page, next, err := paginate(entries, m.GetPageSize(), m.GetPageToken())
	if err != nil {
		return nil, err
	}
	return &adminv1.ListPricesResponse{Prices: page, NextPageToken: next}, nil
}

// PriceEntries returns the effective price of every model (only model,
// when not empty) on every member of r (the "primary" member of a plain
// record), ordered by member name and model. A model a member serves
// without any price appears with an empty price and whole false.
// RecordPriced says whether the record counts as priced for the model: the
// record, or every member serving it, has a whole price for it (R-COST-1,
// R-MODEL-4).
func PriceEntries(r *Record, model string) []*adminv1.PriceEntry {
	type ep struct {
		name string
		m    *Member
	}
	var eps []ep
	if r.Pool {
		for _, m := range r.Members {
			eps = append(eps, ep{m.Name, m})
		}
		sortByName(eps, func(e ep) string { return e.name })
	} else {
		eps = []ep{{rules.PrimaryMember, nil}}
	}
	resolved := make([][]*adminv1.ResolvedPrice, len(eps))
	priced := map[string]bool{}
	for i, e := range eps {
		resolved[i] = ResolvedPrices(r, e.m)
		for _, rp := range resolved[i] {
			name := rp.GetPrice().GetModel()
			if _, seen := priced[name]; !seen {
				priced[name] = true
			}
			priced[name] = priced[name] && rp.GetWhole()
		}
	}
	wire := r.Spec.GetWireFormat()
	for _, p := range r.Spec.GetPrices() {
		if missingParts(p, wire) == "" {
			priced[p.GetModel()] = true
		}
	}
	var out []*adminv1.PriceEntry
	for i, e := range eps {
		for _, rp := range resolved[i] {
			if model != "" && rp.GetPrice().GetModel() != model {
				continue
			}
			out = append(out, &adminv1.PriceEntry{
				Record: r.Name, Member: e.name, Managed: r.Managed, Price: rp,
				RecordPriced: priced[rp.GetPrice().GetModel()],
			})
		}
	}
	return out
}

func sortByName[T any](xs []T, name func(T) string) {
	for i := 1; i < len(xs); i++ {
		for j := i; j > 0 && name(xs[j]) < name(xs[j-1]); j-- {
			xs[j], xs[j-1] = xs[j-1], xs[j]
		}
	}
}

// UpdatePrices implements adminv1connect.PriceServiceHandler.
func (s *Service) UpdatePrices(ctx context.Context, req *connect.Request[adminv1.UpdatePricesRequest]) (*connect.Response[adminv1.UpdatePricesResponse], error) {
	m := req.Msg
	out := &adminv1.UpdatePricesResponse{}
	err := s.change(ctx, m.GetTenant(), func(tx *store.Tx, sc scope) error {
		before, found, err := loadRecord(ctx, tx.Q, sc.owner, m.GetRecord(), true)
		if err != nil {
			return err
		}
		if !found {
			return errRecordNotFound(m.GetRecord())
		}
		if err := checkRevision(before, m.GetExpectedRevision()); err != nil {
			return err
		}
		rec, earlier, err := updatePrices(before.rec, m)
		if err != nil {
			return err
		}
		o, err := s.commit(ctx, tx, sc, before, rec, earlier, nil, false)
		if err != nil {
			return err
		}
		var set []string
		for _, p := range m.GetSet() {
			set = append(set, p.GetModel())
		}
		if err := tx.Audit(ctx, "set_prices", auditProviders, rec.Name, map[string]any{
			"id": store.UUIDString(o.st.row.ID), "member": m.GetMember(), "set": set, "removed": m.GetRemoveModels(),
		}); err != nil {
			return err
		}
		out.Record, out.Prices, out.Warnings = recordProto(o.st, sc.tenant, nil), PriceEntries(o.st.rec, ""), o.warnings
		return nil
	})
	if err != nil {
		return nil, s.rpcError(ctx, adminv1connect.PriceServiceUpdatePricesProcedure, err)
	}
	return connect.NewResponse(out), nil
}

// updatePrices returns the stored record with an UpdatePricesRequest
// applied, and the request's own problems (each model one the target
// serves, at most once across set and remove_models). The target is the
// record (member empty, or "primary" on a plain record) or one member of a
// pool; its prices of the models in set and remove_models go, then set's
// prices are added whole, each replacing the stored price of its model.
// Problems Validate then finds in the target's prices are named by the
// request's fields ("set[2].cache_read_micros").
func updatePrices(stored *Record, m *adminv1.UpdatePricesRequest) (*Record, error, error) {
	rec := stored.clone()
	rec.namePath, rec.specPath = "record", "record"
	target, err := priceTarget(rec, m.GetMember())
	if err != nil {
		return nil, nil, err
	}
	named, ps := namedPriceModels(m, servedModels(rec, target), target)

	prices := &rec.Spec.Prices
	targetPath := rec.specField()
	if target != nil {
		prices = &target.Spec.Prices
		targetPath = target.specField()
	}
	kept := []*configv1.Price{}
	for _, p := range *prices {
		if _, touched := named[p.GetModel()]; !touched {
			kept = append(kept, p)
		}
	}
	set := make([]*configv1.Price, 0, len(m.GetSet())+len(kept))
	for _, p := range m.GetSet() {
		set = append(set, cloneSpecPrice(p))
	}
	*prices = append(set, kept...)

	// The target's prices now start with set, in order: name Validate's
	// problems of those by the request's fields.
	rec.fieldMap = setFieldMap(targetPath+".prices[", len(m.GetSet()))
	return rec, ps.err(), nil
}

// priceTarget returns the member of rec whose prices an UpdatePrices
// request with this member changes: nil for the record itself (member
// empty, or "primary" on a plain record), else the pool member so named;
// a member rec lacks is errMemberNotFound.
func priceTarget(rec *Record, member string) (*Member, error) {
	switch {
	case member == "" || (!rec.Pool && member == rules.PrimaryMember):
		return nil, nil
	case !rec.Pool:
		return nil, errMemberNotFound(rec.Name, member)
	}
	target := rec.member(member)
	if target == nil {
		return nil, errMemberNotFound(rec.Name, member)
	}
	return target, nil
}

// servedModels returns the models target serves: its own subset when it
// lists one, else every model of rec (target nil is the record itself).
func servedModels(rec *Record, target *Member) map[string]bool {
	served := map[string]bool{}
	for _, md := range rec.Spec.GetModels() {
		served[md.GetName()] = true
	}
	if target != nil && len(target.Spec.GetModels()) > 0 {
		served = map[string]bool{}
		for _, name := range target.Spec.GetModels() {
			served[name] = true
		}
	}
	return served
}

// namedPriceModels checks the models an UpdatePricesRequest names, in set
// then remove_models: each given, one target serves (served), and named
// once across both. It returns each model named with the field that named
// it first, and the problems found.
func namedPriceModels(m *adminv1.UpdatePricesRequest, served map[string]bool, target *Member) (map[string]string, *problems) {
	var ps problems
	whose := "the record"
	if target != nil {
		whose = "member " + quote(target.Name)
	}
	named := map[string]string{} // model → the field that named it first
	name := func(field, model string) {
		switch {
		case model == "":
			ps.add(field, CodeRequired, "missing: name the model")
		case !served[model]:
			ps.add(field, CodeNotAModel, "%s is not a model %s serves", quote(model), whose)
		}
		if first, dup := named[model]; dup && model != "" {
			ps.add(field, CodeDuplicate, "model %s is already named by %s", quote(model), first)
			return
		}
		named[model] = field
	}
	for i, p := range m.GetSet() {
		name("set"+idx(i)+".model", p.GetModel())
	}
	for i, model := range m.GetRemoveModels() {
		name("remove_models"+idx(i), model)
	}
	return named, &ps
}

// setFieldMap returns the Record.fieldMap that names a problem of one of
// the first n prices under prefix ("spec.prices[") by the request field
// that set it ("set[2].cache_read_micros"), and leaves every other field
// as it is.
func setFieldMap(prefix string, n int) func(string) string {
	return func(f string) string {
		rest, ok := strings.CutPrefix(f, prefix)
		if !ok {
			return f
		}
		num, tail, ok := strings.Cut(rest, "]")
		i, err := strconv.Atoi(num)
		if !ok || err != nil || i >= n {
			return f
		}
		return "set" + idx(i) + tail
	}
}

func cloneSpecPrice(p *configv1.Price) *configv1.Price {
	out := &configv1.Price{Model: p.GetModel()}
	for _, f := range priceParts {
		if v := partOf(p, f); v != nil {
			*f.ptr(out) = ptr(*v)
		}
	}
	return out
}
