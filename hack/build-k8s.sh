#!/usr/bin/env bash
# build-k8s.sh DEST: puts kube-apiserver, kubectl and etcd, built from source through the Go module
# proxy, into DEST (bin/k8s/<version>). Release binaries cannot be downloaded on our build machines.
#
# Versions come from the pinned tool modules in hack/tools/k8s and hack/tools/etcd. Built binaries
# are also kept in a per-user cache outside the clone, keyed by version, so a fresh clone on the same
# machine (CI) copies them instead of rebuilding.
set -euo pipefail

dest=${1:?usage: build-k8s.sh DEST}
root=$(cd "$(dirname "$0")/.." && pwd)
k8s_version=v$("$root/hack/tool-version.sh" k8s.io/kubernetes "$root/hack/tools/k8s/go.mod")
etcd_version=v$("$root/hack/tool-version.sh" go.etcd.io/etcd/server/v3 "$root/hack/tools/etcd/go.mod")
minor=$(echo "$k8s_version" | cut -d. -f2)
cache=${WINPROXY_TOOL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/winproxy}/k8s/${k8s_version}-etcd-${etcd_version}

if [ -x "$dest/kube-apiserver" ] && [ -x "$dest/kubectl" ] && [ -x "$dest/etcd" ]; then
	exit 0
fi
mkdir -p "$dest" "$cache"

build() { # build NAME MODULE_DIR PACKAGE LDFLAGS
	local name=$1 dir=$2 pkg=$3 ldflags=$4
	if [ ! -x "$cache/$name" ]; then
		echo "Building $name from source (pinned in ${dir#"$root"/}); the first build takes several minutes on 2 cores..."
		local start=$SECONDS
		(cd "$dir" && go build -ldflags "$ldflags" -o "$cache/$name.tmp" "$pkg")
		mv "$cache/$name.tmp" "$cache/$name"
		echo "Built $name in $((SECONDS - start)) s"
	fi
	cp "$cache/$name" "$dest/$name.tmp" && mv "$dest/$name.tmp" "$dest/$name"
}

stamp="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	stamp="$stamp -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
done

build etcd "$root/hack/tools/etcd" go.etcd.io/etcd/server/v3 "-s -w"
build kube-apiserver "$root/hack/tools/k8s" k8s.io/kubernetes/cmd/kube-apiserver "$stamp"
build kubectl "$root/hack/tools/k8s" k8s.io/kubernetes/cmd/kubectl "$stamp"
