{{/* The chart name, overridable with nameOverride. */}}
{{- define "winproxy.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The prefix of every object name; truncated so that "-controller" and "-agent" still fit in 63 characters. */}}
{{- define "winproxy.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Labels on every object; Helm's own (helm.sh/chart, managed-by) unless helmLabels is off. */}}
{{- define "winproxy.labels" -}}
{{- if .Values.helmLabels -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ end -}}
app.kubernetes.io/name: {{ include "winproxy.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- if .Values.helmLabels }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}
app.kubernetes.io/part-of: winproxy
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Selector labels of one component ("controller" or "agent"); never change on upgrade. */}}
{{- define "winproxy.selectorLabels" -}}
app.kubernetes.io/name: {{ include "winproxy.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "winproxy.controller.serviceAccountName" -}}
{{- default (printf "%s-controller" (include "winproxy.fullname" .)) .Values.controller.serviceAccount.name -}}
{{- end -}}

{{- define "winproxy.agent.serviceAccountName" -}}
{{- default (printf "%s-agent" (include "winproxy.fullname" .)) .Values.agent.serviceAccount.name -}}
{{- end -}}

{{/* The names of the RBAC roles; each binding is named after its role. */}}
{{- define "winproxy.controller.clusterRoleName" -}}
{{- default (printf "%s-controller" (include "winproxy.fullname" .)) .Values.controller.rbac.clusterRoleName -}}
{{- end -}}

{{- define "winproxy.controller.leaderElectionRoleName" -}}
{{- default (printf "%s-leader-election" (include "winproxy.fullname" .)) .Values.controller.leaderElection.roleName -}}
{{- end -}}

{{- define "winproxy.agent.clusterRoleName" -}}
{{- default (printf "%s-agent" (include "winproxy.fullname" .)) .Values.agent.rbac.clusterRoleName -}}
{{- end -}}

{{/*
An image reference: [<registry>/]<repository>(@<digest>|:<tag>). global.imageRegistry overrides the
image's registry; the digest wins over the tag, which defaults to the chart's appVersion. .key
names the image's values in messages ("controller" or "agent").
*/}}
{{- define "winproxy.image" -}}
{{- $registry := .image.registry | default "" | toString -}}
{{- with .root.Values.global }}{{ with .imageRegistry }}{{ $registry = toString . }}{{ end }}{{ end -}}
{{- $repository := .image.repository -}}
{{- if $registry -}}
{{- $parts := splitList "/" $repository -}}
{{- $first := first $parts -}}
{{- if and (gt (len $parts) 1) (or (contains "." $first) (contains ":" $first) (eq $first "localhost")) -}}
{{- fail (printf "%s.image.repository %q starts with a registry host, and the registry %q would be put in front of it: put the host in %s.image.registry (or global.imageRegistry) and the rest in repository, or set %s.image.registry to \"\" to use the repository as it is" .key $repository $registry .key .key) -}}
{{- end -}}
{{- $repository = printf "%s/%s" (trimSuffix "/" $registry) $repository -}}
{{- end -}}
{{- if .image.digest -}}
{{- printf "%s@%s" $repository .image.digest -}}
{{- else -}}
{{- printf "%s:%s" $repository (default .root.Chart.AppVersion .image.tag) -}}
{{- end -}}
{{- end -}}

{{/* A probe's timing values, rendered under the probe. */}}
{{- define "winproxy.probeTiming" -}}
initialDelaySeconds: {{ .initialDelaySeconds }}
periodSeconds: {{ .periodSeconds }}
timeoutSeconds: {{ .timeoutSeconds }}
failureThreshold: {{ .failureThreshold }}
{{- end -}}

{{/* The controller metrics Service's name; the ServiceMonitor's job label is this name too. */}}
{{- define "winproxy.controller.metricsService" -}}
{{- printf "%s-controller-metrics" (include "winproxy.fullname" .) -}}
{{- end -}}

{{/* Whether the agent's metrics listen on the node's loopback only ("true" or ""). */}}
{{- define "winproxy.agent.metricsLoopback" -}}
{{- $a := toString .Values.agent.metrics.bindAddress | trimPrefix "[" | trimSuffix "]" -}}
{{- if or (hasPrefix "127." $a) (eq $a "::1") (eq $a "localhost") (eq $a "0:0:0:0:0:0:0:1") -}}true{{- end -}}
{{- end -}}

{{/*
Refuses values the apiserver would refuse at install or that cannot work, with a message that says
what to change. Included by the controller template, which is always rendered.
*/}}
{{- define "winproxy.validate" -}}
{{- $c := .Values.controller -}}
{{- if and (gt (int $c.replicas) 1) (not $c.leaderElection.enabled) -}}
{{- fail (printf "controller.replicas is %d but controller.leaderElection.enabled is false: the replicas would all reconcile at once and undo each other's rollouts; enable leader election or run one replica" (int $c.replicas)) -}}
{{- end -}}
{{- if and $c.metrics.enabled (eq (int $c.metrics.port) (int $c.healthProbe.port)) -}}
{{- fail (printf "controller.metrics.port and controller.healthProbe.port are both %d: the controller cannot serve metrics and probes on one port; pick two ports" (int $c.metrics.port)) -}}
{{- end -}}
{{- $pdb := $c.podDisruptionBudget -}}
{{- if and (ne (toString $pdb.minAvailable) "") (ne (toString $pdb.maxUnavailable) "") -}}
{{- fail "controller.podDisruptionBudget: set minAvailable or maxUnavailable, not both (a PodDisruptionBudget takes one)" -}}
{{- end -}}
{{- if and $c.metrics.serviceMonitor.enabled (not $c.metrics.enabled) -}}
{{- fail "controller.metrics.serviceMonitor.enabled needs controller.metrics.enabled: without metrics there is nothing to scrape" -}}
{{- end -}}
{{- if .Values.agent.enabled -}}
{{- $busy := dict "10248" "the kubelet's healthz" "10249" "Windows kube-proxy's metrics" "10250" "the kubelet's API" "10255" "the kubelet's read-only API" "10256" "the proxy health server (spec.healthCheck.port)" -}}
{{- range $key := list "metrics" "healthProbe" -}}
{{- $port := toString (int (get $.Values.agent $key).port) -}}
{{- if hasKey $busy $port -}}
{{- fail (printf "agent.%s.port %s is the node's port of %s, and the agent runs in the host network: pick another, e.g. the default" $key $port (get $busy $port)) -}}
{{- end -}}
{{- end -}}
{{- if eq (int .Values.agent.metrics.port) (int .Values.agent.healthProbe.port) -}}
{{- fail (printf "agent.metrics.port and agent.healthProbe.port are both %d: the agent cannot serve metrics and probes on one host port; pick two ports" (int .Values.agent.metrics.port)) -}}
{{- end -}}
{{- if and .Values.agent.metrics.podMonitor.enabled (include "winproxy.agent.metricsLoopback" .) -}}
{{- fail (printf "agent.metrics.podMonitor.enabled needs agent.metrics.bindAddress reachable by Prometheus, but it is %s, the node's loopback: set agent.metrics.bindAddress=0.0.0.0 (and open port %d in the Windows firewall)" (toString .Values.agent.metrics.bindAddress) (int .Values.agent.metrics.port)) -}}
{{- end -}}
{{- else if .Values.agent.metrics.podMonitor.enabled -}}
{{- fail "agent.metrics.podMonitor.enabled needs agent.enabled: without agents there is nothing to scrape" -}}
{{- end -}}
{{- end -}}

{{/* The rules of the ClusterRole in a copied kustomize/controller-gen file (which may hold several documents). */}}
{{- define "winproxy.clusterRoleRules" -}}
{{- range regexSplit "(?m)^---\\s*$" (.root.Files.Get .path) -1 }}
{{- $doc := fromYaml . }}
{{- if eq (toString $doc.kind) "ClusterRole" }}
{{- toYaml $doc.rules }}
{{- end }}
{{- end }}
{{- end -}}

{{/*
The API server endpoint the agents use, as a dict with host, port and source (what it was read
from), or an empty dict when it is not known while rendering without a cluster (helm template,
lint). In order:
1. apiServer.host/port, when set;
2. the EndpointSlice default/kubernetes, where the API server itself writes the address and port
   it advertises, on every cluster (kubeadm, AKS, EKS, GKE ...): its first ready address, in
   address order so that every render picks the same one;
3. kube-public/cluster-info, where kubeadm publishes the server: of its kubeconfig.
With a cluster that has none of them, rendering fails: an agent left on the kubernetes Service
ClusterIP cannot start after a reboot. servers counts the API servers the slice lists.
*/}}
{{- define "winproxy.apiServerEndpoint" -}}
{{- $host := toString .Values.apiServer.host -}}
{{- $port := toString .Values.apiServer.port -}}
{{- $source := "values apiServer.host/port" -}}
{{- $servers := 1 -}}
{{- if and $host (not $port) -}}
{{- fail "apiServer.port is required with apiServer.host (e.g. 6443 for kubeadm, 443 for most managed clusters)" -}}
{{- end -}}
{{- if and $port (not $host) -}}
{{- fail "apiServer.host is required with apiServer.port" -}}
{{- end -}}
{{- if not $host -}}
{{- $slice := lookup "discovery.k8s.io/v1" "EndpointSlice" "default" "kubernetes" -}}
{{- if $slice -}}
{{- $addresses := list -}}
{{- range $slice.endpoints -}}
{{- if ne (toString (dig "conditions" "ready" true .)) "false" -}}
{{- $addresses = append $addresses (first .addresses) -}}
{{- end -}}
{{- end -}}
{{- range $slice.ports -}}
{{- if or (eq (toString .name) "https") (not $port) -}}{{- $port = toString (int .port) -}}{{- end -}}
{{- end -}}
{{- if and $addresses $port -}}
{{- $host = first (sortAlpha $addresses) -}}
{{- $servers = len $addresses -}}
{{- $source = "EndpointSlice default/kubernetes" -}}
{{- else -}}
{{- $port = "" -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if not $host -}}
{{- $info := lookup "v1" "ConfigMap" "kube-public" "cluster-info" -}}
{{- if and $info $info.data (index $info.data "kubeconfig") -}}
{{- $kubeconfig := fromYaml (index $info.data "kubeconfig") -}}
{{- $server := "" -}}
{{- range $kubeconfig.clusters }}{{ if not $server }}{{ $server = .cluster.server }}{{ end }}{{ end -}}
{{- $url := urlParse $server -}}
{{- $host = $url.hostname -}}
{{- $port = trimPrefix ":" (trimPrefix $url.hostname $url.host) | trimPrefix "[" | trimPrefix "]" -}}
{{- if and $host (not $port) -}}{{- $port = "443" -}}{{- end -}}
{{- $source = "ConfigMap kube-public/cluster-info" -}}
{{- end -}}
{{- if and (not $host) (lookup "v1" "Namespace" "" "kube-system") -}}
{{- fail "cannot find the API server address for the agents: set apiServer.host and apiServer.port to the address the Windows nodes reach the API server at (your kubeconfig's server:), because without kube-proxy a node cannot reach the kubernetes Service ClusterIP after a reboot; this cluster has neither the EndpointSlice default/kubernetes with a ready address (which the API server writes) nor kube-public/cluster-info (which kubeadm publishes), or your account may not read them" -}}
{{- end -}}
{{- end -}}
{{- if $host -}}
{{- toYaml (dict "host" $host "port" $port "source" $source "servers" $servers) -}}
{{- end -}}
{{- end -}}
