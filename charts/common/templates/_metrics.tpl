{{/*
Prometheus Operator scraping (global.metrics.serviceMonitor.enabled): a headless `<name>-metrics` Service on the
`metrics` container port, and a ServiceMonitor selecting it. Without the operator, the pods' prometheus.io/*
annotations serve annotation-based scraping instead.
*/}}
{{- define "common.serviceMonitor" -}}
{{- $metrics := include "common.metrics" . | fromYaml -}}
{{- $monitor := $metrics.serviceMonitor | default dict -}}
{{- if $monitor.enabled -}}
{{- if not $metrics.enabled -}}
{{- fail "metrics.serviceMonitor.enabled needs metrics.enabled: the ServiceMonitor scrapes the metrics port" -}}
{{- end -}}
{{- $fullname := include "common.fullname" . -}}
apiVersion: v1
kind: Service
metadata:
  name: {{ $fullname }}-metrics
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "common.labels" . | nindent 4 }}
    app.kubernetes.io/metrics: "true"
spec:
  clusterIP: None
  selector:
    {{- include "common.selectorLabels" . | nindent 4 }}
  ports:
    - name: metrics
      port: {{ $metrics.port | int }}
      targetPort: metrics
      protocol: TCP
---
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata:
  name: {{ $fullname }}
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "common.labels" . | nindent 4 }}
    {{- with $monitor.labels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  selector:
    matchLabels:
      {{- include "common.selectorLabels" . | nindent 6 }}
      app.kubernetes.io/metrics: "true"
  endpoints:
    - port: metrics
      path: {{ $metrics.path }}
      interval: {{ $monitor.interval | default "30s" }}
{{- end -}}
{{- end -}}
