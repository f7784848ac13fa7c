#!/usr/bin/env bash
# bench-agent-ab.sh BASE [PAIRS]: runs BenchmarkAgent PAIRS times (3 by default) on BASE, a git
# revision, and as often on the working tree, alternating, and prints each pair's figures.
#
# Why alternate: on a shared machine the same code's CPU per event varies by a third from one hour
# to the next (docs/performance.md, "The agent binary, end to end"), far more than most changes
# move it. Runs side by side share the machine's mood; a run alone says little. Each side runs its
# own benchmark and builds its own agent; when the benchmark itself changed between the two, the
# pairs compare harnesses too.
#
# WINPROXY_BENCH_SERVICES, _NODES, _EVENTS, _PACE, _PARTS and _AGENT_ENV pass through, e.g.
# WINPROXY_BENCH_SERVICES=500 WINPROXY_BENCH_NODES=50 for pairs of about 2.5 minutes each run.
set -euo pipefail

base=${1:?usage: bench-agent-ab.sh BASE [PAIRS]}
pairs=${2:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
rev=$(git -C "$root" rev-parse --short "$base^{commit}")
tmp=$(mktemp -d)
trap 'git -C "$root" worktree remove --force "$tmp/base" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
git -C "$root" worktree add --quiet --detach "$tmp/base" "$rev"
# Both trees use this clone's etcd and kube-apiserver (make k8s-tools): the base tree has no bin/.
export KUBEBUILDER_ASSETS=${KUBEBUILDER_ASSETS:-$root/bin/k8s/$("$root/hack/tool-version.sh" k8s.io/kubernetes "$root/hack/tools/k8s/go.mod")}
export KUBEBUILDER_CONTROLPLANE_START_TIMEOUT=${KUBEBUILDER_CONTROLPLANE_START_TIMEOUT:-5m}

# run DIR LABEL PAIR: one BenchmarkAgent run in DIR, its result line kept under LABEL.
run() {
	local out
	out=$(cd "$1" && go test -count=1 -timeout 60m -run '^$' -bench BenchmarkAgent -benchtime 1x ./agent/daemon 2>&1) || {
		echo "$out" >&2
		return 1
	}
	echo "$out" | grep '^BenchmarkAgent' | sed "s/^/$2 $3 /" >>"$tmp/results"
}

for ((i = 1; i <= pairs; i++)); do
	# Which side runs first changes from pair to pair.
	if ((i % 2)); then
		run "$tmp/base" "$rev" "$i"
		run "$root" worktree "$i"
	else
		run "$root" worktree "$i"
		run "$tmp/base" "$rev" "$i"
	fi
done

# Each result line is "LABEL PAIR BenchmarkAgent-N 1 NS ns/op" and then value/unit pairs.
# The parts of an event (receive, noop-sync), the runtime monitor thread's share of an event
# (monitor), the API server's CPU an event (apiserver) and the floor of an event with the event
# over it (floor, over-floor: a bare client-go informer making the same HNS calls, measured in the
# same run) are blank for code whose benchmark did not measure them.
awk '
BEGIN { printf "%-9s %4s %12s %10s %14s %14s %16s %12s %12s %10s %8s %10s\n", "code", "pair", "cpu-ms/event", "monitor", "alloc-KiB/ev", "first-cpu-s", "rss-MiB-churn", "receive", "noop-sync", "apiserver", "floor", "over-floor" }
{
	delete m
	for (i = 7; i < NF; i += 2) m[$(i + 1)] = $i
	printf "%-9s %4s %12s %10s %14s %14s %16s %12s %12s %10s %8s %10s\n", $1, $2, m["cpu-ms/event"], m["monitor-cpu-ms/event"], m["allocated-KiB/event"], m["first-sync-cpu-s"], m["rss-MiB-churn"], m["cpu-ms/receive"], m["cpu-ms/noop-sync"], m["apiserver-cpu-ms/event"], m["floor-cpu-ms/event"], m["agent-over-floor"]
}' "$tmp/results"
