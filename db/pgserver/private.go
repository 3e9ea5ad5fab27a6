package pgserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ErrNoBinaries is returned (wrapped) when a private cluster is needed but no
// PostgreSQL server binaries are installed.
var ErrNoBinaries = errors.New("no PostgreSQL server binaries (initdb, pg_ctl) in PATH or /usr/lib/postgresql/*/bin: " +
	"install them (Debian/Ubuntu: apt-get install postgresql; macOS: brew install postgresql) or set DATABASE_URL")

// owner is the system user a private cluster runs as when we are root.
type owner struct{ uid, gid int }

// ensurePrivate returns the DSN of the private cluster in dir, initialising
// and starting it as needed. A file lock serialises concurrent callers (the
// test binaries of several packages).
func ensurePrivate(ctx context.Context, dir string, log io.Writer) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	unlock, err := lockFile(ctx, filepath.Join(dir, "lock"))
	if err != nil {
		return "", fmt.Errorf("lock: %w", err)
	}
	defer unlock()

	data := filepath.Join(dir, "data")
	if port, err := runningPort(data); err == nil {
		dsn := privateDSN(port)
		if ping(ctx, dsn) == nil {
			return dsn, nil
		}
	}
	initdb, pgctl, err := findBinaries()
	if err != nil {
		return "", err
	}
	own, err := clusterOwner()
	if err != nil {
		return "", err
	}
	sock := filepath.Join(dir, "run")
	if err := os.MkdirAll(sock, 0o755); err != nil {
		return "", err
	}
	if own != nil {
		for _, p := range []string{dir, sock} {
			if err := os.Chown(p, own.uid, own.gid); err != nil {
				return "", fmt.Errorf("hand %s to user postgres: %w", p, err)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(data, "PG_VERSION")); errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(log, "pgserver: initdb %s\n", data)
		if err := command(ctx, own, log, dir, initdb, "-D", data, "-U", "postgres",
			"--auth=trust", "--encoding=UTF8", "--locale=C"); err != nil {
			if own != nil {
				err = fmt.Errorf("%w (as root the cluster runs as user postgres, which needs search permission on every directory above %s)", err, dir)
			}
			return "", fmt.Errorf("initdb: %w", err)
		}
	}
	port, err := clusterPort(dir)
	if err != nil {
		return "", err
	}
	// A unix socket path must fit in sun_path (108 bytes); else TCP only.
	sockOpt := "-k '" + sock + "'"
	if len(sock)+len("/.s.PGSQL.65535") >= 100 || strings.ContainsAny(sock, `'"\ `) {
		sockOpt = "-c unix_socket_directories=''"
	}
	fmt.Fprintf(log, "pgserver: starting PostgreSQL (%s) on 127.0.0.1:%d\n", data, port)
	if err := command(ctx, own, log, dir, pgctl, "start", "-D", data, "-l", filepath.Join(dir, "postgres.log"),
		"-w", "-t", "60", "-s",
		"-o", fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 %s", port, sockOpt)); err != nil {
		return "", fmt.Errorf("pg_ctl start (log: %s): %w", filepath.Join(dir, "postgres.log"), err)
	}
	dsn := privateDSN(port)
	if err := ping(ctx, dsn); err != nil {
		return "", fmt.Errorf("started, but cannot connect: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "port"), []byte(strconv.Itoa(port)+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("remember the port: %w", err)
	}
	return dsn, nil
}

// clusterPort is the port to start the cluster in dir on: the one it had
// before (the "port" file) while that is free, so that a restarted cluster
// keeps its DSN; else a free one.
func clusterPort(dir string) (int, error) {
	if b, err := os.ReadFile(filepath.Join(dir, "port")); err == nil {
		if port, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && port > 0 && port < 65536 {
			if l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
				_ = l.Close()
				return port, nil
			}
		}
	}
	return freePort()
}

// stopPrivate stops the cluster in dir when its postmaster.pid exists.
func stopPrivate(ctx context.Context, dir string, log io.Writer) error {
	data := filepath.Join(dir, "data")
	if _, err := os.Stat(filepath.Join(data, "postmaster.pid")); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	_, pgctl, err := findBinaries()
	if err != nil {
		return err
	}
	own, err := clusterOwner()
	if err != nil {
		return err
	}
	return command(ctx, own, log, dir, pgctl, "stop", "-D", data, "-m", "fast", "-w", "-s")
}

func privateDSN(port int) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=5", port)
}

// runningPort reads the port from a cluster's postmaster.pid (line 4).
func runningPort(data string) (int, error) {
	b, err := os.ReadFile(filepath.Join(data, "postmaster.pid"))
	if err != nil {
		return 0, err
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) < 4 {
		return 0, errors.New("short postmaster.pid")
	}
	return strconv.Atoi(strings.TrimSpace(lines[3]))
}

// findBinaries returns initdb and pg_ctl from PATH, else from the newest
// /usr/lib/postgresql/<major>/bin (or another usual place).
func findBinaries() (initdb, pgctl string, err error) {
	i, err1 := exec.LookPath("initdb")
	p, err2 := exec.LookPath("pg_ctl")
	if err1 == nil && err2 == nil {
		return i, p, nil
	}
	var dirs []string
	for _, pattern := range []string{"/usr/lib/postgresql/*/bin", "/usr/pgsql-*/bin", "/usr/local/pgsql/bin", "/opt/homebrew/opt/postgresql*/bin"} {
		m, _ := filepath.Glob(pattern)
		dirs = append(dirs, m...)
	}
	// Newest major version first: compare the numeric path element.
	slices.SortStableFunc(dirs, func(a, b string) int { return majorOf(b) - majorOf(a) })
	for _, d := range dirs {
		i, p := filepath.Join(d, "initdb"), filepath.Join(d, "pg_ctl")
		if isExecutable(i) && isExecutable(p) {
			return i, p, nil
		}
	}
	return "", "", ErrNoBinaries
}

func majorOf(dir string) int {
	for _, part := range strings.Split(dir, string(filepath.Separator)) {
		digits := strings.TrimLeftFunc(part, func(r rune) bool { return r < '0' || r > '9' })
		if n, err := strconv.Atoi(digits); err == nil {
			return n
		}
	}
	return 0
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// clusterOwner returns nil when we are not root, else the postgres user.
func clusterOwner() (*owner, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, which initdb refuses, and no system user postgres to run the cluster as "+
			"(apt-get install postgresql creates it; or run as another user, or set DATABASE_URL): %w", err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("user postgres: %w", err)
	}
	return &owner{uid: uid, gid: gid}, nil
}

// command runs a PostgreSQL tool in dir, as own when set, in a session of its
// own (so a server it starts does not get the terminal's Ctrl-C), copying its
// output to log and quoting the end of it in the error.
func command(ctx context.Context, own *owner, log io.Writer, dir, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout = io.MultiWriter(log, &out)
	cmd.Stderr = cmd.Stdout
	cmd.WaitDelay = 5 * time.Second
	if err := prepare(cmd, own); err != nil {
		return err
	}
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(out.String())
		if len(msg) > 2000 {
			msg = "…" + msg[len(msg)-2000:]
		}
		if msg != "" {
			return fmt.Errorf("%s: %w: %s", filepath.Base(name), err, msg)
		}
		return fmt.Errorf("%s: %w", filepath.Base(name), err)
	}
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
