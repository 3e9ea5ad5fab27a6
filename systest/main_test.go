package systest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// bins are the binaries TestMain built, by name.
var bins struct {
	controlplane, weir, edge, fakeprovider string
	// natsServer is nats-server built from the module the tests embed
	// (the cluster test runs it as a process, from deploy/'s files).
	natsServer string
}

// TestMain builds the real binaries once into a temporary directory, runs
// the tests and removes the directory.
func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "weir-systest-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "systest:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	if err := build(dir); err != nil {
		fmt.Fprintln(os.Stderr, "systest: building the binaries:", err)
		return 1
	}
	return m.Run()
}

// build compiles the four commands and nats-server into dir, each in its own module's
// directory so that it builds the same with or without the workspace.
func build(dir string) error {
	root, err := repoRoot()
	if err != nil {
		return err
	}
	start := time.Now()
	for _, b := range []struct {
		module string
		pkgs   []string
	}{
		{"controlplane", []string{"./cmd/controlplane", "./cmd/weir"}},
		{"edge", []string{"./cmd/edge", "./cmd/fakeprovider"}},
		{"systest", []string{"github.com/nats-io/nats-server/v2"}},
	} {
		cmd := exec.Command("go", append([]string{"build", "-o", dir + string(filepath.Separator)}, b.pkgs...)...)
		cmd.Dir = filepath.Join(root, b.module)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %v in %s: %w\n%s", b.pkgs, cmd.Dir, err, out)
		}
	}
	bins.controlplane = filepath.Join(dir, "controlplane")
	bins.weir = filepath.Join(dir, "weir")
	bins.edge = filepath.Join(dir, "edge")
	bins.fakeprovider = filepath.Join(dir, "fakeprovider")
	bins.natsServer = filepath.Join(dir, "nats-server")
	fmt.Fprintf(os.Stderr, "systest: binaries built in %s\n", time.Since(start).Round(time.Millisecond))
	return nil
}

// repoRoot is the nearest directory at or above the working directory that
// holds go.work.
func repoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.work")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", errors.New("no go.work at or above " + wd)
		}
	}
}
