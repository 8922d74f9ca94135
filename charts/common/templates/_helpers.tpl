{{/*
Names, labels and value resolution shared by every agent-platform service chart.
Every template here takes the service chart's root context (`.`).
Per-service values win over `global.*` (set once in the umbrella chart), which win over built-in defaults.
*/}}

{{- define "common.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Release-scoped name: "<release>-<chart>", or just the release name when it already contains the chart name. */}}
{{- define "common.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "common.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "common.selectorLabels" -}}
app.kubernetes.io/name: {{ include "common.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "common.labels" -}}
helm.sh/chart: {{ include "common.chart" . }}
{{ include "common.selectorLabels" . }}
app.kubernetes.io/component: {{ include "common.name" . }}
app.kubernetes.io/part-of: agent-platform
{{- with .Chart.AppVersion }}
app.kubernetes.io/version: {{ . | quote }}
{{- end }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "common.image" -}}
{{- $g := .Values.global | default dict -}}
{{- $gi := $g.image | default dict -}}
{{- $i := .Values.image | default dict -}}
{{- $repository := $i.repository | default $gi.repository | default "agent-platform" -}}
{{- $tag := $i.tag | default $gi.tag | default .Chart.AppVersion | toString -}}
{{- printf "%s:%s" $repository $tag -}}
{{- end -}}

{{- define "common.imagePullPolicy" -}}
{{- $g := .Values.global | default dict -}}
{{- $gi := $g.image | default dict -}}
{{- $i := .Values.image | default dict -}}
{{- $i.pullPolicy | default $gi.pullPolicy | default "IfNotPresent" -}}
{{- end -}}

{{- define "common.serviceAccountName" -}}
{{- $sa := .Values.serviceAccount | default dict -}}
{{- if $sa.create -}}
{{- $sa.name | default (include "common.fullname" .) -}}
{{- else -}}
{{- $sa.name | default "default" -}}
{{- end -}}
{{- end -}}

{{/* Name of the Secret whose keys all become env vars (JWT_SECRET, MONGO_URL, MASTER_API_KEY, ...); may be empty. */}}
{{- define "common.secretName" -}}
{{- $g := .Values.global | default dict -}}
{{- .Values.envFromSecret | default $g.envFromSecret | default "" -}}
{{- end -}}

{{/*
"true" when the process serves HTTP itself (the gateway's API on PORT, the MCP server on MCP_PORT): container port
`http` for its Service; empty otherwise.
*/}}
{{- define "common.servesHttp" -}}
{{- $http := .Values.http | default dict -}}
{{- if $http.enabled -}}true{{- end -}}
{{- end -}}

{{/* Env var that tells the process its HTTP port: http.portEnv, default PORT (the gateway's). */}}
{{- define "common.httpPortEnv" -}}
{{- (.Values.http | default dict).portEnv | default "PORT" -}}
{{- end -}}

{{/* The port of the process's own HTTP server (gateway: the API; mcp: the MCP server). */}}
{{- define "common.httpPort" -}}
{{- (.Values.http | default dict).port | default 3000 | int -}}
{{- end -}}

{{/* HEALTH_PORT: every process's probe server (GET /health, /health/live, /health/ready), which the probes call. */}}
{{- define "common.healthPort" -}}
{{- $g := .Values.global | default dict -}}
{{- .Values.healthPort | default $g.healthPort | default 3001 | int -}}
{{- end -}}

{{/*
The process's Prometheus metrics settings as YAML (read with fromYaml): the service's `metrics` over
global.metrics over the defaults (enabled, port 3002, path /metrics, no ServiceMonitor).
*/}}
{{- define "common.metrics" -}}
{{- $g := .Values.global | default dict -}}
{{- $defaults := dict "enabled" true "port" 3002 "path" "/metrics" "serviceMonitor" (dict "enabled" false "interval" "30s" "labels" dict) -}}
{{- toYaml (mergeOverwrite $defaults (deepCopy ($g.metrics | default dict)) (deepCopy (.Values.metrics | default dict))) -}}
{{- end -}}

{{/* "true" when replicas are managed by an HPA or a KEDA ScaledObject, so the Deployment must not set them. */}}
{{- define "common.autoscaled" -}}
{{- $hpa := .Values.autoscaling | default dict -}}
{{- $keda := .Values.keda | default dict -}}
{{- if or $hpa.enabled $keda.enabled -}}true{{- end -}}
{{- end -}}

{{/* An env value as a string; YAML numbers arrive as float64, printed without an exponent when whole. */}}
{{- define "common.envValue" -}}
{{- if and (kindIs "float64" .) (eq (. | int64 | float64) .) -}}
{{- . | int64 | toString -}}
{{- else -}}
{{- . | toString -}}
{{- end -}}
{{- end -}}

{{/*
Plain (non-secret) environment of the process, as a YAML map of strings. Later sources win:
built-ins (NODE_ENV, SERVICES, TRANSPORTER, NAMESPACE, LOG_LEVEL, HEALTH_PORT, the http.portEnv variable,
METRICS_PORT)
< global.env < env.
*/}}
{{- define "common.env" -}}
{{- $g := .Values.global | default dict -}}
{{- $services := .Values.services | default (list .Chart.Name) -}}
{{- $env := dict "NODE_ENV" "production" "SERVICES" (join "," $services) -}}
{{- with (.Values.transporter | default $g.transporter) }}{{ $_ := set $env "TRANSPORTER" . }}{{ end -}}
{{- with (.Values.moleculerNamespace | default $g.moleculerNamespace) }}{{ $_ := set $env "NAMESPACE" . }}{{ end -}}
{{- with (.Values.logLevel | default $g.logLevel) }}{{ $_ := set $env "LOG_LEVEL" . }}{{ end -}}
{{- $_ := set $env "HEALTH_PORT" (include "common.healthPort" .) -}}
{{- if include "common.servesHttp" . -}}
{{- $_ := set $env (include "common.httpPortEnv" .) (include "common.httpPort" .) -}}
{{- end -}}
{{- $metrics := include "common.metrics" . | fromYaml -}}
{{- if $metrics.enabled }}{{ $_ := set $env "METRICS_PORT" ($metrics.port | int | toString) }}{{ end -}}
{{- $env = mergeOverwrite $env (deepCopy ($g.env | default dict)) (deepCopy (.Values.env | default dict)) -}}
{{- range $key, $value := $env }}
{{- if not (kindIs "invalid" $value) }}
{{ $key }}: {{ include "common.envValue" $value | quote }}
{{- end }}
{{- end }}
{{- end -}}
