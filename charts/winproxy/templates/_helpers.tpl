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
