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

{{/* Labels on every object. */}}
{{- define "winproxy.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "winproxy.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
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

{{/* An image reference; the tag defaults to the chart's appVersion. */}}
{{- define "winproxy.image" -}}
{{- printf "%s:%s" .image.repository (default .root.Chart.AppVersion .image.tag) -}}
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
The API server endpoint the agents use, as a dict with host and port, or an empty dict when it is
not known while rendering without a cluster (helm template, lint). apiServer.host/port win; when
empty, the address kubeadm publishes in kube-public/cluster-info. With a cluster that has neither,
rendering fails: an agent left on the kubernetes Service ClusterIP cannot start after a reboot.
*/}}
{{- define "winproxy.apiServerEndpoint" -}}
{{- $host := toString .Values.apiServer.host -}}
{{- $port := toString .Values.apiServer.port -}}
{{- if and $host (not $port) -}}
{{- fail "apiServer.port is required with apiServer.host (e.g. 6443 for kubeadm, 443 for most managed clusters)" -}}
{{- end -}}
{{- if and $port (not $host) -}}
{{- fail "apiServer.host is required with apiServer.port" -}}
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
{{- end -}}
{{- if and (not $host) (lookup "v1" "Namespace" "" "kube-system") -}}
{{- fail "cannot find the API server address for the agents: set apiServer.host and apiServer.port to the address the Windows nodes reach the API server at (your kubeconfig's server:), because without kube-proxy a node cannot reach the kubernetes Service ClusterIP after a reboot; kube-public/cluster-info, where kubeadm publishes it, does not exist in this cluster" -}}
{{- end -}}
{{- end -}}
{{- if $host -}}
{{- toYaml (dict "host" $host "port" $port) -}}
{{- end -}}
{{- end -}}
