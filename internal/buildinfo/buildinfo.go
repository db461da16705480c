// Package buildinfo reports what sluice binary is running: the version, the
// VCS revision it was built from and the Go version. `make build` and `make
// release` set the version and revision with the linker (-ldflags -X), so
// they are known however the go command was run; otherwise they are what the
// go command recorded (runtime/debug.ReadBuildInfo): the module version of
// `go install module@version`, and the revision of a build in a checkout.
package buildinfo

import (
	"runtime"
	"runtime/debug"
)

// Set by the linker, as `make build` does:
//
//	go build -ldflags "-X github.com/sluice-rl/sluice/internal/buildinfo.version=v1.2.0
//	  -X github.com/sluice-rl/sluice/internal/buildinfo.revision=0123abcd...
//	  -X github.com/sluice-rl/sluice/internal/buildinfo.modified=false"
//
// Empty when not set; each one set replaces what the go command recorded.
var (
	version  string
	revision string
	modified string // "true" or "false"
)

// Info is what the running binary knows of its own build.
type Info struct {
	// Version is the release: the linker's version (`make build`: the tag
	// `git describe` finds, or a pseudo-version naming the commit), else
	// the main module's version as the go command recorded it: a tag such
	// as v1.2.0 (`go install module@version`, or a checkout at that tag), a
	// pseudo-version naming the commit, or "(devel)" when it recorded none
	// (-buildvcs=false, a git worktree, no checkout).
	Version string
	// Revision is the VCS commit the binary was built from: the linker's,
	// else vcs.revision; "" when neither was recorded.
	Revision string
	// Modified reports that the checkout had uncommitted changes.
	Modified bool
	// GoVersion is the toolchain that built the binary, such as go1.26.0.
	GoVersion string
}

// Read returns the running binary's Info.
func Read() Info {
	in := Info{Version: "(devel)", GoVersion: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		in = FromBuildInfo(bi)
	}
	return in.withLinked(version, revision, modified)
}

// withLinked replaces what the linker set (the empty strings are unset).
func (i Info) withLinked(version, revision, modified string) Info {
	if version != "" {
		i.Version = version
	}
	if revision != "" {
		i.Revision = revision
	}
	if modified != "" {
		i.Modified = modified == "true"
	}
	return i
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
