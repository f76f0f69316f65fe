package server

import (
	"runtime"
	"runtime/debug"
)

// Commit is the build's VCS revision, set with -ldflags
// "-X github.com/leasegate/leasegate/server.Commit=abc1234". Empty: the
// revision Go stamped into the binary (vcs.revision, when it was built
// from a git checkout with go build or go install), else "unknown".
var Commit = ""

// BuildInfo says which build is running: `leasegate version` prints it
// and /metrics exports it as leasegate_build_info.
type BuildInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	GoVersion string `json:"go_version"`
}

// Build reads the running binary's BuildInfo: Version and Commit as set
// with -ldflags, else what the Go toolchain recorded (the module version:
// a tag for go install of a release, a pseudo-version for a build in a git
// checkout; vcs.revision and vcs.modified for the commit).
func Build() BuildInfo {
	info, _ := debug.ReadBuildInfo()
	return buildInfo(Version, Commit, info)
}

func buildInfo(version, commit string, info *debug.BuildInfo) BuildInfo {
	b := BuildInfo{Version: version, Commit: commit, GoVersion: runtime.Version()}
	if info != nil {
		if info.GoVersion != "" {
			b.GoVersion = info.GoVersion
		}
		if (b.Version == "" || b.Version == "dev") && info.Main.Version != "" && info.Main.Version != "(devel)" {
			b.Version = info.Main.Version
		}
		if b.Commit == "" {
			var rev string
			var modified bool
			for _, s := range info.Settings {
				switch s.Key {
				case "vcs.revision":
					rev = s.Value
				case "vcs.modified":
					modified = s.Value == "true"
				}
			}
			if rev != "" && modified {
				rev += "-dirty"
			}
			b.Commit = rev
		}
	}
	if b.Version == "" {
		b.Version = "dev"
	}
	if b.Commit == "" {
		b.Commit = "unknown"
	}
	return b
}
