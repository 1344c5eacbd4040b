package host

import (
	"fmt"
	"strings"
)

// Settings is a connector configuration given on a command line as
// repeated key=value flags; it implements flag.Value.
type Settings map[string]string

func (s Settings) String() string { return fmt.Sprint(map[string]string(s)) }

// Set adds one key=value pair.
func (s Settings) Set(kv string) error {
	k, v, ok := strings.Cut(kv, "=")
	if !ok {
		return fmt.Errorf("%q is not key=value", kv)
	}
	s[k] = v
	return nil
}
