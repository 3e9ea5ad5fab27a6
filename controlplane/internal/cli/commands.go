package cli

import (
	"context"
	"flag"
	"fmt"
)

// commands returns every command of DESIGN §3 (and a few read-only or
// cleanup companions the API offers). The table is built per run: no
// package state.
func (a *app) commands() []*command {
	return []*command{
		{path: "login", synopsis: "--url URL --token TOKEN [--tenant T]",
			summary: "check the admin API URL and token, and save them with a default tenant",
			setup:   setupLogin},

		{path: "tenant create", args: []string{"NAME"}, summary: "create a tenant (cluster admins)",
			setup: plain((*call).tenantCreate)},
		{path: "tenant list", summary: "list the tenants you hold a role on",
			setup: plain((*call).tenantList)},
		{path: "tenant show", args: []string{"NAME"}, summary: "show a tenant, its data rules and shared records",
			setup: plain((*call).tenantShow)},
		{path: "tenant rules set", synopsis: "[--allow-region R]… [--no-retained-data] [--require-tag K=V]…",
			summary: "replace the tenant's data rules as a whole (R-ELIG-2)", tenant: tenantRequired,
			setup: setupRulesSet},

		{path: "key create", args: []string{"NAME"}, synopsis: "NAME [--allow-model M]… [--allow-provider RECORD]… [--region R]…",
			summary: "create an API key and print it once", tenant: tenantRequired, setup: setupKeyCreate},
		{path: "key list", summary: "list the tenant's API keys", tenant: tenantRequired,
			setup: plain((*call).keyList)},
		{path: "key revoke", args: []string{"NAME"}, summary: "revoke an API key on every edge", tenant: tenantRequired,
			setup: plain((*call).keyRevoke)},

		{path: "secret set", args: []string{"NAME"}, synopsis: "NAME --host HOST [--host HOST]…   # value from stdin",
			summary: "create or replace a secret; the value is read from stdin and never echoed", tenant: tenantOptional,
			setup: setupSecretSet},
		{path: "secret list", summary: "list secrets (names, hosts, users; never values)", tenant: tenantOptional,
			setup: plain((*call).secretList)},
		{path: "secret delete", args: []string{"NAME"}, summary: "delete a secret no record uses", tenant: tenantOptional,
			setup: plain((*call).secretDelete)},

		{path: "provider create", args: []string{"RECORD"}, synopsis: "RECORD --preset openai|azure-openai|anthropic|bedrock|vllm --base-url URL [flags]",
			summary: "create a plain provider record", tenant: tenantOptional, setup: setupProviderCreate},
		{path: "provider set", args: []string{"RECORD"}, synopsis: "RECORD [flags of provider create]",
			summary: "change the given fields of a record (R-SEC-4 warnings)", tenant: tenantOptional, setup: setupProviderSet},
		{path: "provider show", args: []string{"RECORD"},
			summary: "show a record, its members with inherited fields resolved, and each edge's last view", tenant: tenantOptional,
			setup: plain((*call).providerShow)},
		{path: "provider list", summary: "list provider records (and managed records shared with the tenant)", tenant: tenantOptional,
			setup: plain((*call).providerList)},
		{path: "provider delete", args: []string{"RECORD"}, summary: "delete a record and its members", tenant: tenantOptional,
			setup: plain((*call).providerDelete)},
		{path: "provider share", args: []string{"RECORD"}, synopsis: "RECORD --tenant T",
			summary: "share a managed record with a tenant (cluster admins, R-MODEL-3)", setup: setupShare(true)},
		{path: "provider unshare", args: []string{"RECORD"}, synopsis: "RECORD --tenant T",
			summary: "stop sharing a managed record with a tenant (cluster admins)", setup: setupShare(false)},

		{path: "provider pool add", args: []string{"RECORD", "MEMBER"}, synopsis: "RECORD MEMBER [--preset P] --base-url URL [flags]",
			summary: "add a pool member (creating the pool, or turning a plain record into one)", tenant: tenantOptional,
			setup: setupPoolAdd},
		{path: "provider pool set", args: []string{"RECORD", "MEMBER"}, synopsis: "RECORD MEMBER [--off|--on] [flags of pool add]",
			summary: "change the given fields of a member, or switch it off or on", tenant: tenantOptional, setup: setupPoolSet},
		{path: "provider pool remove", args: []string{"RECORD", "MEMBER"},
			summary: "remove a member (the last one turns the record plain)", tenant: tenantOptional,
			setup: plain((*call).poolRemove)},
		{path: "provider pool list", args: []string{"RECORD"},
			summary: "list a record's members with inherited fields resolved and edge views", tenant: tenantOptional,
			setup: plain((*call).poolList)},
		{path: "provider pool reset", args: []string{"RECORD", "MEMBER"},
			summary: "clear a member's cooldown, spent mark and disable on every edge (R-OBS-4)", tenant: tenantOptional,
			setup: plain((*call).poolReset)},

		{path: "budget set", args: []string{"NAME"}, synopsis: "NAME --limit USD --period day|month|total [--key KEYNAME]",
			summary: "create or replace a budget", tenant: tenantRequired, setup: setupBudgetSet},
		{path: "budget list", summary: "list budgets with their current spend", tenant: tenantRequired,
			setup: plain((*call).budgetList)},
		{path: "budget delete", args: []string{"NAME"}, summary: "delete a budget", tenant: tenantRequired,
			setup: plain((*call).budgetDelete)},

		{path: "usage export", synopsis: "--from DATE --to DATE [--format csv|json]   # DATE: YYYY-MM-DD or RFC 3339",
			summary: "stream usage and cost rows for chargeback", tenant: tenantOptional, setup: setupUsageExport},

		{path: "calls list", synopsis: "[--since DUR] [--member M]", summary: "list recorded calls, newest first",
			tenant: tenantRequired, setup: setupCallsList},
		{path: "calls show", args: []string{"CALL_ID"}, summary: "show one call with every attempt",
			tenant: tenantRequired, setup: plain((*call).callShow)},

		{path: "edges list", summary: "list the edges heard from", tenant: tenantOptional,
			setup: plain((*call).edgesList)},

		{path: "doctor", summary: "check configuration and live state for problems (the whole cluster for cluster admins without a tenant)",
			tenant: tenantOptional, setup: plain((*call).doctor)},
	}
}

// plain is the setup of a command without flags of its own: m runs it.
func plain(m func(*call, context.Context) error) func(*flag.FlagSet) runFunc {
	return func(*flag.FlagSet) runFunc {
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
