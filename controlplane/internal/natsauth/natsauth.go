// Package natsauth is who may do what on Weir's NATS (DESIGN.md §4): the
// users of the two roles and their permissions, the passwords the dev
// server's users get (generated under var/), and the nats-server
// configuration of those users for a NATS server run apart from the
// control plane.
//
// Roles: the control plane may do everything. An edge (user name = its
// edge id) may read WEIR_CONFIG, read WEIR_VIEWS (to count live edges,
// ROUTING R-HEAD-7) but write only its own keys there
// ("<tenant>.<record>.<member>.<edge id>"), read and write WEIR_AFFINITY,
// publish to weir.usage.>, request leases on its own subject
// weir.lease.request.<edge id> and subscribe to
// weir.cmd.>; it can create, change or delete no stream or bucket and
// write no config.
package natsauth

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/nats-io/nats-server/v2/server"

	"weir.dev/routing/natsnames"
)

// ControlPlaneUser is the control plane's user name.
const ControlPlaneUser = "weir-controlplane"

// Names of the JetStream objects (weir.dev/routing/natsnames); KV buckets
// are streams named "KV_<bucket>".
var (
	configStream   = natsnames.KVStream(natsnames.ConfigBucket)
	viewsStream    = natsnames.KVStream(natsnames.ViewsBucket)
	affinityStream = natsnames.KVStream(natsnames.AffinityBucket)
	usageStream    = natsnames.UsageStream
)

// edgeIDPattern is what an edge id must look like to be a user: one NATS
// subject token (edge ids are tokens already, see the edge's Token).
var edgeIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// EdgePermissions are the permissions of the edge edgeID.
func EdgePermissions(edgeID string) *server.Permissions {
	pub := []string{
		// JetStream API: look up the buckets and the stream, and run the
		// consumers of the KV reads (config watch, affinity reads, and the
		// views every edge reads to count live edges, ROUTING R-HEAD-7).
		"$JS.API.INFO",
		"$JS.API.STREAM.INFO." + configStream, "$JS.API.STREAM.INFO." + viewsStream,
		"$JS.API.STREAM.INFO." + affinityStream, "$JS.API.STREAM.INFO." + usageStream,
		"$JS.API.CONSUMER.CREATE." + configStream, "$JS.API.CONSUMER.CREATE." + configStream + ".>",
		"$JS.API.CONSUMER.INFO." + configStream + ".>", "$JS.API.CONSUMER.DELETE." + configStream + ".>",
		"$JS.API.DIRECT.GET." + affinityStream, "$JS.API.DIRECT.GET." + affinityStream + ".>",
		"$JS.API.STREAM.MSG.GET." + affinityStream,
		"$JS.API.DIRECT.GET." + configStream, "$JS.API.DIRECT.GET." + configStream + ".>",
		"$JS.API.STREAM.MSG.GET." + configStream,
		"$JS.API.CONSUMER.CREATE." + viewsStream, "$JS.API.CONSUMER.CREATE." + viewsStream + ".>",
		"$JS.API.CONSUMER.INFO." + viewsStream + ".>", "$JS.API.CONSUMER.DELETE." + viewsStream + ".>",
		"$JS.API.DIRECT.GET." + viewsStream, "$JS.API.DIRECT.GET." + viewsStream + ".>",
		"$JS.API.STREAM.MSG.GET." + viewsStream,
		"$JS.FC.>",
		// Writes: its own views, affinity, call records, lease requests.
		natsnames.KVSubject(natsnames.ViewsBucket, "*.*.*."+edgeID),
		natsnames.KVSubject(natsnames.AffinityBucket, ">"),
		natsnames.UsageSubjects,
		natsnames.LeaseSubject + "." + edgeID,
	}
	return &server.Permissions{
		Publish:   &server.SubjectPermission{Allow: pub},
		Subscribe: &server.SubjectPermission{Allow: []string{"_INBOX.>", natsnames.CommandSubjects}},
	}
}

// Users are the users of a NATS server for Weir: the control plane with
// every permission and each edge with EdgePermissions.
type Users struct {
	// ControlPlane is the control plane's password.
	ControlPlane string
	// Edges maps edge ids to their passwords.
	Edges map[string]string
}

// ServerUsers are u as nats-server takes them.
func (u Users) ServerUsers() []*server.User {
	out := []*server.User{{Username: ControlPlaneUser, Password: u.ControlPlane}}
	for _, id := range u.edgeIDs() {
		out = append(out, &server.User{Username: id, Password: u.Edges[id], Permissions: EdgePermissions(id)})
	}
	return out
}

func (u Users) edgeIDs() []string {
	ids := make([]string, 0, len(u.Edges))
	for id := range u.Edges {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// ServerConfig is the authorization block of a nats-server configuration
// file holding u (JSON, which the configuration format accepts): include
// it in the configuration of a NATS server run apart from the control
// plane.
func (u Users) ServerConfig() ([]byte, error) {
	type perm struct {
		Allow []string `json:"allow"`
	}
	type perms struct {
		Publish   perm `json:"publish"`
		Subscribe perm `json:"subscribe"`
	}
	type user struct {
		User        string `json:"user"`
		Password    string `json:"password"`
		Permissions *perms `json:"permissions,omitempty"`
	}
	users := []user{{User: ControlPlaneUser, Password: u.ControlPlane}}
	for _, id := range u.edgeIDs() {
		p := EdgePermissions(id)
		users = append(users, user{User: id, Password: u.Edges[id],
			Permissions: &perms{Publish: perm{p.Publish.Allow}, Subscribe: perm{p.Subscribe.Allow}}})
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // nats-server's parser knows no \u escapes
	enc.SetIndent("", "  ")
	if err := enc.Encode(map[string]any{"authorization": map[string]any{"users": users}}); err != nil {
		return nil, fmt.Errorf("natsauth: %w", err)
	}
	return b.Bytes(), nil
}

// Ensure returns the users of dir, creating the passwords missing there
// (mode 0600): "controlplane.password" and "edge-<id>.password" for each
// of edgeIDs. Passwords are 32 random bytes, base64url.
func Ensure(dir string, edgeIDs []string) (Users, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Users{}, fmt.Errorf("natsauth: %w", err)
	}
	var errs []error
	u := Users{Edges: map[string]string{}}
	var err error
	if u.ControlPlane, err = ensurePassword(filepath.Join(dir, "controlplane.password")); err != nil {
		errs = append(errs, err)
	}
	for _, id := range edgeIDs {
		if !edgeIDPattern.MatchString(id) {
			errs = append(errs, fmt.Errorf("natsauth: edge id %q is not a NATS token ([A-Za-z0-9_-], at most 64)", id))
			continue
		}
		if u.Edges[id], err = ensurePassword(EdgePasswordFile(dir, id)); err != nil {
			errs = append(errs, err)
		}
	}
	return u, errors.Join(errs...)
}

// EdgePasswordFile is where Ensure keeps the password of edge id.
func EdgePasswordFile(dir, id string) string { return filepath.Join(dir, "edge-"+id+".password") }

func ensurePassword(path string) (string, error) {
	if b, err := os.ReadFile(path); err == nil {
		if p := strings.TrimSpace(string(b)); p != "" {
			return p, nil
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("natsauth: %w", err)
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("natsauth: %w", err)
	}
	p := base64.RawURLEncoding.EncodeToString(b)
	if err := os.WriteFile(path, []byte(p+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("natsauth: %w", err)
	}
	return p, nil
}
