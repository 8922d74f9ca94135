{{/*
The Deployment of one service: the shared image with SERVICES set to this chart's services, plain env
from the chart's ConfigMap, secrets from envFromSecret, probes on the probe server (HEALTH_PORT).
*/}}
{{- define "common.deployment" -}}
{{- $g := .Values.global | default dict -}}
{{- $fullname := include "common.fullname" . -}}
{{- $secretName := include "common.secretName" . -}}
{{- $metrics := include "common.metrics" . | fromYaml -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $fullname }}
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "common.labels" . | nindent 4 }}
spec:
  {{- if not (include "common.autoscaled" .) }}
  replicas: {{ .Values.replicaCount | default 1 }}
  {{- end }}
  revisionHistoryLimit: {{ .Values.revisionHistoryLimit | default 5 }}
  {{- with .Values.strategy }}
  strategy:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  selector:
    matchLabels:
      {{- include "common.selectorLabels" . | nindent 6 }}
  template:
    metadata:
      annotations:
        checksum/env: {{ include "common.env" . | sha256sum }}
        {{- if $metrics.enabled }}
        prometheus.io/scrape: "true"
        prometheus.io/port: {{ $metrics.port | int | quote }}
        prometheus.io/path: {{ $metrics.path | quote }}
        {{- end }}
        {{- with .Values.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      labels:
        {{- include "common.labels" . | nindent 8 }}
        {{- with .Values.podLabels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      serviceAccountName: {{ include "common.serviceAccountName" . }}
      automountServiceAccountToken: {{ (.Values.serviceAccount | default dict).automountToken | default false }}
      {{- with (.Values.imagePullSecrets | default $g.imagePullSecrets) }}
      imagePullSecrets:
        {{- range . }}
        {{- if kindIs "string" . }}
        - name: {{ . }}
        {{- else }}
        - name: {{ .name }}
        {{- end }}
        {{- end }}
      {{- end }}
      {{- with .Values.podSecurityContext }}
      securityContext:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      terminationGracePeriodSeconds: {{ .Values.terminationGracePeriodSeconds | default 30 }}
      {{- with .Values.priorityClassName }}
      priorityClassName: {{ . }}
      {{- end }}
      containers:
        - name: {{ include "common.name" . }}
          image: {{ include "common.image" . | quote }}
          imagePullPolicy: {{ include "common.imagePullPolicy" . }}
          ports:
            {{- if include "common.servesHttp" . }}
            - name: http
              containerPort: {{ include "common.httpPort" . }}
              protocol: TCP
            {{- end }}
            - name: health
              containerPort: {{ include "common.healthPort" . }}
              protocol: TCP
            {{- if $metrics.enabled }}
            - name: metrics
              containerPort: {{ $metrics.port | int }}
              protocol: TCP
            {{- end }}
          envFrom:
            - configMapRef:
                name: {{ $fullname }}
            {{- if $secretName }}
            # Secret keys override the ConfigMap for the same name.
            - secretRef:
                name: {{ $secretName }}
            {{- end }}
            {{- with .Values.extraEnvFrom }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
          {{- $extraEnv := concat ($g.extraEnv | default list) (.Values.extraEnv | default list) }}
          {{- with $extraEnv }}
          env:
            {{- toYaml . | nindent 12 }}
          {{- end }}
          {{- with (include "common.probes" (dict "probes" .Values.probes "port" "health") | trim) }}
          {{- . | nindent 10 }}
          {{- end }}
          {{- with .Values.preStopSleepSeconds }}
          lifecycle:
            preStop:
              # Lets endpoints and load balancers stop sending traffic before SIGTERM stops the broker.
              exec:
                command: ["sleep", {{ . | toString | quote }}]
          {{- end }}
          {{- with .Values.resources }}
          resources:
            {{- toYaml . | nindent 12 }}
          {{- end }}
          {{- with .Values.securityContext }}
          securityContext:
            {{- toYaml . | nindent 12 }}
          {{- end }}
          volumeMounts:
            # Writable scratch space; the root filesystem is read-only.
            - name: tmp
              mountPath: /tmp
            {{- with .Values.extraVolumeMounts }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
      volumes:
        - name: tmp
          emptyDir:
            sizeLimit: {{ .Values.tmpSizeLimit | default "256Mi" }}
        {{- with .Values.extraVolumes }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      {{- with (.Values.nodeSelector | default $g.nodeSelector) }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with (.Values.affinity | default $g.affinity) }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with (.Values.tolerations | default $g.tolerations) }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .Values.topologySpreadConstraints }}
      topologySpreadConstraints:
        {{- tpl (toYaml .) $ | nindent 8 }}
      {{- end }}
{{- end -}}

{{/*
startup/liveness/readiness probes. Argument: dict "probes" <.Values.probes> "port" <container port name>.
startup and liveness GET probes.livePath (the process runs), readiness GET probes.readyPath (its dependencies
answer), or probes.exec.command for all three when set (for images without the health server).
*/}}
{{- define "common.probes" -}}
{{- $p := .probes | default dict -}}
{{- $port := .port -}}
{{- if $p.enabled -}}
{{- $exec := ($p.exec | default dict).command -}}
{{- range $kind := list "startup" "liveness" "readiness" -}}
{{- $cfg := get $p $kind | default dict -}}
{{- if $cfg.enabled }}
{{ $kind }}Probe:
  {{- if $exec }}
  exec:
    command:
      {{- toYaml $exec | nindent 6 }}
  {{- else }}
  httpGet:
    path: {{ eq $kind "readiness" | ternary ($p.readyPath | default "/health/ready") ($p.livePath | default "/health/live") }}
    port: {{ $port }}
  {{- end }}
  {{- with (omit $cfg "enabled") }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end }}
{{- end -}}
{{- end -}}
{{- end -}}
