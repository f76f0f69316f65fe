package auth

import "sort"

// Tenants is the distinct tenants of the keys in force, sorted (for the
// lock index's sweeps and the audit record of a key reload).
func (k *Keyring) Tenants() []string {
	seen := map[string]bool{}
	var out []string
	for _, key := range *k.keys.Load() {
		if !seen[key.Tenant] {
			seen[key.Tenant] = true
			out = append(out, key.Tenant)
		}
	}
	sort.Strings(out)
	return out
}
