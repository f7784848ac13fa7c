#!/usr/bin/env bash
# build-prometheus.sh DEST: puts prometheus and promtool, built from source through the Go module
# proxy, into DEST (bin/prometheus/<version>), for the monitoring tests. Release binaries cannot be
# downloaded on our build machines.
#
# The version comes from the pinned tool module hack/tools/prometheus. Like build-k8s.sh, built
# binaries are kept in the per-user cache outside the clone, keyed by version, so a fresh clone on
# the same machine (CI) copies them instead of rebuilding. Service discovery is left out
# (remove_all_sd: the tests scrape static targets), and so are the UI assets (no builtinassets tag).
set -euo pipefail

dest=${1:?usage: build-prometheus.sh DEST}
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$root/hack/tools/prometheus
module_version=$("$root/hack/tool-version.sh" github.com/prometheus/prometheus "$dir/go.mod")
# Module v0.MMPP.X is Prometheus M.PP.X (v0.316.0 is 3.16.0).
minor=${module_version#0.}
minor=${minor%%.*}
version=$((minor / 100)).$((minor % 100)).${module_version##*.}
cache=${WINPROXY_TOOL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/winproxy}/prometheus/v${version}

if [ -x "$dest/prometheus" ] && [ -x "$dest/promtool" ]; then
	exit 0
fi
mkdir -p "$dest" "$cache"
if [ ! -x "$cache/prometheus" ] || [ ! -x "$cache/promtool" ]; then
	echo "Building prometheus and promtool v$version from source (pinned in hack/tools/prometheus); the first build takes several minutes on 2 cores..."
	start=$SECONDS
	ldflags="-s -w -X github.com/prometheus/common/version.Version=$version -X github.com/prometheus/common/version.Branch=HEAD"
	rm -rf "$cache/tmp" && mkdir -p "$cache/tmp"
	(cd "$dir" && go build -tags remove_all_sd -ldflags "$ldflags" -o "$cache/tmp/" \
		github.com/prometheus/prometheus/cmd/prometheus github.com/prometheus/prometheus/cmd/promtool)
	mv "$cache/tmp/prometheus" "$cache/tmp/promtool" "$cache/" && rmdir "$cache/tmp"
	echo "Built prometheus and promtool in $((SECONDS - start)) s"
fi
for b in prometheus promtool; do
	cp "$cache/$b" "$dest/$b.tmp" && mv "$dest/$b.tmp" "$dest/$b"
done
