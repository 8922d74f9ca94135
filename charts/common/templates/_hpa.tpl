{{/* CPU (and optionally memory) HorizontalPodAutoscaler; replaced by the KEDA ScaledObject where a chart has one. */}}
{{- define "common.hpa" -}}
{{- $as := .Values.autoscaling | default dict -}}
{{- $keda := .Values.keda | default dict -}}
{{- if and $as.enabled $keda.enabled -}}
{{- fail "autoscaling.enabled and keda.enabled are exclusive: KEDA creates its own HPA" -}}
{{- end -}}
{{- if $as.enabled -}}
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {{ include "common.fullname" . }}
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "common.labels" . | nindent 4 }}
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: {{ include "common.fullname" . }}
  minReplicas: {{ $as.minReplicas | default 1 }}
  maxReplicas: {{ $as.maxReplicas | default 5 }}
  metrics:
    {{- with $as.targetCPU }}
    - type: Resource
      resource:
        name: cpu
        target:
          type: Utilization
          averageUtilization: {{ . }}
    {{- end }}
    {{- with $as.targetMemory }}
    - type: Resource
      resource:
        name: memory
        target:
          type: Utilization
          averageUtilization: {{ . }}
    {{- end }}
  {{- with $as.behavior }}
  behavior:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}
{{- end -}}
