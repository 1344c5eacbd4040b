package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// runMainEnv, set in a test binary's environment, makes it run connkit's
// main with its arguments instead of the tests.
const runMainEnv = "CONNKIT_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) != "" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// connkitMain runs the test binary as the connkit command with args, and
// returns what it printed on stdout and stderr and its exit code.
func connkitMain(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

// Asked for help, connkit prints its usage, which names both subcommands,
// on stdout and exits 0; without a subcommand it knows, it prints the
// usage and the error on stderr and exits 1.
func TestHelpGoesToStdoutAndSucceeds(t *testing.T) {
	for _, arg := range []string{"-h", "-help", "--help", "help"} {
		stdout, stderr, code := connkitMain(t, arg)
		if code != 0 || stderr != "" || stdout != usage {
			t.Errorf("connkit %s: exit %d, stderr %q, stdout\n%s\nwant exit 0, the usage on stdout alone", arg, code, stderr, stdout)
		}
	}
	for _, sub := range []string{"connkit new NAME", "connkit release -version vX.Y.Z"} {
		if !strings.Contains(usage, sub) {
			t.Errorf("the usage does not name %q:\n%s", sub, usage)
		}
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, "connkit: expected a subcommand: new or release\n"},
		{[]string{"neww"}, "connkit: unknown subcommand \"neww\": expected new or release\n"},
		{[]string{"-version", "v0.1.0"}, "connkit: unknown subcommand \"-version\": expected new or release\n"},
	} {
		stdout, stderr, code := connkitMain(t, tt.args...)
		if code != 1 || stdout != "" || stderr != usage+tt.want {
			t.Errorf("connkit %q: exit %d, stdout %q, stderr\n%s\nwant exit 1, the usage and %q on stderr", tt.args, code, stdout, stderr, tt.want)
		}
	}
}

// A subcommand's -h prints the usage and its flags, and is not an error.
func TestSubcommandHelpSucceeds(t *testing.T) {
	for _, sub := range []string{"new", "release"} {
		_, stderr, code := connkitMain(t, sub, "-h")
		if code != 0 || !strings.HasPrefix(stderr, usage) {
			t.Errorf("connkit %s -h: exit %d, stderr\n%s\nwant exit 0 and the usage", sub, code, stderr)
		}
	}
	if _, stderr, _ := connkitMain(t, "release", "-h"); !strings.Contains(stderr, "-repository URL") {
		t.Errorf("connkit release -h does not list -repository:\n%s", stderr)
	}
}
