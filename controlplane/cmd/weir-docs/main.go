// Command weir-docs writes docs/cli.md, the reference of the weir CLI, from
// the CLI's own command table (internal/cli.WriteMarkdown): `make docs`
// runs it, and `make check-docs` compares its output with the committed
// file.
//
// Usage: weir-docs [-o FILE]   (default: stdout)
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"

	"weir.dev/controlplane/internal/cli"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run writes the markdown to -o, or to stdout, and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("weir-docs", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "", "write to this file instead of stdout")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: weir-docs [-o FILE]")
		return 2
	}
	var b bytes.Buffer
	if err := cli.WriteMarkdown(&b); err != nil {
		fmt.Fprintf(stderr, "weir-docs: %v\n", err)
		return 1
	}
	if *out == "" {
		if _, err := stdout.Write(b.Bytes()); err != nil {
			fmt.Fprintf(stderr, "weir-docs: %v\n", err)
			return 1
		}
		return 0
	}
	if err := os.WriteFile(*out, b.Bytes(), 0o644); err != nil {
		fmt.Fprintf(stderr, "weir-docs: %v\n", err)
		return 1
	}
	return 0
}
