package config

import (
	"go.yaml.in/yaml/v3"
)

// LoadStore reads the file at path and parses its store block, as
// ParseStore does.
func LoadStore(path string) (Store, error) {
	data, err := readFile(path)
	if err != nil {
		return Store{}, err
	}
	return ParseStore(path, data)
}

// ParseStore parses and validates the store block of a configuration
// file, a whole sluice file or a rules-only one (LoadPolicy's), with its
// problems as Errors at file:line:col, as Parse reports them: what
// storeopen.Open takes, so that a Go program sets its store in the file
// that holds its rules. A file without a store block is a memory store
// with the defaults. The file's other fields are not read.
func ParseStore(name string, data []byte) (Store, error) {
	root, d, err := parseRoot(name, data, "rules")
	if err != nil {
		return Store{}, err
	}
	if root.Kind != yaml.MappingNode {
		d.fail(root, "", "the file must be a mapping of settings (store, rules, ...), not %s", kindName(root))
		return Store{}, sortErrors(d.errs)
	}
	var n *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		if k := root.Content[i]; k.Kind == yaml.ScalarNode && k.Value == "store" {
			n = root.Content[i+1]
			break
		}
	}
	s := d.store(n, "store")
	if len(d.errs) > 0 {
		return Store{}, sortErrors(d.errs)
	}
	return s, nil
}
