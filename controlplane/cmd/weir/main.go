// Command weir is the command-line client of the Weir admin API
// (DESIGN.md §3). Everything but process wiring lives in internal/cli.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"weir.dev/controlplane/internal/cli"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr))
}

// run runs the CLI until it finishes or the process is interrupted, and
// returns the exit code: 0 ok, 1 refused or failed request, 2 bad usage.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return cli.Run(ctx, args, getenv, stdin, stdout, stderr)
}
