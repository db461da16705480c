package policy

// PathHasPrefix reports whether prefix, a clean path prefix such as a
// rule's match.path, matches path, a cleaned request path, on segment
// boundaries: "/claims" matches "/claims" and "/claims/7", not "/claimsx".
// With fold, segments are compared regardless of case
// (case_insensitive_paths).
func PathHasPrefix(prefix, path string, fold bool) bool { return prefixMatches(prefix, path, fold) }
