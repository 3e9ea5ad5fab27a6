//go:build !unix

package pgserver

import (
	"context"
	"errors"
	"os/exec"
)

func prepare(cmd *exec.Cmd, own *owner) error {
	if own != nil {
		return errors.New("running the cluster as another user is supported on unix only")
	}
	return nil
}

// lockFile is a no-op here: concurrent first starts may race.
func lockFile(context.Context, string) (func(), error) { return func() {}, nil }
