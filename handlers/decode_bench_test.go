package handlers

import "testing"

// decodeAcquireBody is the body work of POST /locks/{resource}: what every
// acquire pays before it reaches Redis.
func decodeAcquireBody(body []byte) (owner string, ttl, wait int64, err error) {
	fields, err := decodeObject(body, "owner", "ttl_seconds", "wait_ms")
	if err != nil {
		return "", 0, 0, err
	}
	var ck checker
	if s, ok := ck.stringField(fields, "owner", true); ok {
		owner = ck.owner("owner", s)
	}
	ttl, _ = ck.intField(fields, "ttl_seconds", 1, 86400, true)
	wait, _ = ck.intField(fields, "wait_ms", 0, 30000, false)
	return owner, ttl, wait, ck.err()
}

func BenchmarkDecodeAcquire(b *testing.B) {
	for _, bc := range []struct{ name, body string }{
		{"plain", `{"owner":"svc-a","ttl_seconds":30,"wait_ms":0}`},
		{"escaped owner", `{"owner":"svc-\u00e9 \ud83d\ude00","ttl_seconds":30}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			body := []byte(bc.body)
			b.ReportAllocs()
			for b.Loop() {
				if _, _, _, err := decodeAcquireBody(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
