package leasegate_test

import (
	"encoding/json"
	"testing"

	"github.com/leasegate/leasegate"
)

func TestAuditDetailsReadAsKeyValuePairsInKeyOrder(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		d    leasegate.AuditDetails
		want string
	}{
		{"none is empty", nil, ""},
		{"plain values are bare", leasegate.AuditDetails{"token": int64(7), "owner": "w1"}, "owner=w1 token=7"},
		{"a string with a space is quoted", leasegate.AuditDetails{"owner": "worker 7"}, `owner="worker 7"`},
		{"an empty string is quoted", leasegate.AuditDetails{"owner": ""}, `owner=""`},
		{"an equals sign or a quote is quoted", leasegate.AuditDetails{"a": "x=y", "b": `say "hi"`}, `a="x=y" b="say \"hi\""`},
		{"a control character is escaped", leasegate.AuditDetails{"owner": "a\nb"}, `owner="a\nb"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.d.String(); got != c.want {
				t.Errorf("got %s, want %s", got, c.want)
			}
		})
	}
}

func TestAuditDetailsJSONKeepsKeyOrderAndWholeTokens(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(leasegate.AuditDetails{"token": int64(1796172335240559123), "owner": "w1", "seconds": int64(600)})
	if want := `{"owner":"w1","seconds":600,"token":1796172335240559123}`; err != nil || string(b) != want {
		t.Errorf("got %s, %v; want %s", b, err, want)
	}
	var none struct {
		D leasegate.AuditDetails `json:"d"`
	}
	if b, err := json.Marshal(none); err != nil || string(b) != `{"d":{}}` {
		t.Errorf("nil details: got %s, %v; want {}", b, err)
	}
	var d leasegate.AuditDetails
	if err := json.Unmarshal([]byte(`{"token":1796172335240559123,"ratio":0.5,"owner":"w1","ok":true}`), &d); err != nil {
		t.Fatal(err)
	}
	if tok, ok := d["token"].(int64); !ok || tok != 1796172335240559123 {
		t.Errorf("token: got %#v, want the int64 1796172335240559123", d["token"])
	}
	if d["ratio"] != 0.5 || d["owner"] != "w1" || d["ok"] != true {
		t.Errorf("got %#v, want ratio 0.5, owner w1, ok true", d)
	}
}
