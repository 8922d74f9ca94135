{{/* Service in front of the `http` container port (gateway and mcp: other services talk over NATS). */}}
{{- define "common.service" -}}
{{- $svc := .Values.service | default dict -}}
{{- if $svc.enabled -}}
apiVersion: v1
kind: Service
metadata:
  name: {{ include "common.fullname" . }}
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "common.labels" . | nindent 4 }}
  {{- with $svc.annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  type: {{ $svc.type | default "ClusterIP" }}
  selector:
    {{- include "common.selectorLabels" . | nindent 4 }}
  ports:
    - name: http
      port: {{ $svc.port | default 80 }}
      targetPort: http
      protocol: TCP
      {{- if and (eq ($svc.type | default "ClusterIP") "NodePort") $svc.nodePort }}
      nodePort: {{ $svc.nodePort }}
      {{- end }}
{{- end -}}
{{- end -}}
