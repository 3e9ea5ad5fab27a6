package console

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"connectrpc.com/connect"

	"weir.dev/controlplane/internal/sakey"
	adminv1 "weir.dev/proto/gen/weir/admin/v1"
	"weir.dev/web"
)

// secretsPage is the tenant's secrets page (/console/secrets): names and
// hosts, the set form and deletion (values are never shown).
type secretsPage struct{ *base }

// show lists the tenant's secrets (names, hosts, users, when set;
// never values), with the set form for tenant and provider admins.
func (c secretsPage) show(w http.ResponseWriter, r *http.Request, s *session) {
	if c.needTenant(w, r, s, "Secrets", "secrets") {
		return
	}
	c.renderSecrets(w, r, s, http.StatusOK, web.SecretsView{})
}

// setSecret sets a secret. The value goes to the API and nowhere else: a
// refused form comes back with the name and hosts but an empty value, and
// success redirects.
func (c secretsPage) setSecret(w http.ResponseWriter, r *http.Request, s *session) {
	if c.needTenant(w, r, s, "Secrets", "secrets") {
		return
	}
	name := strings.TrimSpace(r.PostFormValue("name"))
	hostsText := strings.TrimSpace(r.PostFormValue("hosts"))
	hosts := splitItems(hostsText)
	kind := ""
	if r.PostFormValue("kind") == web.KindServiceAccount {
		kind = web.KindServiceAccount
		if p := checkServiceAccountKey(r.PostFormValue("value"), hosts); len(p.List) > 0 {
			c.renderSecrets(w, r, s, http.StatusUnprocessableEntity, web.SecretsView{
				Name: name, Hosts: hostsText, HostsProblem: p.For("hosts"), Problems: p, KeyKind: kind,
			})
			return
		}
	}
	resp, err := s.api.Secrets.SetSecret(r.Context(), connect.NewRequest(&adminv1.SetSecretRequest{
		Tenant: s.tenant, Name: name, Value: r.PostFormValue("value"), Hosts: hosts,
	}))
	if err != nil {
		p, status, done := c.formError(w, r, s, err)
		if done {
			return
		}
		p = foldList(p, "hosts", hosts)
		c.renderSecrets(w, r, s, status, web.SecretsView{
			Name: name, Hosts: hostsText, HostsProblem: p.For("hosts"), Problems: p, KeyKind: kind,
		})
		return
	}
	verb := "updated"
	if resp.Msg.GetCreated() {
		verb = "set"
	}
	flashes := []web.Flash{{Kind: web.FlashOK, Text: "Secret " + name + " " + verb + "."}}
	for _, wn := range resp.Msg.GetWarnings() {
		flashes = append(flashes, web.Flash{Kind: web.FlashWarn, Text: wn.GetMessage()})
	}
	c.redirect(w, r, acctURL("/console/secrets", s.tenant, nil), flashes...)
}

// deleteSecret deletes the named secret; one still in use is refused with
// its users in the message.
func (c secretsPage) deleteSecret(w http.ResponseWriter, r *http.Request, s *session) {
	name := r.PathValue("name")
	back := acctURL("/console/secrets", s.tenant, nil)
	_, err := s.api.Secrets.DeleteSecret(r.Context(), connect.NewRequest(&adminv1.DeleteSecretRequest{Tenant: s.tenant, Name: name}))
	if err != nil {
		p, _, done := c.formError(w, r, s, err)
		if done {
			return
		}
		c.redirect(w, r, back, web.Flash{Kind: web.FlashError, Text: "Secret " + name + " was not deleted. " + p.Message})
		return
	}
	c.redirect(w, r, back, web.Flash{Kind: web.FlashOK, Text: "Secret " + name + " deleted."})
}

func (c secretsPage) renderSecrets(w http.ResponseWriter, r *http.Request, s *session, status int, v web.SecretsView) {
	var list []*adminv1.Secret
	tok := ""
	for {
		resp, err := s.api.Secrets.ListSecrets(r.Context(), connect.NewRequest(&adminv1.ListSecretsRequest{
			Tenant: s.tenant, PageSize: 1000, PageToken: tok,
		}))
		if err != nil {
			c.fail(w, r, s, err)
			return
		}
		list = append(list, resp.Msg.GetSecrets()...)
		if tok = resp.Msg.GetNextPageToken(); tok == "" {
			break
		}
	}
	v.Tenant, v.CSRF = s.tenant, s.csrf
	v.CanManage = s.can(adminv1.Role_ROLE_TENANT_ADMIN, adminv1.Role_ROLE_PROVIDER_ADMIN)
	v.Action = acctURL("/console/secrets", s.tenant, nil)
	for _, sc := range list {
		row := web.SecretRow{
			Name: sc.GetName(), Hosts: sc.GetHosts(), UpdatedBy: sc.GetUpdatedBy(),
			DeleteURL: acctURL("/console/secrets/"+url.PathEscape(sc.GetName())+"/delete", s.tenant, nil),
		}
		if t := sc.GetUpdatedAt(); t != nil {
			row.Updated = t.AsTime()
		} else if t := sc.GetCreatedAt(); t != nil {
			row.Updated = t.AsTime()
		}
		for _, u := range sc.GetUsedBy() {
			use := u.GetRecord()
			if u.GetMember() != "" {
				use += "/" + u.GetMember()
			}
			row.UsedBy = append(row.UsedBy, use+" ("+u.GetField()+")")
		}
		v.Secrets = append(v.Secrets, row)
	}
	c.page(w, r, s, status, "Secrets", "secrets", web.SecretsPage(v))
}

// checkServiceAccountKey returns the problems of a service account key
// (google-service-account auth, Vertex AI) and of the hosts it is bound
// to: at most web.MaxServiceAccountKeyBytes of a key sakey.Check
// accepts, and its token endpoint's host among the hosts (R-SEC-1: the
// edge sends the signed token request there). The admin API checks the
// key's shape too once a member uses the secret; the console checks it
// before the first use. Problems never quote the key.
func checkServiceAccountKey(value string, hosts []string) web.Problems {
	var p problemSet
	if len(value) > web.MaxServiceAccountKeyBytes {
		p.add("value", fmt.Sprintf("the key is larger than %d bytes", web.MaxServiceAccountKeyBytes))
		return p.problems()
	}
	tokenURL, problems := sakey.Check(value)
	for _, pr := range problems {
		p.add("value", pr)
	}
	if tokenURL == "" {
		return p.problems()
	}
	u, _ := url.Parse(tokenURL) // ServiceAccountKey parsed it
	tokenHost := u.Hostname()
	if !slices.ContainsFunc(hosts, func(h string) bool {
		host, _, err := net.SplitHostPort(h)
		if err != nil {
			host = h
		}
		return strings.EqualFold(strings.TrimSuffix(host, "."), tokenHost)
	}) {
		p.add("hosts", fmt.Sprintf("add %s: the key signs a token request sent there (R-SEC-1)", tokenHost))
	}
	return p.problems()
}
