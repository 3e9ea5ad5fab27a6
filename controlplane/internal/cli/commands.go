package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"weir.dev/controlplane/internal/usageexport"
)

// commands returns every command of DESIGN §3 (and a few read-only or
// cleanup companions the API offers). The table is built per run: no
// package state.
func (a *app) commands() []*command {
	return slices.Concat(
		loginCommands(),
		tenantCommands(),
		keyCommands(),
		secretCommands(),
		providerCommands(),
		poolCommands(),
		budgetCommands(),
		usageCommands(),
		callsCommands(),
		edgesCommands(),
		doctorCommands(),
	)
}

// loginCommands is `weir login`.
func loginCommands() []*command {
	return []*command{
		{path: "login", required: []string{"url", "token"},
			summary: "check the admin API URL and token, and save them with a default tenant",
			notes: []string{"The config file (config.json under $WEIR_CONFIG_DIR) holds the token; it is written with mode 0600. " +
				"WEIR_URL and WEIR_TOKEN, when set, are used in place of --url and --token, and override the saved ones on every command."},
			setup: setupLogin},
	}
}

// tenantCommands are the `weir tenant` commands.
func tenantCommands() []*command {
	return []*command{
		{path: "tenant create", args: []string{"NAME"}, summary: "create a tenant (cluster admins)",
			setup: plain((*call).tenantCreate)},
		{path: "tenant list", summary: "list the tenants you hold a role on",
			setup: plain((*call).tenantList)},
		{path: "tenant show", args: []string{"NAME"}, summary: "show a tenant, its data rules and shared records",
			setup: plain((*call).tenantShow)},
		{path: "tenant rules set",
			summary: "replace the tenant's data rules as a whole (R-ELIG-2)", tenant: tenantRequired,
			setup: setupRulesSet},
		{path: "tenant limits set",
			summary: "set the tenant's caller limits (R-CAP-2)", tenant: tenantRequired,
			setup: setupLimitsSet,
			notes: []string{"A flag left out keeps its stored value (the limits are read first, then set); 0 removes a limit, and for " +
				"--max-in-flight the cluster default (controlplane serve --default-tenant-max-in-flight, 512 unless set) then applies. " +
				"Tenant admins may set --max-in-flight up to the cluster default, or keep or lower one a cluster admin set above it; " +
				"only cluster admins may raise it further. Limits are cluster-wide: each edge enforces its share (R-HEAD-7). " +
				"A call over a limit is refused with 429 weir_tenant_limit."}},
	}
}

// keyCommands are the `weir key` commands.
func keyCommands() []*command {
	return []*command{
		{path: "key create", args: []string{"NAME"},
			summary: "create an API key and print it once", tenant: tenantRequired, setup: setupKeyCreate,
			notes: []string{`stdout is the key alone on one line (with --output json: {"id","name","key"}); it is never shown again.`,
				"--rpm and --max-in-flight limit the key on top of its tenant's limits (R-CAP-2): a call over either is refused " +
					"with 429 weir_key_limit. Limits are cluster-wide: each edge enforces its share (R-HEAD-7)."}},
		{path: "key list", summary: "list the tenant's API keys", tenant: tenantRequired,
			setup: plain((*call).keyList)},
		{path: "key revoke", args: []string{"NAME"}, summary: "revoke an API key on every edge", tenant: tenantRequired,
			setup: plain((*call).keyRevoke)},
	}
}

