package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"connectrpc.com/connect"

	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	configv1 "weir.dev/proto/gen/weir/config/v1"
)

// limitFlags are --rpm and --max-in-flight of a tenant or a key (ROUTING
// R-CAP-2). They accept any non-negative integer: the admin API checks the
// ranges and lists every problem (exit 1); a value that is not a
// non-negative integer is bad usage (exit 2).
type limitFlags struct {
	rpm, maxInFlight limitFlag
}

// limitFlag is one caller limit: a non-negative integer.
type limitFlag struct{ v int64 }

// String implements flag.Value.
func (f *limitFlag) String() string { return strconv.FormatInt(f.v, 10) }

// Set implements flag.Value.
func (f *limitFlag) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("not an integer")
	}
	if n < 0 {
		return fmt.Errorf("must not be negative (0: no limit)")
	}
	f.v = n
	return nil
}

// add registers the flags, who naming whose limits they are.
func (l *limitFlags) add(fs *flagSet, who, inFlightZero string) {
	fs.Var(&l.rpm, "rpm", "calls per minute `N` "+who+" may start across the cluster, 0-100000000 (0: no limit; R-CAP-2)")
	fs.Var(&l.maxInFlight, "max-in-flight", "calls `N` "+who+" may have in flight at once across the cluster, 0-1000000 (0: "+inFlightZero+"; R-CAP-2)")
}

// setupLimitsSet registers the flags of `weir tenant limits set`.
func setupLimitsSet(fs *flagSet) runFunc {
	var l limitFlags
	l.add(fs, "the tenant", "none of its own, the cluster default applies")
	return func(ctx context.Context, c *call) error {
		if !c.given["rpm"] && !c.given["max-in-flight"] {
			return c.badArgsf("give --rpm, --max-in-flight or both")
		}
		api, err := c.api()
		if err != nil {
			return err
		}
		// The API replaces the limits as a whole: a flag left out keeps the
		// stored value, read first.
		cur, err := api.tenants.GetTenant(ctx, connect.NewRequest(&adminv1.GetTenantRequest{Tenant: c.tenant}))
		if err != nil {
			return fmt.Errorf("read tenant limits: %w", err)
		}
		limits := &configv1.CallerLimits{
			Rpm:         cur.Msg.GetTenant().GetLimits().GetRpm(),
			MaxInFlight: cur.Msg.GetTenant().GetLimits().GetMaxInFlight(),
		}
		if c.given["rpm"] {
			limits.Rpm = l.rpm.v
		}
		if c.given["max-in-flight"] {
			limits.MaxInFlight = l.maxInFlight.v
		}
		resp, err := api.tenants.SetTenantLimits(ctx, connect.NewRequest(&adminv1.SetTenantLimitsRequest{Tenant: c.tenant, Limits: limits}))
		if err != nil {
			return fmt.Errorf("set tenant limits: %w", err)
		}
		t := resp.Msg.GetTenant()
		return c.emit(t, func(w io.Writer) error {
			fmt.Fprintf(w, "limits of %s set\n", t.GetName())
			return kv(w, tenantLimitPairs(t)...)
		})
	}
}

// tenantLimitPairs are the kv lines of a tenant's caller limits.
func tenantLimitPairs(t *adminv1.Tenant) []string {
	return []string{
		"rpm", limitText(t.GetLimits().GetRpm()),
		"max in flight", ownMaxInFlight(t),
		"effective max in flight", strconv.FormatInt(t.GetEffectiveMaxInFlight(), 10),
	}
}

// ownMaxInFlight prints a tenant's own max_in_flight; 0 takes the cluster
// default.
func ownMaxInFlight(t *adminv1.Tenant) string {
	if n := t.GetLimits().GetMaxInFlight(); n > 0 {
		return strconv.FormatInt(n, 10)
	}
	return "none (cluster default)"
}

// limitText prints a caller limit, 0 as "none".
func limitText(n int64) string {
	if n == 0 {
		return "none"
	}
	return strconv.FormatInt(n, 10)
}
