{{/*
Shared helpers: names, labels, images, security contexts, scheduling, and the wiring every
component reads (addresses, the linker's mode). Components call them with
(dict "ctx" $ "component" "<name>") where a component is needed.
*/}}

{{- define "evomem.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* <release>-evomem, or the release name alone when it already holds the chart name. */}}
{{- define "evomem.fullname" -}}
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

{{/* The name of one component's resources: <fullname>-<component>, the full name cut to 40
   characters so that "<name>-headless" Services stay within 63 and StatefulSets within 52. */}}
{{- define "evomem.componentName" -}}
{{- printf "%s-%s" (include "evomem.fullname" .ctx | trunc 40 | trimSuffix "-") .component -}}
{{- end -}}

{{- define "evomem.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels that select the release's pods (stable across upgrades). */}}
{{- define "evomem.selectorLabels" -}}
app.kubernetes.io/name: {{ include "evomem.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "evomem.labels" -}}
helm.sh/chart: {{ include "evomem.chart" . }}
{{ include "evomem.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: evomem
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Selector labels of one component's pods. */}}
{{- define "evomem.componentSelectorLabels" -}}
{{ include "evomem.selectorLabels" .ctx }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "evomem.componentLabels" -}}
{{ include "evomem.labels" .ctx }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/*
An image reference from {registry, repository, tag, digest}; "tag" in the dict is the default
tag (the chart's appVersion for the EvoMem image). A digest pins the image instead of the tag.
*/}}
{{- define "evomem.imageRef" -}}
{{- $image := .image -}}
{{- $tag := default .defaultTag $image.tag | toString -}}
{{- $repo := $image.repository -}}
{{- if $image.registry }}{{ $repo = printf "%s/%s" $image.registry $image.repository }}{{ end -}}
{{- if $image.digest -}}
{{- printf "%s@%s" $repo $image.digest -}}
{{- else -}}
{{- if not $tag }}{{ fail (printf "image %s has no tag: pin one" $repo) }}{{ end -}}
{{- printf "%s:%s" $repo $tag -}}
{{- end -}}
{{- end -}}

{{- define "evomem.image" -}}
{{- include "evomem.imageRef" (dict "image" .Values.image "defaultTag" .Chart.AppVersion) -}}
{{- end -}}

{{- define "evomem.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "evomem.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* Pod-level settings every pod of the release shares (no service-account token). */}}
{{- define "evomem.podCommon" -}}
serviceAccountName: {{ include "evomem.serviceAccountName" . }}
automountServiceAccountToken: false
enableServiceLinks: false
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{- define "evomem.containerSecurityContext" -}}
{{ toYaml .Values.containerSecurityContext }}
{{- end -}}

{{/* nodeSelector, tolerations and affinity of a component ({nodeSelector, tolerations, affinity}). */}}
{{- define "evomem.scheduling" -}}
{{- with .nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* GPU pods: the GPU nodes' selector and tolerations, the runtime class. */}}
{{- define "evomem.gpuScheduling" -}}
{{- with .ctx.Values.gpu.runtimeClassName }}
runtimeClassName: {{ . }}
{{- end }}
{{- include "evomem.scheduling" (dict "nodeSelector" .ctx.Values.gpu.nodeSelector "tolerations" .ctx.Values.gpu.tolerations "affinity" .affinity) }}
{{- end -}}

{{/* Resources with the GPU limit added: (dict "resources" .. "gpus" N "name" resourceName). */}}
{{- define "evomem.gpuResources" -}}
{{- $resources := deepCopy .resources -}}
{{- $limits := default dict $resources.limits -}}
{{- $_ := set $limits .name (.gpus | int) -}}
{{- $_ = set $resources "limits" $limits -}}
{{ toYaml $resources }}
{{- end -}}

{{/* ---------------------------------------------------------------- wiring */}}

{{- define "evomem.gpuEnabled" -}}
{{- if .Values.gpu.enabled }}true{{ end -}}
{{- end -}}

{{- define "evomem.storageAddr" -}}
{{- printf "%s:50051" (include "evomem.componentName" (dict "ctx" . "component" "storage")) -}}
{{- end -}}

{{- define "evomem.cronistaAddr" -}}
{{- printf "%s:50052" (include "evomem.componentName" (dict "ctx" . "component" "cronista")) -}}
{{- end -}}

{{- define "evomem.linkerAddr" -}}
{{- printf "%s:50053" (include "evomem.componentName" (dict "ctx" . "component" "linker")) -}}
{{- end -}}

{{/* The linker's mode: linker.mode, or llm with the GPU and scored without. */}}
{{- define "evomem.linkerMode" -}}
{{- if .Values.linker.mode -}}
{{- .Values.linker.mode -}}
{{- else if .Values.gpu.enabled -}}
llm
{{- else -}}
scored
{{- end -}}
{{- end -}}

{{- define "evomem.linkerBaseUrl" -}}
{{- if .Values.linker.llm.baseUrl -}}
{{- .Values.linker.llm.baseUrl -}}
{{- else if and (eq (include "evomem.linkerMode" .) "llm") (not .Values.gpu.enabled) -}}
{{- fail "linker.mode=llm with gpu.enabled=false: set linker.llm.baseUrl to an OpenAI-compatible endpoint (the chart's llm server runs only on GPU nodes)" -}}
{{- else if .Values.gpu.enabled -}}
{{- printf "http://%s:8080/v1" (include "evomem.componentName" (dict "ctx" . "component" "llm")) -}}
{{- end -}}
{{- end -}}

{{- define "evomem.cronistaBackend" -}}
{{- if .Values.cronista.backend -}}
{{- .Values.cronista.backend -}}
{{- else if .Values.gpu.enabled -}}
triton
{{- else -}}
lite
{{- end -}}
{{- end -}}

{{- define "evomem.tritonUrl" -}}
{{- if .Values.cronista.triton.url -}}
{{- .Values.cronista.triton.url -}}
{{- else if and (eq (include "evomem.cronistaBackend" .) "triton") (not .Values.gpu.enabled) -}}
{{- fail "cronista.backend=triton with gpu.enabled=false: set cronista.triton.url to a Triton server's gRPC address (the chart's Triton runs only on GPU nodes)" -}}
{{- else if .Values.gpu.enabled -}}
{{- printf "%s:8001" (include "evomem.componentName" (dict "ctx" . "component" "triton")) -}}
{{- end -}}
{{- end -}}

{{- define "evomem.linkerModel" -}}
{{- default .Values.llm.model.name .Values.linker.llm.model -}}
{{- end -}}

{{- define "evomem.secretName" -}}
{{- default (include "evomem.fullname" .) .Values.secrets.existingSecret -}}
{{- end -}}

{{/* The Secret's content, hashed into the pods' checksum annotation. */}}
{{- define "evomem.secretData" -}}
{{- with .Values.secrets.linkerApiKey }}
linker-api-key: {{ . | b64enc | quote }}
{{- end }}
{{- $grpc := .Values.secrets.grpcSecret | default (include "evomem.kept" (dict "ctx" . "key" "grpc-secret")) }}
{{- $metrics := .Values.secrets.metricsToken | default (include "evomem.kept" (dict "ctx" . "key" "metrics-token")) }}
{{- $test := include "evomem.kept" (dict "ctx" . "key" "test-token") }}
grpc-secret: {{ $grpc | b64enc | quote }}
metrics-token: {{ $metrics | b64enc | quote }}
test-token: {{ $test | b64enc | quote }}
{{- $helmTest := printf "[[tokens]]\nname = \"helm-test\"\nsha256 = \"%s\"\nrole = \"admin\"\nnamespaces = [\"helm-test\"]\n" (sha256sum $test) }}
tokens.toml: {{ printf "%s\n%s" .Values.secrets.tokens $helmTest | b64enc | quote }}
{{- if not .Values.redis.enabled }}
redis-url: {{ .Values.redis.external.url | b64enc | quote }}
{{- end }}
{{- if and .Values.database.enabled .Values.database.bundled.enabled (not .Values.database.existingSecret) }}
{{- $pw := include "evomem.kept" (dict "ctx" . "key" "database-password") }}
database-password: {{ $pw | b64enc | quote }}
database-url: {{ printf "postgresql://evomem:%s@%s:5432/evomem" $pw (include "evomem.componentName" (dict "ctx" . "component" "postgres")) | b64enc | quote }}
{{- end }}
{{- end -}}

{{/* EVOMEM_REDIS_URL: the release's Redis (in the ConfigMap), or the external URL (from the Secret). */}}
{{- define "evomem.redisUrl" -}}
{{- printf "redis://%s:6379/0" (include "evomem.componentName" (dict "ctx" . "component" "redis")) -}}
{{- end -}}

{{- define "evomem.redisUrlEnv" -}}
{{- if not .Values.redis.enabled }}
- name: EVOMEM_REDIS_URL
  valueFrom:
    secretKeyRef:
      name: {{ include "evomem.secretName" . }}
      key: redis-url
{{- end }}
{{- end -}}

{{/* Variables every EvoMem service reads (compose.gpu.yaml's x-common-env). */}}
{{- define "evomem.commonConfig" -}}
EVOMEM_LOG_FORMAT: "json"
EVOMEM_LOG_LEVEL: {{ .Values.config.logLevel | quote }}
EVOMEM_GRPC_HOST: "0.0.0.0"
EVOMEM_METRICS_HOST: "0.0.0.0"
EVOMEM_GRPC_SECRET_FILE: "/run/secrets/evomem/grpc-secret"
EVOMEM_METRICS_TOKEN_FILE: "/run/secrets/evomem/metrics-token"
{{- end -}}

{{/* Pod annotations that roll the pods when their configuration or the Secret changes. */}}
{{- define "evomem.checksums" -}}
checksum/config: {{ .config | sha256sum }}
{{- if not .ctx.Values.secrets.existingSecret }}
checksum/secret: {{ include "evomem.secretData" .ctx | sha256sum }}
{{- end }}
{{- end -}}

{{/* The writable scratch space of a read-only root filesystem. */}}
{{- define "evomem.tmpVolume" -}}
- name: tmp
  emptyDir:
    sizeLimit: 256Mi
{{- end -}}

{{- define "evomem.tmpMount" -}}
- name: tmp
  mountPath: /tmp
{{- end -}}

{{/* A generated secret (the gRPC secret, the helm test's token): kept from the release's
Secret on upgrade, random at install. */}}
{{- define "evomem.kept" -}}
{{- $found := lookup "v1" "Secret" .ctx.Release.Namespace (include "evomem.fullname" .ctx) -}}
{{- if and $found $found.data (hasKey $found.data .key) -}}
{{- index $found.data .key | b64dec -}}
{{- else -}}
{{- randAlphaNum 48 -}}
{{- end -}}
{{- end -}}

{{/* The Secret's gRPC secret and /metrics token (and, for the gateway, its tokens) as files:
EVOMEM_GRPC_SECRET_FILE, EVOMEM_METRICS_TOKEN_FILE, EVOMEM_AUTH_FILE. */}}
{{- define "evomem.secretsVolume" -}}
- name: secrets
  secret:
    secretName: {{ include "evomem.secretName" .ctx }}
    defaultMode: 0440
    items:
      - key: grpc-secret
        path: grpc-secret
      - key: metrics-token
        path: metrics-token
      {{- if .tokens }}
      - key: tokens.toml
        path: tokens.toml
      {{- end }}
{{- end -}}

{{- define "evomem.secretsMount" -}}
- name: secrets
  mountPath: /run/secrets/evomem
  readOnly: true
{{- end -}}

{{/* grpc.health.v1 probes for a gRPC service: (dict "port" N "service" "evomem.v1.X"). */}}
{{- define "evomem.grpcProbes" -}}
startupProbe:
  grpc:
    port: {{ .port }}
    service: {{ .service | quote }}
  periodSeconds: 2
  failureThreshold: 60
readinessProbe:
  grpc:
    port: {{ .port }}
    service: {{ .service | quote }}
  periodSeconds: 10
  timeoutSeconds: 3
  failureThreshold: 3
livenessProbe:
  grpc:
    port: {{ .port }}
    service: {{ .service | quote }}
  periodSeconds: 20
  timeoutSeconds: 5
  failureThreshold: 3
{{- end -}}

{{/* The Secret holding EVOMEM_DATABASE_URL (database.enabled): the user's, or the release's
(the bundled PostgreSQL's URL, key database-url). */}}
{{- define "evomem.databaseSecret" -}}
{{- default (include "evomem.fullname" .) .Values.database.existingSecret -}}
{{- end -}}

{{- define "evomem.databaseUrlKey" -}}
{{- ternary .Values.database.urlKey "database-url" (ne .Values.database.existingSecret "") -}}
{{- end -}}
