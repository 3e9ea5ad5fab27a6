package systest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is one child process of the system (control plane, edge, fake
// provider), startable again after it was killed. It runs in a process
// group of its own, so that kill reaches whatever it started, and gets
// SIGKILL should the test binary die without cleaning up (Pdeathsig). Its
// output is appended to logPath, one "=== start" line per start.
type proc struct {
	name    string
	bin     string
	args    []string
	env     []string
	logPath string
	dir     string // working directory; "" is the test's

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when the current run has exited
	err  error         // the current run's exit, once done is closed
	ours bool          // the current run was ended by kill
}

// start runs the process; it must not be running.
func (p *proc) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		select {
		case <-p.done:
		default:
			return fmt.Errorf("%s is already running", p.name)
		}
	}
	f, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(f, "=== start %s: %s %s\n", time.Now().Format(time.RFC3339Nano), p.bin, strings.Join(p.args, " "))
	cmd := exec.Command(p.bin, p.args...)
	cmd.Env = p.env
	cmd.Dir = p.dir
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	done := make(chan struct{})
	p.cmd, p.done, p.err, p.ours = cmd, done, nil, false
	go func() {
		err := cmd.Wait()
		fmt.Fprintf(f, "=== exit %s: %v\n", time.Now().Format(time.RFC3339Nano), err)
		_ = f.Close()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(done)
	}()
	return nil
}

// signal sends sig to the process group and waits up to wait for the run to
// end; SIGKILL follows when it has not. It is a no-op when nothing runs.
func (p *proc) signal(sig syscall.Signal, wait time.Duration) {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	if cmd == nil {
		p.mu.Unlock()
		return
	}
	p.ours = true
	p.mu.Unlock()
	select {
	case <-done:
		return
	default:
	}
	_ = syscall.Kill(-cmd.Process.Pid, sig)
	select {
	case <-done:
		return
	case <-time.After(wait):
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-done
}

// kill ends the process (and its group) with SIGKILL and waits for it.
func (p *proc) kill() { p.signal(syscall.SIGKILL, 10*time.Second) }

// exited reports whether the current run ended without kill being called,
// with its exit error.
func (p *proc) exited() (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.ours {
		return false, nil
	}
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// tail returns the last n lines of a log file.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	b = bytes.TrimRight(b, "\n")
	lines := bytes.Split(b, []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
