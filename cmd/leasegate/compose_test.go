package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"gopkg.in/yaml.v3"

	"github.com/leasegate/leasegate/server"
)

// No Docker engine runs in CI, so these tests hold docker-compose.yml and
// the Dockerfile to what the binary really accepts.

type composeFile struct {
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]any            `yaml:"volumes"`
}

type composeService struct {
	Image       string            `yaml:"image"`
	Build       any               `yaml:"build"`
	Command     []string          `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
	Ports       []string          `yaml:"ports"`
	Volumes     []string          `yaml:"volumes"`
	DependsOn   map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
	Healthcheck struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
	StopGracePeriod string `yaml:"stop_grace_period"`
}

func readCompose(t *testing.T) composeFile {
	t.Helper()
	b, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatalf("read docker-compose.yml: %v", err)
	}
	var c composeFile
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatalf("parse docker-compose.yml: %v", err)
	}
	return c
}

// serveEnv is the set of LEASEGATE_* variables `leasegate serve` reads.
func serveEnv() map[string]bool {
	cfg := server.DefaultConfig()
	level := "info"
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	serveFlags(fs, &cfg, &level)
	vars := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) { vars[envName(f.Name)] = true })
	return vars
}

func TestDockerCompose(t *testing.T) {
	t.Parallel()
	c := readCompose(t)
	gw, ok := c.Services["leasegate"]
	if !ok {
		t.Fatalf("services: got %v, want a leasegate service", keys(c.Services))
	}
	rd, ok := c.Services["redis"]
	if !ok {
		t.Fatalf("services: got %v, want a redis service", keys(c.Services))
	}

	t.Run("every LEASEGATE_ variable is a flag of leasegate serve", func(t *testing.T) {
		vars := serveEnv()
		for name := range gw.Environment {
			if !strings.HasPrefix(name, "LEASEGATE_") {
				t.Errorf("%s: not a LEASEGATE_ variable; the gateway reads nothing else", name)
				continue
			}
			if !vars[name] {
				t.Errorf("%s: got no such flag of leasegate serve, want one of %v", name, keys(vars))
			}
		}
	})

	t.Run("the environment parses into a valid serve config", func(t *testing.T) {
		cfg := server.DefaultConfig()
		level := "info"
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		serveFlags(fs, &cfg, &level)
		getenv := func(k string) string { return gw.Environment[k] }
		if err := parseFlags(fs, nil, getenv, io.Discard); err != nil {
			t.Fatalf("parse compose environment: %v", err)
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("Validate: %v", err)
		}
		if _, err := newLogger(level, io.Discard); err != nil {
			t.Fatalf("LEASEGATE_LOG_LEVEL: %v", err)
		}
		if grace, err := time.ParseDuration(gw.StopGracePeriod); err != nil || grace <= cfg.DrainDelay+cfg.ShutdownTimeout {
			t.Errorf("stop_grace_period: got %q (%v), want longer than the drain delay %v plus the shutdown timeout %v",
				gw.StopGracePeriod, err, cfg.DrainDelay, cfg.ShutdownTimeout)
		}
	})

	t.Run("the gateway starts with this environment", func(t *testing.T) {
		// Everything as compose sets it, but Redis is a local miniredis
		// and the port is picked free; the host stays non-loopback, so the
		// open-mode refusal is exercised as in the container.
		cfg := server.DefaultConfig()
		level := "info"
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		af := serveFlags(fs, &cfg, &level)
		getenv := func(k string) string { return gw.Environment[k] }
		if err := parseFlags(fs, nil, getenv, io.Discard); err != nil {
			t.Fatalf("parse compose environment: %v", err)
		}
		closeLog, err := af.apply(&cfg, io.Discard, io.Discard)
		if err != nil {
			t.Fatalf("abuse settings: %v", err)
		}
		t.Cleanup(func() { _ = closeLog() })
		host, _, err := net.SplitHostPort(cfg.Addr)
		if err != nil {
			t.Fatalf("LEASEGATE_ADDR %q: %v", cfg.Addr, err)
		}
		cfg.Addr = net.JoinHostPort(host, "0")
		cfg.RedisURL = "redis://" + miniredis.RunT(t).Addr()
		s, err := server.New(cfg, nil)
		if err != nil {
			t.Fatalf("server.New with the compose environment: %v", err)
		}
		if err := s.Shutdown(context.Background()); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})

	t.Run("the Redis URL names the redis service", func(t *testing.T) {
		u, err := url.Parse(gw.Environment["LEASEGATE_REDIS_URL"])
		if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") {
			t.Fatalf("LEASEGATE_REDIS_URL: got %q (%v), want a redis:// URL", gw.Environment["LEASEGATE_REDIS_URL"], err)
		}
		if u.Hostname() != "redis" || u.Port() != "6379" {
			t.Errorf("LEASEGATE_REDIS_URL host: got %q, want redis:6379", u.Host)
		}
		if gw.DependsOn["redis"].Condition != "service_healthy" {
			t.Errorf("depends_on redis: got %+v, want condition service_healthy", gw.DependsOn)
		}
	})

	t.Run("Redis persists every write before answering", func(t *testing.T) {
		cmd := strings.Join(rd.Command, " ")
		for _, want := range []string{"--appendonly yes", "--appendfsync always"} {
			if !strings.Contains(cmd, want) {
				t.Errorf("redis command: got %q, want it to contain %q", cmd, want)
			}
		}
		if len(rd.Volumes) == 0 || !strings.HasSuffix(rd.Volumes[0], ":/data") {
			t.Errorf("redis volumes: got %v, want a volume on /data", rd.Volumes)
		}
		if len(rd.Healthcheck.Test) == 0 {
			t.Error("redis: got no healthcheck, want one")
		}
	})

	t.Run("the published port is the one the gateway listens on", func(t *testing.T) {
		host, port, err := net.SplitHostPort(gw.Environment["LEASEGATE_ADDR"])
		if err != nil {
			t.Fatalf("LEASEGATE_ADDR: %v", err)
		}
		if ip := net.ParseIP(host); ip == nil || !ip.IsUnspecified() {
			t.Errorf("LEASEGATE_ADDR host: got %q, want 0.0.0.0 (a published port cannot reach loopback in a container)", host)
		}
		if len(gw.Ports) != 1 {
			t.Fatalf("ports: got %v, want one mapping", gw.Ports)
		}
		parts := strings.Split(gw.Ports[0], ":")
		if got := parts[len(parts)-1]; got != port {
			t.Errorf("container port: got %s, want %s (from LEASEGATE_ADDR)", got, port)
		}
	})

	t.Run("the healthcheck runs a real subcommand against /readyz", func(t *testing.T) {
		test := gw.Healthcheck.Test
		if len(test) < 3 || test[0] != "CMD" {
			t.Fatalf("healthcheck test: got %q, want [CMD <binary> healthcheck ...]", test)
		}
		if bin := dockerEntrypoint(t); test[1] != bin {
			t.Errorf("healthcheck binary: got %s, want the image's %s", test[1], bin)
		}
		var stderr bytes.Buffer
		args := append(append([]string{}, test[2:]...), "-h")
		if code := run(context.Background(), args, nil, io.Discard, &stderr, func(string) string { return "" }); code != 0 {
			t.Fatalf("leasegate %s: got exit %d (%s), want 0", strings.Join(args, " "), code, stderr.String())
		}
		if got, want := defaultHealthURL(gw.Environment["LEASEGATE_ADDR"]), "/readyz"; !strings.HasSuffix(got, want) {
			t.Errorf("default health URL: got %s, want ...%s", got, want)
		}
	})
}

// dockerfile returns the Dockerfile's instructions, continuation lines
// joined, comments dropped.
func dockerfile(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatalf("read Dockerfile: %v", err)
	}
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "#") || (trimmed == "" && cur.Len() == 0) {
			continue
		}
		if strings.HasSuffix(trimmed, "\\") {
			cur.WriteString(strings.TrimSuffix(trimmed, "\\") + " ")
			continue
		}
		cur.WriteString(trimmed)
		out = append(out, cur.String())
		cur.Reset()
	}
	return out
}

// finalStage is the instructions after the last FROM.
func finalStage(t *testing.T) []string {
	t.Helper()
	ins := dockerfile(t)
	last := -1
	for i, in := range ins {
		if strings.HasPrefix(in, "FROM ") {
			last = i
		}
	}
	if last < 0 {
		t.Fatal("Dockerfile: no FROM")
	}
	return ins[last:]
}

func dockerEntrypoint(t *testing.T) string {
	t.Helper()
	for _, in := range finalStage(t) {
		if strings.HasPrefix(in, "ENTRYPOINT ") {
			f := strings.Trim(strings.TrimPrefix(in, "ENTRYPOINT "), "[] ")
			return strings.Trim(strings.Split(f, ",")[0], `" `)
		}
	}
	t.Fatal("Dockerfile: no ENTRYPOINT in the final stage")
	return ""
}

