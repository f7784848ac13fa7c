// Package version holds the build's version, stamped by the Makefile with -ldflags, so both
// binaries report the same string in logs, status and the build-info metric.
package version

// Version is the winproxy version; "dev" for unstamped builds.
var Version = "dev"
