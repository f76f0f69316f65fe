package api_test

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/leasegate/leasegate/api"
	"github.com/leasegate/leasegate/internal/tooltest"
)

// TestOpenAPIPassesTheLinter runs Spectral (the reference linter of the
// Spectral rulesets) on openapi.yaml with .spectral.yaml: every rule of
// spectral:oas and Redocly's operation-4xx-response; the rules turned off
// say why there. Any finding, down to a hint, fails. .ci/run installs
// Spectral (npm ci --prefix .ci/spectral); elsewhere the test is skipped
// without it, and fails under CI=true.
func TestOpenAPIPassesTheLinter(t *testing.T) {
	t.Parallel()
	spectral, err := filepath.Abs("../.ci/spectral/node_modules/.bin/spectral")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(spectral); err != nil {
		spectral = tooltest.Look(t, "npm ci --prefix .ci/spectral", "spectral")
	}
	out, err := exec.Command(spectral, "lint", "--fail-severity=hint", "--ruleset", ".spectral.yaml", "openapi.yaml").CombinedOutput()
	if err != nil {
		t.Fatalf("spectral lint openapi.yaml: %v\n%s", err, out)
	}
}

// TestRequiredPropertiesAreDefined is Redocly's recommended rule
// no-required-schema-properties-undefined, ported: every name a schema
// lists in `required` is one of its properties, found as Redocly finds
// them (undefinedRequired). A required name nothing defines is a contract
// defect: a client cannot know its type.
func TestRequiredPropertiesAreDefined(t *testing.T) {
	t.Parallel()
	var doc any
	if err := yaml.Unmarshal(api.Spec, &doc); err != nil {
		t.Fatal(err)
	}
	for _, f := range undefinedRequired(doc) {
		t.Errorf("openapi.yaml: %s", f)
	}
}

func TestUndefinedRequiredFindsWhatRedoclyFinds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, doc string
		want      []string
	}{
		{"a name in properties is defined", `{type: object, required: [a], properties: {a: {}}}`, nil},
		{"a name without a property is not", `{type: object, required: [a, b], properties: {a: {}}}`, []string{"#: required b is not defined"}},
		{"a name from an allOf member (through $ref) is defined", `
components: {schemas: {P: {properties: {a: {}}}}}
s: {allOf: [{$ref: '#/components/schemas/P'}, {required: [a]}]}`, nil},
		{"a name in every oneOf branch is defined", `{required: [a], oneOf: [{properties: {a: {}}}, {properties: {a: {}, b: {}}}]}`, nil},
		{"a name in one oneOf branch only is not", `{required: [b], oneOf: [{properties: {a: {}}}, {properties: {b: {}}}]}`, []string{"#: required b is not defined"}},
		{"a name in one anyOf branch only is not", `{required: [b], anyOf: [{properties: {a: {}}}, {properties: {b: {}}}]}`, []string{"#: required b is not defined"}},
		{"a nested schema is checked", `{properties: {x: {items: {required: [c]}}}}`, []string{"#/properties/x/items: required c is not defined"}},
		{"examples are values, not schemas", `{examples: [{required: [z]}], properties: {}}`, nil},
		{"a required: true of a parameter is not a list", `{parameters: [{name: p, required: true}]}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var doc any
			if err := yaml.Unmarshal([]byte(tc.doc), &doc); err != nil {
				t.Fatal(err)
			}
			got := undefinedRequired(doc)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// undefinedRequired returns, in document order, every name a schema of doc
// requires but does not define, as "<JSON pointer>: required <name> is not
// defined". As Redocly decides it: a schema defines a name that is in its
// properties, or that one of its allOf members defines, or that every
// member of its anyOf (or of its oneOf) defines; $refs are followed. A
// schema that is itself a member of an allOf, anyOf or oneOf may also take
// the name from the outermost schema it composes into. A schema is any
// object whose `required` is a list (a parameter's is a boolean); example,
// default, const and enum values are not schemas.
func undefinedRequired(doc any) []string {
	var found []string
	var walk func(node any, ptr string, outer map[string]any)
	walk = func(node any, ptr string, outer map[string]any) {
		switch n := node.(type) {
		case []any:
			for i, v := range n {
				walk(v, fmt.Sprintf("%s/%d", ptr, i), nil)
			}
		case map[string]any:
			if req, ok := n["required"].([]any); ok {
				for _, name := range req {
					s, _ := name.(string)
					if !defines(doc, n, s, map[string]bool{}) && (outer == nil || !defines(doc, outer, s, map[string]bool{})) {
						found = append(found, fmt.Sprintf("%s: required %s is not defined", ptr, s))
					}
				}
			}
			keys := slices.Sorted(maps.Keys(n))
			for _, k := range keys {
				switch k {
				case "example", "examples", "default", "const", "enum":
					continue
				case "allOf", "anyOf", "oneOf":
					members, _ := n[k].([]any)
					root := outer
					if root == nil {
						root = n
					}
					for i, m := range members {
						walk(m, fmt.Sprintf("%s/%s/%d", ptr, k, i), root)
					}
					continue
				}
				walk(n[k], ptr+"/"+strings.NewReplacer("~", "~0", "/", "~1").Replace(k), nil)
			}
		}
	}
	walk(doc, "#", nil)
	return found
}

// defines says whether schema defines name, following $refs to doc's own
// components once each.
func defines(doc any, schema any, name string, seen map[string]bool) bool {
	s, ok := schema.(map[string]any)
	if !ok {
		return false
	}
	if ref, ok := s["$ref"].(string); ok {
		if seen[ref] {
			return false
		}
		seen[ref] = true
		return defines(doc, resolve(doc, ref), name, seen)
	}
	if props, ok := s["properties"].(map[string]any); ok {
		if _, ok := props[name]; ok {
			return true
		}
	}
	if all, ok := s["allOf"].([]any); ok {
		for _, m := range all {
			if defines(doc, m, name, seen) {
				return true
			}
		}
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if branches, ok := s[k].([]any); ok && len(branches) > 0 {
			every := true
			for _, b := range branches {
				every = every && defines(doc, b, name, maps.Clone(seen))
			}
			if every {
				return true
			}
		}
	}
	return false
}

// resolve follows a local reference ("#/components/schemas/X").
func resolve(doc any, ref string) any {
	node := doc
	for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		m, ok := node.(map[string]any)
		if !ok {
			return nil
		}
		node = m[strings.NewReplacer("~1", "/", "~0", "~").Replace(part)]
	}
	return node
}
