package decision

// fields is a request's or response's header fields as a test writes
// them: canonical names, one value per field line.
type fields map[string][]string

func (f fields) Values(dst []string, name string) []string { return append(dst, f[name]...) }

func (f fields) Names(dst []string) []string {
	for k := range f {
		dst = append(dst, k)
	}
	return dst
}
