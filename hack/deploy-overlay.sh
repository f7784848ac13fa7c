#!/usr/bin/env sh
# deploy-overlay.sh BASE IMG AGENT_IMG: prints a kustomization over BASE (a path relative to the
# overlay: kustomize refuses absolute ones) that sets the controller image to IMG and the agent image
# to AGENT_IMG. make deploy and make build-installer use it over config/default.
#
# config/default's images carry the chart's appVersion as their tag, and kustomize keeps a tag that
# newName does not replace (newName: r/c:v1 would make r/c:v1:0.1.0), so each reference is split
# into newName and newTag or digest. A reference without either keeps the appVersion tag.
set -eu
base=${1:?usage: deploy-overlay.sh BASE IMG AGENT_IMG}
img=${2:?usage: deploy-overlay.sh BASE IMG AGENT_IMG}
agent_img=${3:?usage: deploy-overlay.sh BASE IMG AGENT_IMG}

image() { # image NAME REFERENCE
	ref=${2%%@*} digest=
	case $2 in *@*) digest=${2#*@} ;; esac
	name=$ref tag=
	# A colon after the last slash starts the tag; one before it is a registry's port.
	case ${ref##*/} in *:*) name=${ref%:*} tag=${ref##*:} ;; esac
	printf -- '- name: %s\n  newName: %s\n' "$1" "$name"
	# The digest wins over the tag, as in the chart.
	if [ -n "$digest" ]; then
		printf '  digest: %s\n' "$digest"
	elif [ -n "$tag" ]; then
		printf '  newTag: "%s"\n' "$tag"
	fi
}

printf 'resources:\n- %s\nimages:\n' "$base"
image ghcr.io/winproxy/winproxy-controller "$img"
image ghcr.io/winproxy/winproxy-agent "$agent_img"
