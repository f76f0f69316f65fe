package leasegate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// AuditDetails are the facts of an operator action other than its reason
// (contract v1.2, "Audit records"): the owner and token of a
// force-released lease, the seconds and end of a ban. The reason stays
// the operator's text exactly as given; facts never go into it.
//
// Values are strings (times as FormatTime), int64s or bools, one level
// deep. In JSON it is an object with its keys in order, {} when empty,
// and a decoded integer comes back as an int64 (a token is past
// float64's 2^53).
type AuditDetails map[string]any

// MarshalJSON writes the object with its keys sorted; nil is {}.
func (d AuditDetails) MarshalJSON() ([]byte, error) {
	if d == nil {
		return []byte("{}"), nil
	}
	return json.Marshal(map[string]any(d))
}

// UnmarshalJSON reads an object, integers as int64 and other numbers as
// float64; null leaves d nil.
func (d *AuditDetails) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return err
	}
	for k, v := range m {
		n, ok := v.(json.Number)
		if !ok {
			continue
		}
		if i, err := n.Int64(); err == nil {
			m[k] = i
		} else if f, err := n.Float64(); err == nil {
			m[k] = f
		}
	}
	*d = m
	return nil
}

// String is the details as key=value pairs in key order, a string quoted
// when it is empty or holds a space, '=', a quote or what is not
// printable: owner=worker-7 token=1796172335240559.
func (d AuditDetails) String() string {
	var sb strings.Builder
	for i, k := range slices.Sorted(maps.Keys(d)) {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(k)
		sb.WriteByte('=')
		switch v := d[k].(type) {
		case string:
			q := strconv.Quote(v)
			if v == "" || q[1:len(q)-1] != v || strings.ContainsAny(v, " =") {
				v = q
			}
			sb.WriteString(v)
		default:
			fmt.Fprint(&sb, v)
		}
	}
	return sb.String()
}
