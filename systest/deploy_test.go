package systest

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The cluster test runs Weir from the operator's files in deploy/: the
// NATS configuration as it is, the systemd units' commands and the
// environment templates' variables. This file reads them.

// deployDir is the repository's deploy/ directory.
func deployDir(t testing.TB) string {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "deploy")
}

// unit is what the cluster test takes from a systemd unit: its
// EnvironmentFile and its commands, each split into words.
type unit struct {
	envFile string
	pre     [][]string // ExecStartPre, in order
	start   []string   // ExecStart
}

// readUnit reads deploy/systemd/name.
func readUnit(t testing.TB, name string) unit {
	t.Helper()
	f, err := os.Open(filepath.Join(deployDir(t), "systemd", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var u unit
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		switch k {
		case "EnvironmentFile":
			u.envFile = v
		case "ExecStartPre":
			u.pre = append(u.pre, strings.Fields(v))
		case "ExecStart":
			u.start = strings.Fields(v)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(u.start) == 0 || u.envFile == "" {
		t.Fatalf("deploy/systemd/%s: no ExecStart or EnvironmentFile", name)
	}
	return u
}

// command turns a unit's command into a binary of this test and its
// arguments: /usr/local/bin/X is the binary X the test built, and a path
// under /etc/weir/ is the same path under etc (the process's copy of
// /etc/weir).
func command(t testing.TB, words []string, etc string) (bin string, args []string) {
	t.Helper()
	builtBins := map[string]string{
		"controlplane": bins.controlplane, "edge": bins.edge, "nats-server": bins.natsServer,
	}
	name, ok := strings.CutPrefix(words[0], "/usr/local/bin/")
	if !ok || builtBins[name] == "" {
		t.Fatalf("unit command %q: not a binary this test builds under /usr/local/bin/", words[0])
	}
	for _, w := range words[1:] {
		if rest, ok := strings.CutPrefix(w, "/etc/weir/"); ok {
			w = filepath.Join(etc, rest)
		}
		args = append(args, w)
	}
	return builtBins[name], args
}

// envTemplate reads deploy/env/name: its variables, in order, each with
// the template's value.
func envTemplate(t testing.TB, name string) (keys []string, values map[string]string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(deployDir(t), "env", name))
	if err != nil {
		t.Fatal(err)
	}
	values = map[string]string{}
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("deploy/env/%s: %q is not KEY=VALUE", name, line)
		}
		keys = append(keys, k)
		values[k] = v
	}
	return keys, values
}

// envFor is the environment of a process started from the template
// deploy/env/name with the test's own values: the test must give a value
// to every variable the template has (so that what the test runs is what
// an operator configures), and may set nothing the template lacks but
// extra (so that the template names every setting a cluster needs, save
// what only a test wants, such as a shorter grace).
func envFor(t testing.TB, name string, set map[string]string, extra map[string]string) []string {
	t.Helper()
	keys, _ := envTemplate(t, name)
	for _, k := range keys {
		if _, ok := set[k]; !ok {
			t.Fatalf("deploy/env/%s has %s, which the cluster test does not set", name, k)
		}
	}
	for k := range set {
		if !slices.Contains(keys, k) {
			t.Fatalf("the cluster test sets %s, which deploy/env/%s lacks", k, name)
		}
	}
	all := map[string]string{}
	for k, v := range set {
		all[k] = v
	}
	for k, v := range extra {
		all[k] = v
	}
	return childEnv(all)
}

// copyFile copies deploy/rel to dst as it is.
func copyFile(t testing.TB, rel, dst string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(deployDir(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDeployFilesAreComplete checks the deploy/ files the cluster test
// uses are there and consistent with each other, also under -short.
func TestDeployFilesAreComplete(t *testing.T) {
	for _, name := range []string{"nats-server.service", "weir-controlplane.service", "weir-edge.service"} {
		u := readUnit(t, name)
		envName := filepath.Base(u.envFile)
		if _, err := os.Stat(filepath.Join(deployDir(t), "env", envName)); err != nil {
			t.Errorf("%s reads %s, which deploy/env lacks", name, u.envFile)
		}
	}
	conf, err := os.ReadFile(filepath.Join(deployDir(t), "nats", "nats.conf"))
	if err != nil {
		t.Fatal(err)
	}
	keys, _ := envTemplate(t, "nats.env")
	for _, k := range keys {
		if !strings.Contains(string(conf), "$"+k) {
			t.Errorf("deploy/env/nats.env sets %s, which nats.conf never reads", k)
		}
	}
	for _, line := range strings.Split(string(conf), "\n") {
		if i := strings.Index(line, "$"); i >= 0 && !strings.HasPrefix(strings.TrimSpace(line), "#") {
			v := strings.TrimRight(strings.Fields(line[i+1:])[0], ",")
			if !slices.Contains(keys, v) {
				t.Errorf("nats.conf reads $%s, which deploy/env/nats.env does not set", v)
			}
		}
	}
	_, cp := envTemplate(t, "controlplane.env")
	if cp["WEIR_NATS_REPLICAS"] != "3" {
		t.Errorf("controlplane.env: WEIR_NATS_REPLICAS=%q, want 3 for the three-node cluster", cp["WEIR_NATS_REPLICAS"])
	}
	if fmt.Sprint(strings.Count(cp["NATS_URL"], ",")+1) != "3" {
		t.Errorf("controlplane.env: NATS_URL %q does not list three servers", cp["NATS_URL"])
	}
}
