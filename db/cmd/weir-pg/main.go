// Command weir-pg finds or starts the PostgreSQL server Weir uses locally
// (see weir.dev/db/pgserver).
//
//	weir-pg ensure [-private] [-dir DIR] [-db NAME]   print a DSN on stdout
//	weir-pg stop [-dir DIR]                           stop the private cluster
//
// ensure prints only the DSN on stdout (progress goes to stderr), so that
// `DATABASE_URL=$(weir-pg ensure)` works. With -db it creates that database
// if needed and prints a DSN for it instead of the admin one.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"

	"weir.dev/db/pgserver"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run returns the exit code: 0 success, 1 failure, 2 bad usage.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	usage := func() {
		fmt.Fprintln(stderr, "usage: weir-pg ensure [-private] [-dir DIR] [-db NAME] | weir-pg stop [-dir DIR]")
	}
	if len(args) == 0 {
		usage()
		return 2
	}
	fs := flag.NewFlagSet("weir-pg "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "", "directory of the private cluster (default <repo>/var/pg)")
	private := fs.Bool("private", false, "ensure only: ignore DATABASE_URL and 127.0.0.1:5432, use the private cluster")
	db := fs.String("db", "", "ensure only: create this database if needed and print its DSN")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() != 0 {
		usage()
		return 2
	}
	opts := pgserver.Options{Getenv: getenv, Dir: *dir, Private: *private, Log: stderr}
	switch args[0] {
	case "ensure":
		dsn, err := pgserver.Ensure(ctx, opts)
		if err == nil && *db != "" {
			dsn, err = pgserver.EnsureDatabase(ctx, dsn, *db)
		}
		if err != nil {
			fmt.Fprintf(stderr, "weir-pg: %v\n", err)
			return 1
		}
		fmt.Fprintln(stdout, dsn)
		return 0
	case "stop":
		if err := pgserver.Stop(ctx, opts); err != nil {
			fmt.Fprintf(stderr, "weir-pg: %v\n", err)
			return 1
		}
		return 0
	default:
		usage()
		return 2
	}
}
