package policy

// pathMatches reports whether a rule's path (Match.Path) matches a
// request's cleaned path, through the Matcher a rule compiles to.
func pathMatches(pattern, path string, fold bool) bool {
	m := CompileMatch("rule", Match{Path: pattern}, fold, func(string, string, ...any) {})
	return m.Matches(&Request{Path: path})
}
