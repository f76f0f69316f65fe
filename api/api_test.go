package api_test

import (
	"context"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/leasegate/leasegate/api"
)

// TestSpecIsAValidOpenAPI31Document loads the embedded document and
// validates it, examples and patterns included.
func TestSpecIsAValidOpenAPI31Document(t *testing.T) {
	t.Parallel()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(api.Spec)
	if err != nil {
		t.Fatalf("loading openapi.yaml: %v", err)
	}
	if !doc.IsOpenAPI31OrLater() {
		t.Fatalf("got openapi %q, want 3.1", doc.OpenAPI)
	}
	if err := doc.Validate(context.Background(), openapi3.EnableExamplesValidation()); err != nil {
		t.Fatalf("openapi.yaml does not validate: %v", err)
	}
}
