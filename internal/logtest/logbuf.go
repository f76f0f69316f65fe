// Package logtest is a bytes buffer that many goroutines may write to while
// a test reads it: the place tests capture a gateway's log, an abuse log
// or a child process's output.
package logtest

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"
)

// Buffer collects writes. The zero value is ready to use; it satisfies
// io.Writer and zapcore.WriteSyncer.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// Sync does nothing: everything is in memory already.
func (b *Buffer) Sync() error { return nil }

// String is everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Records decodes every line as one JSON object (a zap JSON log); a line
// that is not one fails the test.
func (b *Buffer) Records(t testing.TB) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line is not one JSON object: %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// Events is Records restricted to records whose "event" field is event.
func (b *Buffer) Events(t testing.TB, event string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, r := range b.Records(t) {
		if r["event"] == event {
			out = append(out, r)
		}
	}
	return out
}
