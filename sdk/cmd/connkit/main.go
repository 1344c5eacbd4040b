package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

const usage = `usage: connkit new NAME [-module PATH] [-dir DIR] [-source | -destination] [-connkit DIR]
       connkit release -version vX.Y.Z [-cmd ./cmd/NAME] [-out DIR] [-repository URL]

new writes a new connector module. release, run in a connector's module,
builds its release archives, checksums.txt and its entry for Conduit's
registry index. go doc github.com/connkit/connkit/sdk/cmd/connkit has the details.
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

// run runs the subcommand that args name. Asked for help (-h, -help or
// help), it prints the usage on stdout and returns nil; without a
// subcommand it knows, it prints the usage on stderr and returns an
// error.
func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("expected a subcommand: new or release")
	}
	switch args[0] {
	case "new":
		return newConnector(args[1:], stdout, stderr)
	case "release":
		return release(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		_, err := fmt.Fprint(stdout, usage)
		return err
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown subcommand %q: expected new or release", args[0])
}
