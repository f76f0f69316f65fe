package keyspace

import (
	"fmt"
	"testing"
)

// The /ops/ page's login counters and ended sessions (docs/abuse.md).
func TestOpsLoginKeysArePinnedAndDistinct(t *testing.T) {
	t.Parallel()
	for _, p := range []struct{ got, want string }{
		{Space{}.LoginFailures("", LoginByAddress, "192.0.2.1"), "lg:{t=;r=ops-login%3Aaddr%3A192.0.2.1}:failures"},
		{Space{}.LoginFailures("", LoginByAddress, "2001:db8::1"), "lg:{t=;r=ops-login%3Aaddr%3A2001%3Adb8%3A%3A1}:failures"},
		{Space{}.LoginFailures("shop", LoginByKey, "checkout"), "lg:{t=shop;r=ops-login%3Akey%3Acheckout}:failures"},
		{Space{}.SessionRevoked("shop", "0123abcd"), "lg:{t=shop;r=ops-session%3A0123abcd}:revoked"},
	} {
		if p.got != p.want {
			t.Errorf("got key %q, want %q", p.got, p.want)
		}
	}

	seen := map[string]string{}
	for _, tenant := range []string{"", "shop", "user:u"} {
		for _, name := range append([]string{"addr:x", "key:x", "x", "ops-login:addr:x"}, oddNames...) {
			keys := map[string]string{
				Space{}.Resource(tenant, name).Lock():               "lock",
				Space{}.User(tenant, name).Ban():                    "ban",
				Space{}.LoginFailures(tenant, LoginByAddress, name): "address failures",
				Space{}.LoginFailures(tenant, LoginByKey, name):     "key failures",
				Space{}.SessionRevoked(tenant, name):                "revoked session",
			}
			for k, what := range keys {
				what = fmt.Sprintf("%s of (%q, %q)", what, tenant, name)
				if prev, dup := seen[k]; dup {
					t.Fatalf("got key %q for both %s and %s, want distinct", k, prev, what)
				}
				seen[k] = what
			}
		}
	}
}
