package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	for _, tc := range []struct {
		bi   debug.BuildInfo
		want string
	}{
		{debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v1.2.0"}}, "v1.2.0 go1.26.0"},
		{debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123abcd"}, {Key: "vcs.modified", Value: "false"}}}, "(devel) (revision 0123abcd) go1.26.0"},
		{debug.BuildInfo{GoVersion: "go1.26.0", Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123abcd"}, {Key: "vcs.modified", Value: "true"}}}, "(devel) (revision 0123abcd, modified) go1.26.0"},
	} {
		if got := FromBuildInfo(&tc.bi).String(); got != tc.want {
			t.Errorf("FromBuildInfo(%+v) = %q, want %q", tc.bi, got, tc.want)
		}
	}
}

// TestWithLinked: what the linker set replaces what the go command
// recorded, field by field; what it left unset stays.
func TestWithLinked(t *testing.T) {
	recorded := Info{Version: "(devel)", Revision: "0123abcd", Modified: true, GoVersion: "go1.26.0"}
	for _, tc := range []struct {
		version, revision, modified string
		want                        string
	}{
		{"", "", "", "(devel) (revision 0123abcd, modified) go1.26.0"},
		{"v1.2.0", "", "", "v1.2.0 (revision 0123abcd, modified) go1.26.0"},
		{"v1.2.0", "fedc9876", "false", "v1.2.0 (revision fedc9876) go1.26.0"},
		{"", "", "false", "(devel) (revision 0123abcd) go1.26.0"},
	} {
		if got := recorded.withLinked(tc.version, tc.revision, tc.modified).String(); got != tc.want {
			t.Errorf("withLinked(%q, %q, %q) = %q, want %q", tc.version, tc.revision, tc.modified, got, tc.want)
		}
	}
}