func TestDockerfile(t *testing.T) {
	t.Parallel()
	ins := dockerfile(t)
	final := finalStage(t)

	t.Run("it is multi-stage and builds a static ./cmd/leasegate with the version", func(t *testing.T) {
		froms := 0
		var build string
		for _, in := range ins {
			if strings.HasPrefix(in, "FROM ") {
				froms++
			}
			if strings.HasPrefix(in, "RUN ") && strings.Contains(in, "go build") {
				build = in
			}
		}
		if froms < 2 {
			t.Errorf("FROM count: got %d, want a build stage and a final stage", froms)
		}
		for _, want := range []string{"CGO_ENABLED=0", "./cmd/leasegate", "-X github.com/leasegate/leasegate/server.Version="} {
			if !strings.Contains(build, want) {
				t.Errorf("go build step: got %q, want it to contain %q", build, want)
			}
		}
		if slices.ContainsFunc(final, func(in string) bool { return strings.HasPrefix(in, "RUN ") }) {
			t.Errorf("final stage runs commands (%v); want only the copied binary", final)
		}
	})

	t.Run("it runs as a non-root user", func(t *testing.T) {
		var user string
		for _, in := range final {
			if strings.HasPrefix(in, "USER ") {
				user = strings.TrimSpace(strings.TrimPrefix(in, "USER "))
			}
		}
		name := strings.Split(user, ":")[0]
		if name == "" || name == "root" || name == "0" {
			t.Errorf("USER of the final stage: got %q, want a non-root user", user)
		}
	})

	t.Run("the entrypoint is the binary copied from the build stage and runs serve", func(t *testing.T) {
		bin := dockerEntrypoint(t)
		copied, serves := false, false
		for _, in := range final {
			if strings.HasPrefix(in, "COPY --from=") && strings.HasSuffix(in, " "+bin) {
				copied = true
			}
			if in == `CMD ["serve"]` {
				serves = true
			}
		}
		if !copied {
			t.Errorf("final stage: got no COPY --from=... %s, want the built binary there", bin)
		}
		if !serves {
			t.Errorf(`final stage: got no CMD ["serve"], want it`)
		}
	})
}

func keys[V any](m map[string]V) []string {
	var k []string
	for n := range m {
		k = append(k, n)
	}
	slices.Sort(k)
	return k
}
