package routing

// Eligible returns the members of r a call may go to, after the hard filters
// of ROUTING.md §2 in this order: off or not serving the model (R-ELIG-1),
// unable to answer the endpoint or a feature the call asks for (R-FMT-3,
// R-FMT-7: 400 weir_unsupported_feature naming the field when that leaves
// none),
// the tenant's data rules (R-ELIG-2), the key's regions (R-ELIG-2), the
// pool's and the caller's region narrowing (R-ELIG-3), and members the pool
// found disabled (R-ELIG-4). When a step leaves no member the call ends with
// that step's error. Cooling and key-refused members are kept: they are
// ordered and skipped per call, not filtered here.
func (t *Table) Eligible(r *Record, model string, req *Request, st *States) ([]*Member, *Error) {
	return t.eligible(make([]*Member, 0, len(r.Members)), r, model, req, st)
}

// eligible is Eligible with the members put in dst, of capacity at least
// len(r.Members).
func (t *Table) eligible(dst []*Member, r *Record, model string, req *Request, st *States) ([]*Member, *Error) {
	ms := dst[:0]
	for _, m := range r.Members {
		if !m.Off && m.Serves(model) {
			ms = append(ms, m)
		}
	}
	if len(ms) == 0 {
		return nil, newError(503, CodePoolUnavailable, "every deployment of "+quote(r.Name)+" serving "+quote(model)+" is off or disabled")
	}
	var lacking Features
	ms = filterMembers(ms, func(m *Member) bool {
		if !m.Format().ServesEndpoint(req.Endpoint) {
			return false
		}
		l := m.Format().Lacks(req.Endpoint, req.Features)
		lacking |= l
		return l == 0
	})
	if len(ms) == 0 {
		if lacking != 0 {
			return nil, newError(400, CodeUnsupportedFeature, "no deployment of "+quote(r.Name)+" that serves "+quote(model)+" supports the request's "+quote(lacking.Field()))
		}
		return nil, newError(400, CodeWrongEndpoint, "model "+quote(model)+" cannot be called through "+req.Endpoint.String())
	}
	ms = filterMembers(ms, func(m *Member) bool { return t.Rules.allows(m) })
	if len(ms) == 0 {
		return nil, newError(403, CodeDataRule, "the tenant's data rules refuse every deployment of "+quote(r.Name))
	}
	if req.Key != nil && len(req.Key.Regions) > 0 {
		ms = filterMembers(ms, func(m *Member) bool { return regionAllowed(m.Region, req.Key.Regions) })
		if len(ms) == 0 {
			return nil, newError(403, CodeProviderNotAllowed, "this API key's regions leave no deployment of "+quote(r.Name))
		}
	}
	if len(r.AllowedRegions) > 0 {
		ms = filterMembers(ms, func(m *Member) bool { return regionAllowed(m.Region, r.AllowedRegions) })
	}
	if len(req.Regions) > 0 {
		ms = filterMembers(ms, func(m *Member) bool { return regionAllowed(m.Region, req.Regions) })
	}
	if len(ms) == 0 {
		return nil, newError(400, CodeNoRoute, "no authorized deployment meets the route constraints")
	}
	if st != nil {
		ms = filterMembers(ms, func(m *Member) bool { return !st.disabled(m.ID) })
		if len(ms) == 0 {
			return nil, newError(503, CodePoolUnavailable, "every deployment of "+quote(r.Name)+" serving "+quote(model)+" is off or disabled")
		}
	}
	return ms, nil
}

// allows applies the tenant's data rules to one member (R-ELIG-2). A member
// with no region is refused by any region rule.
func (d *DataRules) allows(m *Member) bool {
	if len(d.AllowedRegions) > 0 && !regionAllowed(m.Region, d.AllowedRegions) {
		return false
	}
	if d.NoRetainedData && m.RetainsData {
		return false
	}
	for k, v := range d.RequiredTags {
		if got, ok := m.Tags[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// filterMembers keeps the members of ms that keep keeps, in place: ms is
// Eligible's own slice.
func filterMembers(ms []*Member, keep func(*Member) bool) []*Member {
	out := ms[:0]
	for _, m := range ms {
		if keep(m) {
			out = append(out, m)
		}
	}
	return out
}
