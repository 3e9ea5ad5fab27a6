//go:build unix

package pgserver

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// prepare makes cmd run in a new session, as own when it is set.
func prepare(cmd *exec.Cmd, own *owner) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if own != nil {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(own.uid), Gid: uint32(own.gid)}
	}
	return nil
}

// lockFile takes an exclusive flock on path, polling until ctx is done.
func lockFile(ctx context.Context, path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil // closing releases the lock
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, err
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
