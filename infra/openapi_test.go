package infra

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/urlcheck/urlcheck/pkg/pipeline"
	"github.com/urlcheck/urlcheck/pkg/results"
)

// loadOpenAPI loads and validates openapi.yaml.
func loadOpenAPI(t *testing.T) *openapi3.T {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile(filepath.Join(".", "openapi.yaml"))
	if err != nil {
		t.Fatalf("load openapi.yaml: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("validate openapi.yaml: %v", err)
	}
	return doc
}

func TestOpenAPIRoutes(t *testing.T) {
	doc := loadOpenAPI(t)
	if doc.OpenAPI != "3.0.3" {
		t.Errorf("openapi = %q, want 3.0.3", doc.OpenAPI)
	}
	var got []string
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			got = append(got, method+" "+path)
		}
	}
	want := slices.Clone(pipeline.Routes)
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("operations = %q, want pipeline.Routes %q", got, want)
	}
	for _, name := range []string{"sigv4", "apiKey"} {
		if doc.Components.SecuritySchemes[name] == nil {
			t.Errorf("no security scheme %s", name)
		}
	}
	if s := doc.Components.SecuritySchemes["apiKey"]; s != nil && (s.Value.In != "header" || s.Value.Name != "x-api-key") {
		t.Errorf("apiKey scheme = %s %s, want header x-api-key", s.Value.In, s.Value.Name)
	}
}

func TestOpenAPIErrors(t *testing.T) {
	doc := loadOpenAPI(t)
	codes := map[string]bool{}
	for _, c := range doc.Components.Schemas["Error"].Value.Properties["error"].Value.Properties["code"].Value.Enum {
		codes[c.(string)] = true
	}
	tests := []struct {
		route  string
		status int
		code   string
	}{
		{"POST /jobs", 400, "empty_body"},
		{"POST /jobs", 400, "invalid_json"},
		{"POST /jobs", 400, "binary_body"},
		{"POST /jobs", 400, "no_valid_urls"},
		{"POST /jobs", 413, "body_too_large"},
		{"POST /jobs", 415, "unsupported_media_type"},
		{"POST /jobs", 401, "missing_api_key"},
		{"POST /jobs", 403, "invalid_api_key"},
		{"POST /jobs", 503, "unavailable"},
		{"POST /uploads", 400, "invalid_json"},
		{"POST /uploads", 415, "unsupported_media_type"},
		{"GET /jobs/{id}", 404, "job_not_found"},
		{"GET /jobs/{id}", 400, "invalid_job_id"},
		{"GET /jobs/{id}/results", 409, "job_not_done"},
		{"GET /jobs/{id}/results", 404, "job_not_found"},
		{"DELETE /jobs/{id}", 409, "job_finished"},
		{"DELETE /jobs/{id}", 404, "job_not_found"},
	}
	for _, tt := range tests {
		t.Run(tt.route+" "+strconv.Itoa(tt.status)+" "+tt.code, func(t *testing.T) {
			if !codes[tt.code] {
				t.Errorf("code %s is not in the Error schema's enum", tt.code)
			}
			method, path, _ := strings.Cut(tt.route, " ")
			item := doc.Paths.Find(path)
			if item == nil || item.GetOperation(method) == nil {
				t.Fatalf("no operation %s", tt.route)
			}
			resp := item.GetOperation(method).Responses.Status(tt.status)
			if resp == nil || resp.Value == nil {
				t.Fatalf("no %d response", tt.status)
			}
			b, err := json.Marshal(resp.Value)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), tt.code) {
				t.Errorf("the %d response neither describes nor exemplifies %s", tt.status, tt.code)
			}
		})
	}
	// 503 tells the client when to come back.
	for _, route := range pipeline.Routes {
		method, path, _ := strings.Cut(route, " ")
		resp := doc.Paths.Find(path).GetOperation(method).Responses.Status(503)
		if resp == nil || resp.Value.Headers["Retry-After"] == nil {
			t.Errorf("%s: no 503 response with a Retry-After header", route)
		}
	}
}

func TestOpenAPICountsClasses(t *testing.T) {
	doc := loadOpenAPI(t)
	var got []string
	for name := range doc.Components.Schemas["Counts"].Value.Properties {
		got = append(got, name)
	}
	want := slices.Clone(results.Classes)
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("Counts properties = %q, want results.Classes %q", got, want)
	}
	states := doc.Components.Schemas["State"].Value.Enum
	if len(states) != 6 {
		t.Errorf("State enum = %v, want the 6 job states", states)
	}
}
