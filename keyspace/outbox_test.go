package keyspace

import "testing"

// The webhook outbox and its dead letters (docs/abuse.md): pinned, one
// tag for both, and no user's or lock's key can be either.
func TestOutboxKeysArePinnedAndShareATag(t *testing.T) {
	t.Parallel()
	for _, p := range []struct{ got, want string }{
		{Space{}.Outbox(), "lg:{t=;r=webhook%3Aoutbox}:events"},
		{Space{}.DeadLetters(), "lg:{t=;r=webhook%3Aoutbox}:dead"},
		{Space{Prefix: "x:"}.Outbox(), "x:{t=;r=webhook%3Aoutbox}:events"},
	} {
		if p.got != p.want {
			t.Errorf("got key %q, want %q", p.got, p.want)
		}
	}
	for _, name := range append([]string{"webhook:outbox", "outbox"}, oddNames...) {
		for _, k := range []string{Space{}.Resource("", name).Lock(), Space{}.Resource("", name).Waiters(),
			Space{}.User("", name).Ban(), Space{}.User("", name).Flags()} {
			if k == (Space{}).Outbox() || k == (Space{}).DeadLetters() {
				t.Errorf("got %q for name %q, the outbox's key", k, name)
			}
		}
	}
}
