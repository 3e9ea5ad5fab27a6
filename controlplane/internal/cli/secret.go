package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"connectrpc.com/connect"

	adminv1 "weir.dev/proto/gen/weir/admin/v1"
)

// maxSecretBytes is the largest secret value SecretService accepts.
const maxSecretBytes = 64 << 10

// setupSecretSet registers the flags of `weir secret set`.
func setupSecretSet(fs *flagSet) runFunc {
	hosts := &listFlag{check: checkHost}
	fs.Var(hosts, "host", "`HOST` name or name:port the secret may be sent to (repeatable, at least one)")
	return func(ctx context.Context, c *call) error {
		if len(hosts.vals) == 0 {
			return c.badArgsf("at least one --host is required")
		}
		if len(hosts.vals) > 32 {
			return c.badArgsf("at most 32 --host values")
		}
		value, err := c.readSecret()
		if err != nil {
			return err
		}
		api, err := c.api()
		if err != nil {
			return err
		}
		resp, err := api.secrets.SetSecret(ctx, connect.NewRequest(&adminv1.SetSecretRequest{
			Tenant: c.tenant, Name: c.args[0], Value: value, Hosts: hosts.vals,
		}))
		if err != nil {
			return fmt.Errorf("set secret %s: %w", c.args[0], err)
		}
		c.printWarnings(resp.Msg.GetWarnings())
		return c.emit(resp.Msg, func(w io.Writer) error {
			verb := "updated"
			if resp.Msg.GetCreated() {
				verb = "created"
			}
			_, err := fmt.Fprintf(w, "%s secret %s (hosts %s)\n", verb, resp.Msg.GetSecret().GetName(),
				strings.Join(resp.Msg.GetSecret().GetHosts(), ","))
			return err
		})
	}
}

// readSecret reads a secret value from stdin: all of it, less one trailing
// newline (so `echo VALUE |` and a file ending in a newline work). It refuses
// a terminal, so a value is never typed with echo on, and an empty or
// oversized value. The value is never printed, not even in errors.
func (c *call) readSecret() (string, error) {
	if c.Stdin == nil {
		return "", c.badArgsf("the secret value is read from standard input, which is closed")
	}
	if f, ok := c.Stdin.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			return "", c.badArgsf("the secret value is read from standard input; pipe it in, e.g. printf %%s \"$VALUE\" | weir secret set NAME --host HOST")
		}
	}
	b, err := io.ReadAll(io.LimitReader(c.Stdin, maxSecretBytes+2))
	if err != nil {
		return "", fmt.Errorf("read secret value from stdin: %w", err)
	}
	s := string(b)
	if strings.HasSuffix(s, "\r\n") {
		s = s[:len(s)-2]
	} else if strings.HasSuffix(s, "\n") {
		s = s[:len(s)-1]
	}
	switch {
	case s == "":
		return "", c.badArgsf("the secret value read from standard input is empty")
	case len(s) > maxSecretBytes:
		return "", c.badArgsf("the secret value is longer than 64 KiB")
	case !utf8.ValidString(s):
		return "", c.badArgsf("the secret value is not UTF-8")
	}
	return s, nil
}

// secretList runs `weir secret list` (SecretService.ListSecrets, every page).
func (c *call) secretList(ctx context.Context) error {
	api, err := c.api()
	if err != nil {
		return err
	}
	secrets, err := allPages(ctx, func(ctx context.Context, tok string) ([]*adminv1.Secret, string, error) {
		r, err := api.secrets.ListSecrets(ctx, connect.NewRequest(&adminv1.ListSecretsRequest{Tenant: c.tenant, PageToken: tok}))
		if err != nil {
			return nil, "", fmt.Errorf("list secrets: %w", err)
		}
		return r.Msg.GetSecrets(), r.Msg.GetNextPageToken(), nil
	})
	if err != nil {
		return err
	}
	return c.emit(&adminv1.ListSecretsResponse{Secrets: secrets}, func(w io.Writer) error {
		t := newTable(w, "NAME", "HOSTS", "USED BY", "UPDATED", "UPDATED BY")
		for _, s := range secrets {
			var uses []string
			for _, u := range s.GetUsedBy() {
				use := u.GetRecord()
				if u.GetMember() != "" {
					use += "/" + u.GetMember()
				}
				uses = append(uses, use+"."+u.GetField())
			}
			t.row(s.GetName(), strings.Join(s.GetHosts(), ","), strings.Join(uses, ","), ts(s.GetUpdatedAt()), s.GetUpdatedBy())
		}
		return t.flush()
	})
}

// secretDelete runs `weir secret delete NAME` (SecretService.DeleteSecret).
func (c *call) secretDelete(ctx context.Context) error {
	api, err := c.api()
	if err != nil {
		return err
	}
	resp, err := api.secrets.DeleteSecret(ctx, connect.NewRequest(&adminv1.DeleteSecretRequest{Tenant: c.tenant, Name: c.args[0]}))
	if err != nil {
		return fmt.Errorf("delete secret %s: %w", c.args[0], err)
	}
	return c.emit(resp.Msg, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "deleted secret %s\n", c.args[0])
		return err
	})
}
