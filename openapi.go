// Package waitroom holds what lives at the repository root and ships inside
// the binary: the HTTP contract, openapi.yaml, served at GET /openapi.yaml.
package waitroom

import _ "embed"

// OpenAPI is openapi.yaml: the HTTP API as the server answers it (OpenAPI
// 3.0.3). internal/repolint/openapi_test.go drives every route and status it
// lists through the real program and validates each answer against it.
//
//go:embed openapi.yaml
var OpenAPI []byte
