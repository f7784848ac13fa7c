#!/usr/bin/env sh
# tool-version.sh MODULE GOMOD: prints the version (without the leading v) at which GOMOD requires
# MODULE, so the Makefile and build scripts read pinned versions from one place.
set -eu
awk -v m="$1" '($1 == m || ($1 == "require" && $2 == m)) && !/=>/ { v = ($1 == m) ? $2 : $3; sub(/^v/, "", v); print v; exit }' "$2"
