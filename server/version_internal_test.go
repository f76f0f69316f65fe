package server

import (
	"runtime/debug"
	"testing"
)

func TestBuildInfoPrefersLdflagsThenTheToolchainsRecord(t *testing.T) {
	t.Parallel()
	vcs := &debug.BuildInfo{
		GoVersion: "go1.99.1",
		Main:      debug.Module{Path: "github.com/leasegate/leasegate", Version: "(devel)"},
		Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "0123456789abcdef"},
			{Key: "vcs.modified", Value: "false"},
		},
	}
	dirty := &debug.BuildInfo{GoVersion: "go1.99.1", Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef"},
		{Key: "vcs.modified", Value: "true"},
	}}
	tagged := &debug.BuildInfo{GoVersion: "go1.99.1", Main: debug.Module{Version: "v1.4.0"}}
	for _, tc := range []struct {
		name            string
		version, commit string
		info            *debug.BuildInfo
		want            BuildInfo
	}{
		{"a git checkout build reports its revision", "dev", "", vcs, BuildInfo{"dev", "0123456789abcdef", "go1.99.1"}},
		{"uncommitted changes are marked dirty", "dev", "", dirty, BuildInfo{"dev", "0123456789abcdef-dirty", "go1.99.1"}},
		{"ldflags win over the toolchain's record", "v1.2.3", "feedbee", vcs, BuildInfo{"v1.2.3", "feedbee", "go1.99.1"}},
		{"go install of a tag reports the module version", "dev", "", tagged, BuildInfo{"v1.4.0", "unknown", "go1.99.1"}},
		{"no build info at all still says something", "", "", nil, BuildInfo{"dev", "unknown", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := buildInfo(tc.version, tc.commit, tc.info)
			if tc.info == nil {
				tc.want.GoVersion = got.GoVersion // runtime.Version()
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
