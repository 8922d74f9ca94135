{{/* Plain environment of the process (see "common.env"); secrets come from envFromSecret instead. */}}
{{- define "common.configmap" -}}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ include "common.fullname" . }}
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "common.labels" . | nindent 4 }}
data:
  {{- include "common.env" . | trim | nindent 2 }}
{{- end -}}
