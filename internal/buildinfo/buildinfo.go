// Package buildinfo reports what sluice binary is running: the module
// version, the VCS revision it was built from and the Go version, as the Go
// toolchain recorded them (runtime/debug.ReadBuildInfo).
package buildinfo

import (
	"runtime"
	"runtime/debug"
)

// Info is what the toolchain recorded about the running binary.
type Info struct {
	// Version is the main module's version: a tag such as v1.2.0 (`go
	// install module@version`, or a checkout at that tag), a pseudo-version
	// naming the commit for a checkout elsewhere, "(devel)" when the go
	// command recorded none (-buildvcs=false, a git worktree, no checkout).
	Version string
	// Revision is the VCS commit the binary was built from (vcs.revision),
	// "" when not recorded (built outside a checkout, or -buildvcs=false).
	Revision string
	// Modified reports that the checkout had uncommitted changes
	// (vcs.modified).
	Modified bool
	// GoVersion is the toolchain that built the binary, such as go1.26.0.
	GoVersion string
}

// Read returns the running binary's Info.
func Read() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Info{Version: "(devel)", GoVersion: runtime.Version()}
	}
	return FromBuildInfo(bi)
}

// FromBuildInfo extracts Info from what debug.ReadBuildInfo returned.
func FromBuildInfo(bi *debug.BuildInfo) Info {
	in := Info{Version: bi.Main.Version, GoVersion: bi.GoVersion}
	if in.Version == "" {
		in.Version = "(devel)"
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Revision = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		}
	}
	return in
}

// String formats i for `sluice version`: "v1.2.0 (revision 0123abcd,
// modified) go1.26.0"; parts not recorded are left out.
func (i Info) String() string {
	s := i.Version
	switch {
	case i.Revision != "" && i.Modified:
		s += " (revision " + i.Revision + ", modified)"
	case i.Revision != "":
		s += " (revision " + i.Revision + ")"
	}
	return s + " " + i.GoVersion
}
