// Package repolint holds the repository's own checks, the ones no single
// package owns; it has tests only:
//
//   - funclen_test.go: no function of the product over 80 lines
//     (TestNoFunctionIsLong), Main.Run not over 60.
//   - layers_test.go: every package in DESIGN.md §6's picture, each
//     importing only packages below it (TestNoImportPointsUpward).
//   - openapi_test.go, settings_openapi_test.go: openapi.yaml against the
//     program, every route and status driven in serve and gateway mode
//     (TestOpenAPI, TestOpenAPIRoutes, TestOpenAPIQueueSettings);
//     openapi_tools_test.go and apiclient_test.go: the spec as its tools
//     take it (Redocly's lint, TypeScript types, a generated Go client).
//   - readme_test.go: the README's session run as it is written
//     (TestREADMESession), a row for every setting (TestEverySettingInREADME).
//   - deploy_test.go: deploy/'s alert rules and dashboard against promtool
//     and the metrics the program serves.
//
// They read the repository from here, two levels below its root ("../.."),
// and boot instances through internal/apptest.
package repolint
