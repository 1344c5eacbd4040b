package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

const usage = `usage: connkit new NAME [-module PATH] [-dir DIR] [-source | -destination] [-connkit DIR]

Writes a new connector module; go doc github.com/connkit/connkit/sdk/cmd/connkit has the details.
`

func main() {
	err := run(os.Args[1:], os.Stdout, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return // the usage is printed
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "connkit:", err)
		os.Exit(1)
	}
}

// run runs the subcommand that args name.
func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "new" {
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("expected the subcommand new")
	}
	return newConnector(args[1:], stdout, stderr)
}