// secretCommands are the `weir secret` commands.
func secretCommands() []*command {
	return []*command{
		{path: "secret set", args: []string{"NAME"}, required: []string{"host"},
			summary: "create or replace a secret; the value is read from stdin and never echoed", tenant: tenantOptional,
			setup: setupSecretSet,
			notes: []string{"The value is read from stdin (a final newline is dropped), never from a flag. A SigV4 access-key secret holds " +
				`ACCESS_KEY_ID:SECRET_ACCESS_KEY (or JSON {"access_key_id","secret_access_key","session_token"}); an OAuth2 client secret ` +
				"holds the client secret alone; a google-service-account (Vertex AI) key secret holds the service account's JSON key file, and is bound " +
				"to its token_uri's host (oauth2.googleapis.com by default) as well as the member's. Once a record uses the secret, a value " +
				"that does not fit that use is refused. The edge sends a secret only to the hosts it is bound to (R-SEC-1)."}},
		{path: "secret list", summary: "list secrets (names, hosts, users; never values)", tenant: tenantOptional,
			setup: plain((*call).secretList)},
		{path: "secret delete", args: []string{"NAME"}, summary: "delete a secret no record uses", tenant: tenantOptional,
			setup: plain((*call).secretDelete)},
	}
}

// providerCommands are the `weir provider` commands.
func providerCommands() []*command {
	return []*command{
		{path: "provider create", args: []string{"RECORD"}, required: []string{"preset", "base-url"},
			summary: "create a plain provider record", tenant: tenantOptional, setup: setupProviderCreate,
			notes: []string{"Managed records are created by cluster admins with --tenant \"\" and shared with tenants by weir provider share."}},
		{path: "provider set", args: []string{"RECORD"},
			summary: "change the given fields of a record (R-SEC-4 warnings)", tenant: tenantOptional, setup: setupProviderSet,
			notes: []string{"Only the flags given change their fields; a list or map flag given empty (--tag=) clears it. " +
				"Warns when two members share a key secret or a host (R-SEC-4)."}},
		{path: "provider show", args: []string{"RECORD"},
			summary: "show a record, its members with inherited fields resolved, and each edge's last view", tenant: tenantOptional,
			setup: plain((*call).providerShow),
			notes: []string{"The line after the record's name, routing, says in one line how the edges route over the record: " +
				"how calls spread over the members that can take them (weighted, or ordered: the lowest order first, weighted among equals), " +
				"any allowed regions, members off, and recovery settings that differ from the defaults.",
				"An edge's view shows a cooldown only while it runs."}},
		{path: "provider list", summary: "list provider records (and managed records shared with the tenant)", tenant: tenantOptional,
			setup: plain((*call).providerList)},
		{path: "provider delete", args: []string{"RECORD"}, summary: "delete a record and its members", tenant: tenantOptional,
			setup: plain((*call).providerDelete)},
		{path: "provider share", args: []string{"RECORD"}, required: []string{"tenant"},
			summary: "share a managed record with a tenant (cluster admins, R-MODEL-3)", setup: setupShare(true)},
		{path: "provider unshare", args: []string{"RECORD"}, required: []string{"tenant"},
			summary: "stop sharing a managed record with a tenant (cluster admins)", setup: setupShare(false)},
	}
}

// poolCommands are the `weir provider pool` commands.
func poolCommands() []*command {
	return []*command{
		{path: "provider pool add", args: []string{"RECORD", "MEMBER"}, required: []string{"base-url"},
			summary: "add a pool member (creating the pool, or turning a plain record into one)", tenant: tenantOptional,
			setup: setupPoolAdd,
			notes: []string{"On a record that does not exist, pool add creates it as a pool: --preset and --models are then the record's, " +
				"and the record-only flags (--allow-region, --max-attempts, --max-wait, --attempt-deadline, --rate-limit-header, " +
				"--default-max-output, --priority, --internal) apply to it. On a plain record, its own endpoint first becomes a member " +
				"named by --record-member. What a member does not set it takes from its record."}},
		{path: "provider pool set", args: []string{"RECORD", "MEMBER"},
			summary: "change the given fields of a member, or switch it off or on", tenant: tenantOptional, setup: setupPoolSet,
			notes: []string{"Only the flags given change their fields; an optional field given empty (--region=) goes back to the record's."}},
		{path: "provider pool remove", args: []string{"RECORD", "MEMBER"},
			summary: "remove a member (the last one turns the record plain)", tenant: tenantOptional,
			setup: plain((*call).poolRemove)},
		{path: "provider pool list", args: []string{"RECORD"},
			summary: "list a record's members with inherited fields resolved and edge views", tenant: tenantOptional,
			setup: plain((*call).poolList),
			notes: []string{"An edge's view shows a cooldown only while it runs."}},
		{path: "provider pool reset", args: []string{"RECORD", "MEMBER"},
			summary: "clear a member's cooldown, spent mark and disable on every edge (R-OBS-4)", tenant: tenantOptional,
			setup: plain((*call).poolReset)},
	}
}

