package main

import (
	"bytes"
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// Not parallel: its cases change the working directory.
func TestLocateEtcdBench(t *testing.T) {
	t.Run("no etcd module under the working directory is a skip with a note", func(t *testing.T) {
		t.Chdir(t.TempDir())
		dir, bin, note := locateEtcdBench("")
		if dir != "" || bin != "" || !strings.Contains(note, "skipped") || !strings.Contains(note, "-etcd-bench") {
			t.Errorf("got dir %q, bin %q, note %q; want a skip note naming -etcd-bench", dir, bin, note)
		}
	})
	t.Run("etcd under the working directory is the module to build", func(t *testing.T) {
		root := t.TempDir()
		writeFile(t, filepath.Join(root, "etcd", "go.mod"), "module x\n", 0o644)
		t.Chdir(root)
		if dir, bin, note := locateEtcdBench(""); dir != DefaultEtcdBench || bin != "" || note != "" {
			t.Errorf("got dir %q, bin %q, note %q; want dir %q", dir, bin, note, DefaultEtcdBench)
		}
	})
	t.Run("a directory without go.mod is a skip with a note", func(t *testing.T) {
		d := t.TempDir()
		if dir, bin, note := locateEtcdBench(d); dir != "" || bin != "" || !strings.Contains(note, "go.mod") {
			t.Errorf("got dir %q, bin %q, note %q; want a note about go.mod", dir, bin, note)
		}
	})
	t.Run("a file is a built binary", func(t *testing.T) {
		f := filepath.Join(t.TempDir(), "etcd-bench")
		writeFile(t, f, "", 0o755)
		if dir, bin, note := locateEtcdBench(f); dir != "" || bin != f || note != "" {
			t.Errorf("got dir %q, bin %q, note %q; want bin %q", dir, bin, note, f)
		}
	})
}

func TestParseEtcdPhase(t *testing.T) {
	t.Parallel()
	good := `{"phase":"handoff","clients":64,"ops":500,"errors":0,"seconds":5,"ops_per_sec":100,"p50_ms":1.5,"p99_ms":40,"call_p50_ms":2.5,"call_p99_ms":41,"early":3,"violations":0,"process_cpu_us_per_op":900}`
	p, err := parseEtcdPhase([]byte(good), "handoff")
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	want := EtcdPhase{Phase: "handoff", Clients: 64, Ops: 500, Seconds: 5, OpsPerSec: 100, P50ms: 1.5, P99ms: 40, CallP50ms: 2.5, CallP99ms: 41, Early: 3, ProcessCPUus: 900}
	if p != want {
		t.Errorf("got %+v, want %+v", p, want)
	}
	for _, tc := range []struct{ name, line, want string }{
		{"another phase's line is refused", good, "lock"},
		{"a line that is not JSON is refused", "etcd-bench: boom", "handoff"},
		{"a result without its measured time is refused", `{"phase":"lock","ops":3}`, "lock"},
		{"a negative count is refused", `{"phase":"lock","ops":-1,"seconds":1}`, "lock"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if p, err := parseEtcdPhase([]byte(tc.line), tc.want); err == nil {
				t.Errorf("got %+v, nil; want an error", p)
			}
		})
	}
}

// fakeEtcdBench writes a shell script standing in for the etcd program:
// it prints a hello, then answers each phase it reads with the line given
// for it (a phase without one: it writes "boom" to stderr and exits 3).
// The script's arguments are written to the returned file.
func fakeEtcdBench(t *testing.T, lock, handoff string) (bin, argsFile string) {
	t.Helper()
	dir := t.TempDir()
	bin, argsFile = filepath.Join(dir, "etcd-bench"), filepath.Join(dir, "args")
	script := `#!/bin/sh
echo "$*" > '` + argsFile + `'
echo '{"etcd_version":"9.9.9","go_version":"go0","embedded":true,"endpoints":"http://127.0.0.1:1","fsync":true}'
while read -r phase; do
  case "$phase" in
  lock) line='` + lock + `' ;;
  handoff) line='` + handoff + `' ;;
  *) line='' ;;
  esac
  if [ -z "$line" ]; then echo boom >&2; exit 3; fi
  echo "$line"
done
`
	writeFile(t, bin, script, 0o755)
	return bin, argsFile
}

func writeFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

func etcdTestConfig(bin string) Config {
	cfg := DefaultConfig()
	cfg.Concurrency, cfg.Duration, cfg.Warmup = 4, time.Second, 0
	cfg.Etcd, cfg.EtcdBench, cfg.EtcdEndpoints = true, bin, "http://127.0.0.1:2379"
	return cfg
}

func TestEtcdRunnerRounds(t *testing.T) {
	t.Parallel()
	bin, argsFile := fakeEtcdBench(t,
		`{"phase":"lock","clients":4,"ops":400,"seconds":1,"ops_per_sec":400,"p50_ms":2,"p99_ms":5}`,
		`{"phase":"handoff","clients":4,"ops":50,"seconds":1,"ops_per_sec":50,"p50_ms":1,"p99_ms":9,"call_p50_ms":2,"early":1}`)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var rep Report
	r, err := startEtcd(ctx, etcdTestConfig(bin), &rep)
	if err != nil {
		t.Fatalf("startEtcd: %v", err)
	}
	defer r.close()
	// gateway: 1,200 cycles/s, then 400 hand-offs/s; then no hand-off
	if err := r.round(1200, 400); err != nil {
		t.Fatalf("round 1: %v", err)
	}
	if err := r.round(2000, 0); err != nil {
		t.Fatalf("round 2: %v", err)
	}
	if err := r.round(1600, 600); err != nil {
		t.Fatalf("round 3: %v", err)
	}
	rep.Etcd.summarize()

	e := rep.Etcd
	if e == nil || e.Version != "9.9.9" || !e.Embedded || !e.Fsync {
		t.Fatalf("got %+v, want the hello's version 9.9.9, embedded, fsync", e)
	}
	if got, want := len(e.Rounds), 3; got != want {
		t.Fatalf("rounds: got %d, want %d", got, want)
	}
	if got, want := e.Rounds[0].LockRatio, 3.0; got != want {
		t.Errorf("round 1 lock ratio: got %v, want %v", got, want)
	}
	if got, want := e.Rounds[1].HandoffRatio, 0.0; got != want {
		t.Errorf("round 2 hand-off ratio: got %v, want %v (no gateway hand-off)", got, want)
	}
	// medians: lock ratios 3, 5, 4; hand-off ratios 8, 0, 12
	if e.LockRatio != 4 || e.HandoffRatio != 8 {
		t.Errorf("median ratios: got lock %v, hand-off %v; want 4, 8", e.LockRatio, e.HandoffRatio)
	}
	if e.Lock.Ops != 1200 || e.Handoff.Early != 3 || e.Handoff.OpsPerSec != 50 {
		t.Errorf("summary: got lock ops %d, hand-off early %d, hand-offs/s %v; want 1200, 3, 50", e.Lock.Ops, e.Handoff.Early, e.Handoff.OpsPerSec)
	}
	if n := e.Failures(); n != 0 {
		t.Errorf("failures: got %d, want 0", n)
	}
	var text bytes.Buffer
	rep.Print(&text)
	for _, want := range []string{"etcd 9.9.9", "etcd lock", "etcd handoff", "gateway/etcd", "1: lock 400, 3.000; handoff 50, 8.000", "2: lock 400, 5.000; handoff 50, -"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("printed report lacks %q:\n%s", want, text.String())
		}
	}
	r.close()
	args, err := os.ReadFile(argsFile)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(string(args)), "-c 4 -duration 1s -warmup 0s -endpoints http://127.0.0.1:2379"; got != want {
		t.Errorf("the program's arguments: got %q, want %q", got, want)
	}
}

