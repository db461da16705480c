package config

import (
	"errors"
	"strings"

	"github.com/sluice-rl/sluice/policy"
	"go.yaml.in/yaml/v3"
)

// compileErrors reports the problems policy.Compile found at the nodes
// their paths name, leaving out those at paths already reported.
func (d *decoder) compileErrors(err error) {
	if err == nil {
		return
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		var fe *policy.FieldError
		if !errors.As(e, &fe) {
			d.errorf(nil, "", "%v", e)
			continue
		}
		if !d.reported(fe.Path) {
			d.errorf(d.nodeAt(fe.Path, fe.Name), fe.Path, "%s", fe.Msg)
		}
	}
}

// reported reports whether path or a path above it has failed already.
func (d *decoder) reported(path string) bool {
	for {
		if d.failed[path] {
			return true
		}
		if path == "" {
			return false
		}
		path = parent(path)
	}
}

// nodeAt returns the node a problem at path is best shown at: the key of a
// mapping entry when the name is at fault, else the value at path, else the
// nearest enclosing node that exists.
func (d *decoder) nodeAt(path string, name bool) *yaml.Node {
	if k := d.keys[path]; k != nil && name {
		return k
	}
	for {
		if n := d.nodes[path]; n != nil {
			return n
		}
		if path == "" {
			return nil
		}
		path = parent(path)
	}
}

// parent strips the last ".name" or "[i]" from path.
func parent(path string) string {
	i := strings.LastIndexAny(path, ".[")
	if i < 0 {
		return ""
	}
	return path[:i]
}