// budgetCommands are the `weir budget` commands.
func budgetCommands() []*command {
	return []*command{
		{path: "budget set", args: []string{"NAME"}, required: []string{"limit", "period"},
			summary: "create or replace a budget", tenant: tenantRequired, setup: setupBudgetSet},
		{path: "budget list", summary: "list budgets with their current spend", tenant: tenantRequired,
			setup: plain((*call).budgetList)},
		{path: "budget delete", args: []string{"NAME"}, summary: "delete a budget", tenant: tenantRequired,
			setup: plain((*call).budgetDelete)},
	}
}

// usageCommands are the `weir usage` commands.
func usageCommands() []*command {
	return []*command{
		{path: "usage export",
			summary: "stream usage and cost rows for chargeback (default: this month so far)", tenant: tenantOptional, setup: setupUsageExport,
			notes: []string{"CSV and JSON have the same fields: " + strings.Join(usageexport.Columns(), ", ") + ". " +
				"Counts are integers and costs exact decimal dollars (JSON numbers in JSON). CSV text cells starting with =, +, -, @, " +
				"a tab or a carriage return get a leading ' so that spreadsheets do not run them."}},
	}
}

// callsCommands are the `weir calls` commands.
func callsCommands() []*command {
	return []*command{
		{path: "calls list", summary: "list recorded calls, newest first",
			tenant: tenantRequired, setup: setupCallsList},
		{path: "calls show", args: []string{"CALL_ID"}, summary: "show one call with every attempt",
			tenant: tenantRequired, setup: plain((*call).callShow),
			notes: []string{"Attempt outcomes are answered, failed_over, failed and skipped (R-SEE-2); call outcomes answered, failed, " +
				"unknown, refused and cancelled; failure kinds as the edge names them (rate_limited, quota_spent, server_error, transport, " +
				"key_refused, timeout, …)."}},
	}
}

// edgesCommands are the `weir edges` commands.
func edgesCommands() []*command {
	return []*command{
		{path: "edges list", summary: "list the edges heard from", tenant: tenantOptional,
			setup: plain((*call).edgesList)},
	}
}

// doctorCommands are the `weir doctor` commands.
func doctorCommands() []*command {
	return []*command{
		{path: "doctor", summary: "check configuration and live state for problems (the whole cluster for cluster admins without a tenant)",
			tenant: tenantOptional, setup: plain((*call).doctor)},
	}
}

// plain is the setup of a command without flags of its own: m runs it.
func plain(m func(*call, context.Context) error) func(*flagSet) runFunc {
	return func(*flagSet) runFunc {
		return func(ctx context.Context, c *call) error { return m(c, ctx) }
	}
}

// allPages fetches every page of a List RPC. fetch gets the page token ("" for
// the first page) and returns the page's items and the next token.
func allPages[T any](ctx context.Context, fetch func(ctx context.Context, token string) ([]T, string, error)) ([]T, error) {
	var all []T
	seen := map[string]bool{}
	token := ""
	for {
		items, next, err := fetch(ctx, token)
		if err != nil {
			return nil, err
		}
		all = append(all, items...)
		if next == "" {
			return all, nil
		}
		if seen[next] {
			return nil, fmt.Errorf("the server repeated page token %q", next)
		}
		seen[next] = true
		token = next
	}
}