// Not parallel: a case changes the working directory.
func TestEtcdRunnerFailures(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	t.Run("a program that dies mid-run is an error with its stderr", func(t *testing.T) {
		bin, _ := fakeEtcdBench(t, `{"phase":"lock","clients":4,"ops":4,"seconds":1,"ops_per_sec":4}`, "")
		var rep Report
		r, err := startEtcd(ctx, etcdTestConfig(bin), &rep)
		if err != nil {
			t.Fatalf("startEtcd: %v", err)
		}
		defer r.close()
		err = r.round(100, 0)
		if err == nil || !strings.Contains(err.Error(), "boom") {
			t.Errorf("round: got %v, want an error with the program's stderr (boom)", err)
		}
		if len(rep.Etcd.Rounds) != 0 {
			t.Errorf("got %d rounds recorded, want none from a broken round", len(rep.Etcd.Rounds))
		}
	})
	t.Run("a program that answers the wrong phase is an error", func(t *testing.T) {
		bin, _ := fakeEtcdBench(t, `{"phase":"handoff","clients":4,"ops":4,"seconds":1}`, "")
		var rep Report
		r, err := startEtcd(ctx, etcdTestConfig(bin), &rep)
		if err != nil {
			t.Fatalf("startEtcd: %v", err)
		}
		defer r.close()
		if err := r.round(100, 0); err == nil {
			t.Error("round: got nil, want an error")
		}
	})
	t.Run("errors and violations in a round are failures", func(t *testing.T) {
		e := &EtcdResult{Rounds: []EtcdRound{{Lock: EtcdPhase{Errors: 2}, Handoff: EtcdPhase{Violations: 1}}}}
		if got, want := e.Failures(), int64(3); got != want {
			t.Errorf("got %d, want %d", got, want)
		}
		if got := (*EtcdResult)(nil).Failures(); got != 0 {
			t.Errorf("nil result: got %d failures, want 0", got)
		}
	})
	t.Run("a skipped phase adds a note and no result", func(t *testing.T) {
		t.Chdir(t.TempDir())
		cfg := etcdTestConfig("")
		var rep Report
		r, err := startEtcd(ctx, cfg, &rep)
		if r != nil || err != nil || rep.Etcd != nil || len(rep.Notes) != 1 {
			t.Errorf("got runner %v, err %v, etcd %+v, notes %q; want nil, nil, nil, one note", r, err, rep.Etcd, rep.Notes)
		}
		if err := r.round(1, 1); err != nil { // a nil runner does nothing
			t.Errorf("round of a skipped phase: got %v, want nil", err)
		}
	})
}

// TestEtcdPhaseMatchesTheProgram: EtcdPhase and etcdHello decode what the
// program of tools/bench/etcd writes (its types Result and Hello, in a module of
// its own that this one does not import), so their JSON names must agree.
func TestEtcdPhaseMatchesTheProgram(t *testing.T) {
	t.Parallel()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("etcd", "main.go"), nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	tagsOf := func(name string) []string {
		var tags []string
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range gd.Specs {
				ts, ok := spec.(*ast.TypeSpec)
				if !ok || ts.Name.Name != name {
					continue
				}
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					t.Fatalf("%s is not a struct", name)
				}
				for _, fld := range st.Fields.List {
					if fld.Tag != nil {
						tag := reflect.StructTag(strings.Trim(fld.Tag.Value, "`")).Get("json")
						tags = append(tags, strings.Split(tag, ",")[0])
					}
				}
			}
		}
		if len(tags) == 0 {
			t.Fatalf("found no type %s with JSON tags in etcd/main.go", name)
		}
		return tags
	}
	ours := func(v any) []string {
		var tags []string
		rt := reflect.TypeOf(v)
		for i := range rt.NumField() {
			tags = append(tags, strings.Split(rt.Field(i).Tag.Get("json"), ",")[0])
		}
		return tags
	}
	if got, want := ours(EtcdPhase{}), tagsOf("Result"); !slices.Equal(got, want) {
		t.Errorf("EtcdPhase's JSON names: got %q, want the program's Result's %q", got, want)
	}
	theirs := tagsOf("Hello")
	for _, name := range ours(etcdHello{}) {
		if !slices.Contains(theirs, name) {
			t.Errorf("etcdHello reads %q, which the program's Hello (%q) does not write", name, theirs)
		}
	}
}
