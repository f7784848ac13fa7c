// Package doclinks holds a test that keeps the repository's citations of the data-plane rules
// sound: every docs/design/dataplane.md#anchor that code or docs cite must be a heading of that
// page, every link on the page must lead somewhere, and nothing may cite the design brief that
// lives outside the repository. It has no code of its own; `go test ./hack/doclinks` runs it, and
// so do `make test-unit` and `go test ./...`.
package doclinks
