//go:build !linux

package plugin

import "os"

// parentDeathSignal is nil where the kernel sends none: the plugin only
// polls its parent.
var parentDeathSignal os.Signal

func askParentDeathSignal() {}
