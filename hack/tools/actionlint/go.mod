// Module actionlint pins actionlint, which `make actionlint` runs on .github/workflows. The Makefile
// builds its tool into bin/actionlint-<version>, reading the version from here; `go tool actionlint`
// in this directory runs the same build. One module per tool keeps each tool on its own dependencies
// (see build-tool in the Makefile). Keep the go line at the tool's own (actionlint's is 1.25.0): it
// sets the binary's GODEBUG defaults, so the build is `go install`'s, byte for byte.
module github.com/winproxy/winproxy/hack/tools/actionlint

go 1.25.0

tool github.com/rhysd/actionlint/cmd/actionlint

require (
	github.com/bmatcuk/doublestar/v4 v4.10.0 // indirect
	github.com/clipperhouse/uax29/v2 v2.7.0 // indirect
	github.com/fatih/color v1.19.0 // indirect
	github.com/mattn/go-colorable v0.1.14 // indirect
	github.com/mattn/go-isatty v0.0.20 // indirect
	github.com/mattn/go-runewidth v0.0.21 // indirect
	github.com/mattn/go-shellwords v1.0.12 // indirect
	github.com/rhysd/actionlint v1.7.12 // indirect
	github.com/robfig/cron/v3 v3.0.1 // indirect
	go.yaml.in/yaml/v4 v4.0.0-rc.3 // indirect
	golang.org/x/sync v0.20.0 // indirect
	golang.org/x/sys v0.42.0 // indirect
)
