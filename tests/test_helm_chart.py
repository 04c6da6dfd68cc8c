"""The Helm chart (charts/evomem), rendered and linted by the real Helm engine, validated against
the Kubernetes schemas.

The engine is Helm v4 itself, as a native library (``helm-python-sdk``: ``libhelm_c.so``), so
what is rendered here is what ``helm template`` / ``helm install`` render. Every manifest of
every value set is validated against the OpenAPI schemas of one pinned Kubernetes version
(``kubernetes-validate``, offline, strict: an unknown field is an error). Then the properties
the chart promises are checked on the rendered objects:

- exactly one storage replica over the SQLite file (two are refused), with its PVC; with PostgreSQL
  (``database.enabled``) two or more, stateless, the URL from a Secret, a PodDisruptionBudget;
- GPUs requested by triton and llm only, and by nothing with ``gpu.enabled=false``;
- every pod non-root, read-only root filesystem, no capabilities, seccomp, no token; every
  container with resources and probes (native gRPC probes for the gRPC services);
- image tags pinned; the NetworkPolicies select the pods they mean and admit only the callers;
- every variable the chart sets is a setting the services read (``evomem.settings.env_names``);
- the chart and compose.gpu.yaml have the same components, ports, variables and health checks;
- bad values fail with a clear schema error; the chart README's tables are up to date.

No cluster is reachable here: ``helm install`` against a live API server is not tested.
"""

from __future__ import annotations

import base64
import importlib.util
import re
import socket
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import kubernetes_validate
import pytest
import yaml
from helm_python.chart import Chart, lint
from helm_python.errors import HelmError

from evomem.app.memory import MemoryService
from evomem.entrypoints.mcp.server import build_mcp_server

ROOT = Path(__file__).resolve().parents[1]
CHART_DIR = ROOT / "charts" / "evomem"
COMPOSE_GPU = ROOT / "compose.gpu.yaml"
sys.path.insert(0, str(ROOT / "scripts"))
import helm_readme  # noqa: E402

K8S_VERSION = "1.34.0"  # the Kubernetes release whose schemas every manifest must satisfy
RELEASE = "demo"
COMPONENTS = {"gateway", "storage", "cronista", "linker", "worker", "redis", "triton", "llm"}
GPU_COMPONENTS = {"triton", "llm"}
GRPC_SERVICES = {
    "storage": "evomem.v1.StorageService",
    "cronista": "evomem.v1.CronistaService",
    "linker": "evomem.v1.LinkerService",
}
# Read by a program in the EvoMem image that is not EvoMem's settings: gunicorn (the gateway's server).
NOT_SETTINGS = {"GUNICORN_CMD_ARGS", "LEDGER_TOKEN"}
WORKLOAD_KINDS = {"Deployment", "StatefulSet"}
METRICS_PORTS = {9464, 8002}  # EvoMem services, Triton

CUSTOM_IMAGES = {
    "image": {"registry": "registry.example.com", "repository": "team/evomem", "tag": "0.3.0-rc1"},
    "redis": {"image": {"registry": "mirror.example.com", "repository": "redis", "tag": "7.2.5"}},
    "triton": {"image": {"registry": "mirror.example.com", "repository": "nvidia/tritonserver", "tag": "24.12-py3"}},
    "llm": {
        "image": {
            "registry": "mirror.example.com",
            "repository": "ggml-org/llama.cpp",
            "tag": "server-cuda-b11206",
            "digest": "sha256:" + "a" * 64,
        }
    },
}
VALUE_SETS: dict[str, dict[str, Any]] = {
    "defaults (GPU)": {},
    "gpu.enabled=false (lite CPU)": {"gpu": {"enabled": False}},
    "external Redis": {"redis": {"enabled": False, "external": {"url": "redis://:s3cret@redis.example.com:6379/2"}}},
    "Ingress on": {
        "gateway": {
            "ingress": {
                "enabled": True,
                "className": "nginx",
                "host": "evomem.example.com",
                "tlsSecret": "evomem-tls",
                "annotations": {"nginx.ingress.kubernetes.io/proxy-read-timeout": "300"},
            }
        },
        "networkPolicy": {
            "gatewayFrom": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ingress-nginx"}}}]
        },
    },
    "autoscaling on": {"gateway": {"autoscaling": {"enabled": True, "minReplicas": 3, "maxReplicas": 10}}},
    "existing Secret": {"secrets": {"existingSecret": "evomem-prod"}, "redis": {"enabled": False}},
    "PostgreSQL, 2 storage replicas": {
        "database": {"enabled": True, "existingSecret": "evomem-db", "urlKey": "url"},
        "storage": {"replicas": 2},
    },
    "bundled PostgreSQL (trial)": {
        "database": {"enabled": True, "bundled": {"enabled": True}},
        "storage": {"replicas": 2},
    },
    "custom images": {
        **CUSTOM_IMAGES,
        "triton": {
            **CUSTOM_IMAGES["triton"],
            "modelRepository": {
                "from": "image",
                "image": {"registry": "registry.example.com", "repository": "team/evomem-models", "tag": "2026.12.1"},
            },
        },
        "secrets": {"linkerApiKey": "sk-test"},
        "networkPolicy": {"metricsFrom": [{"podSelector": {"matchLabels": {"app": "prometheus"}}}]},
    },
}


# ---------------------------------------------------------------------------- rendering


@dataclass
class Rendered:
    """One value set rendered by Helm: the manifests (hooks included) and NOTES.txt."""

    manifests: list[dict[str, Any]]
    notes: str

    def kind(self, kind: str) -> list[dict[str, Any]]:
        return [m for m in self.manifests if m["kind"] == kind]

    def named(self, kind: str, name: str) -> dict[str, Any]:
        found = [m for m in self.kind(kind) if m["metadata"]["name"] == name]
        assert len(found) == 1, f"{kind}/{name}: {len(found)} rendered"
        return found[0]

    @property
    def workloads(self) -> dict[str, dict[str, Any]]:
        """Deployments and StatefulSets by component."""
        out: dict[str, dict[str, Any]] = {}
        for m in self.manifests:
            if m["kind"] in WORKLOAD_KINDS:
                component = m["metadata"]["labels"]["app.kubernetes.io/component"]
                assert component not in out, f"two workloads for {component}"
                out[component] = m
        return out

    def pod_specs(self) -> dict[str, dict[str, Any]]:
        """Every pod spec by component: the workloads' templates and the helm test pod."""
        specs = {c: w["spec"]["template"]["spec"] for c, w in self.workloads.items()}
        for pod in self.kind("Pod"):
            specs[pod["metadata"]["labels"]["app.kubernetes.io/component"]] = pod["spec"]
        return specs

    def env(self, component: str) -> dict[str, dict[str, Any]]:
        """The variables of a component's main container: name -> {"value"} or {"valueFrom"}."""
        container = self.workloads[component]["spec"]["template"]["spec"]["containers"][0]
        return container_env(self, container)


def container_env(rendered: Rendered, container: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for source in container.get("envFrom", []):
        config = rendered.named("ConfigMap", source["configMapRef"]["name"])
        for key, value in config["data"].items():
            out[key] = {"value": value}
    for entry in container.get("env", []):
        assert entry["name"] not in out, f"{entry['name']} is set twice in {container['name']}"
        out[entry["name"]] = {k: v for k, v in entry.items() if k != "name"}
    return out


@pytest.fixture(scope="module")
def chart() -> Iterator[Chart]:
    with Chart.load(CHART_DIR) as loaded:
        yield loaded


_CACHE: dict[str, Rendered] = {}


def render(chart: Chart, values: dict[str, Any]) -> Rendered:
    key = repr(values)
    if key not in _CACHE:
        out = chart.render(values=values, name=RELEASE, namespace="evomem")
        manifests = [
            doc
            for path, text in sorted(out.items())
            if path.endswith(".yaml")
            for doc in yaml.safe_load_all(text)
            if doc
        ]
        _CACHE[key] = Rendered(manifests, out.get("evomem/templates/NOTES.txt", ""))
    return _CACHE[key]


@pytest.fixture(scope="module", params=list(VALUE_SETS), ids=list(VALUE_SETS))
def each(request: pytest.FixtureRequest, chart: Chart) -> Rendered:
    return render(chart, VALUE_SETS[request.param])


@pytest.fixture(scope="module")
def gpu(chart: Chart) -> Rendered:
    return render(chart, {})


@pytest.fixture(scope="module")
def lite(chart: Chart) -> Rendered:
    return render(chart, VALUE_SETS["gpu.enabled=false (lite CPU)"])


def name_of(component: str) -> str:
    return f"{RELEASE}-evomem-{component}"


# ---------------------------------------------------------------------------- engine: lint, render, schemas


def test_chart_metadata_follows_the_package() -> None:
    chart = yaml.safe_load((CHART_DIR / "Chart.yaml").read_text())
    pyproject = (ROOT / "pyproject.toml").read_text()
    version = re.search(r'^version = "([^"]+)"', pyproject, re.M)
    assert version, "pyproject.toml has no version"
    assert chart["apiVersion"] == "v2"
    assert chart["appVersion"] == version.group(1), "appVersion must be the package version (pyproject.toml)"


@pytest.mark.parametrize("values", list(VALUE_SETS.values()), ids=list(VALUE_SETS))
def test_helm_lint_strict_is_clean(values: dict[str, Any]) -> None:
    report = lint(CHART_DIR, values, strict=True, kube_version=f"v{K8S_VERSION}")
    assert report["errors"] == [], report
    # Severity 1 is information ("icon is recommended"); warnings (2) and errors (3) fail.
    problems = [m for m in report["messages"] if m["severity"] >= 2]
    assert problems == [], problems


def test_every_manifest_validates_against_the_kubernetes_schemas(each: Rendered) -> None:
    assert each.manifests, "nothing rendered"
    failures = []
    for manifest in each.manifests:
        where = f"{manifest.get('kind')}/{manifest.get('metadata', {}).get('name')}"
        try:
            kubernetes_validate.validate(manifest, K8S_VERSION, strict=True)
        except kubernetes_validate.ValidationError as exc:
            failures.append(f"{where}: {'.'.join(map(str, exc.path))}: {exc.message}")
        except kubernetes_validate.SchemaNotFoundError as exc:
            failures.append(f"{where}: {exc.message}")
    assert failures == [], "\n".join(failures)


def test_the_validator_refuses_what_kubernetes_refuses(gpu: Rendered) -> None:
    """The check above can fail: an unknown field, and a GPU count that is not a quantity."""
    deployment = gpu.workloads["triton"]
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == 1
    kubernetes_validate.validate(deployment, K8S_VERSION, strict=True)

    typo = {**deployment, "spec": {**deployment["spec"], "replica": 1}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(typo, K8S_VERSION, strict=True)

    bad_gpu = yaml.safe_load(yaml.safe_dump(deployment))
    bad_gpu["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = {"count": 1}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad_gpu, K8S_VERSION, strict=True)


def test_value_sets_render_what_they_say(chart: Chart) -> None:
    counts = {name: len(render(chart, values).manifests) for name, values in VALUE_SETS.items()}
    print("\nmanifests per value set:", counts)
    assert set(render(chart, {}).workloads) == COMPONENTS
    assert set(render(chart, VALUE_SETS["gpu.enabled=false (lite CPU)"]).workloads) == COMPONENTS - GPU_COMPONENTS
    assert "redis" not in render(chart, VALUE_SETS["external Redis"]).workloads
    assert render(chart, VALUE_SETS["Ingress on"]).kind("Ingress")
    assert render(chart, VALUE_SETS["autoscaling on"]).kind("HorizontalPodAutoscaler")


def test_names_fit_kubernetes_limits_with_the_longest_release_name(chart: Chart) -> None:
    release = "r" * 53  # Helm's longest release name
    out = chart.render(values={}, name=release)
    manifests = [d for path, text in out.items() if path.endswith(".yaml") for d in yaml.safe_load_all(text) if d]
    for manifest in manifests:
        name = manifest["metadata"]["name"]
        if manifest["kind"] in {"Service", "Pod", "ConfigMap", "Deployment"}:
            assert len(name) <= 63, f"{manifest['kind']} {name}: {len(name)} characters"
        if manifest["kind"] == "StatefulSet":  # its pods' controller-revision-hash label needs room
            assert len(name) <= 52, f"StatefulSet {name}: {len(name)} characters"
        for value in manifest["metadata"].get("labels", {}).values():
            assert len(value) <= 63, f"{name}: label value {value!r}"


# ---------------------------------------------------------------------------- storage: one writer


def test_exactly_one_storage_replica_with_its_volume(each: Rendered) -> None:
    if "EVOMEM_DATABASE_URL" in each.env("storage"):
        pytest.skip("PostgreSQL: test_storage_replicas_without_state_over_postgres")
    storage = each.workloads["storage"]
    assert storage["kind"] == "StatefulSet"
    assert storage["spec"]["replicas"] == 1
    (claim,) = storage["spec"]["volumeClaimTemplates"]
    mounts = storage["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]
    assert {"name": claim["metadata"]["name"], "mountPath": "/data"} in mounts
    assert each.env("storage")["EVOMEM_DB"]["value"].startswith("/data/")
    # Storage and Redis keep data; every other component is stateless.
    for component, workload in each.workloads.items():
        claims = workload["spec"].get("volumeClaimTemplates", [])
        assert bool(claims) == (component in {"storage", "redis", "postgres"}), component
        if component in {"gateway", "cronista", "linker", "worker"}:
            volumes = workload["spec"]["template"]["spec"].get("volumes", [])
            assert all("persistentVolumeClaim" not in v for v in volumes), component


def test_two_storage_replicas_are_refused_over_the_sqlite_file(chart: Chart) -> None:
    with pytest.raises(HelmError) as caught:
        chart.render(values={"storage": {"replicas": 2}}, name=RELEASE)
    assert "storage.replicas above 1 needs database.enabled=true" in str(caught.value)
    with pytest.raises(HelmError) as caught:
        chart.render(values={"database": {"enabled": True}, "storage": {"replicas": 2}}, name=RELEASE)
    assert "set database.existingSecret" in str(caught.value)


def test_storage_replicas_without_state_over_postgres(chart: Chart) -> None:
    """Two storage replicas over an external database whose URL is in an existing Secret: a
    Deployment without a volume, the URL from the Secret (never in a ConfigMap), a PDB."""
    pg = render(chart, VALUE_SETS["PostgreSQL, 2 storage replicas"])
    storage = pg.workloads["storage"]
    assert (storage["kind"], storage["spec"]["replicas"]) == ("Deployment", 2)
    assert "volumeClaimTemplates" not in storage["spec"]
    env = pg.env("storage")
    assert env["EVOMEM_DATABASE_URL"] == {"valueFrom": {"secretKeyRef": {"name": "evomem-db", "key": "url"}}}
    assert "EVOMEM_DB" not in env
    (pdb,) = [p for p in pg.kind("PodDisruptionBudget") if p["metadata"]["name"] == name_of("storage")]
    assert pdb["spec"]["minAvailable"] == 1
    assert "postgres" not in pg.workloads  # the database is the user's
    trial = render(chart, VALUE_SETS["bundled PostgreSQL (trial)"])
    postgres = trial.workloads["postgres"]
    assert postgres["kind"] == "StatefulSet" and postgres["spec"]["replicas"] == 1
    url = trial.env("storage")["EVOMEM_DATABASE_URL"]["valueFrom"]["secretKeyRef"]
    assert url == {"name": f"{RELEASE}-evomem", "key": "database-url"}
    secret = trial.named("Secret", f"{RELEASE}-evomem")["data"]
    decoded = base64.b64decode(secret["database-url"]).decode()
    assert decoded.startswith("postgresql://evomem:") and decoded.endswith(f"@{name_of('postgres')}:5432/evomem")
    policy = trial.named("NetworkPolicy", name_of("postgres"))
    (rule,) = policy["spec"]["ingress"]
    assert rule["ports"] == [{"port": 5432, "protocol": "TCP"}]
    assert [f["podSelector"]["matchLabels"]["app.kubernetes.io/component"] for f in rule["from"]] == ["storage"]


# ---------------------------------------------------------------------------- GPUs


def gpu_requests(spec: dict[str, Any]) -> list[str]:
    found = []
    for container in spec.get("initContainers", []) + spec["containers"]:
        for part in ("requests", "limits"):
            for resource in container.get("resources", {}).get(part, {}):
                if "gpu" in resource:
                    found.append(f"{container['name']} {part} {resource}")
    return found


def test_gpus_only_on_triton_and_llm(gpu: Rendered) -> None:
    specs = gpu.pod_specs()
    for component, spec in specs.items():
        if component in GPU_COMPONENTS:
            (container,) = spec["containers"]
            assert container["resources"]["limits"]["nvidia.com/gpu"] == 1, component
            assert spec["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
            assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in spec["tolerations"]
        else:
            assert gpu_requests(spec) == [], component
            assert "nvidia.com/gpu.present" not in spec.get("nodeSelector", {}), component


def test_no_gpu_at_all_in_the_lite_deployment(lite: Rendered) -> None:
    for component, spec in lite.pod_specs().items():
        assert gpu_requests(spec) == [], component
        assert not spec.get("tolerations"), component
    assert not any(m["metadata"]["name"].startswith((name_of("triton"), name_of("llm"))) for m in lite.manifests)
    assert lite.env("cronista")["EVOMEM_CRONISTA_BACKEND"]["value"] == "lite"
    assert "EVOMEM_TRITON_URL" not in lite.env("cronista")
    assert lite.env("linker")["EVOMEM_LINKER"]["value"] == "scored"


def test_gpu_deployment_links_with_the_llm_server(gpu: Rendered) -> None:
    env = gpu.env("linker")
    assert env["EVOMEM_LINKER"]["value"] == "llm"
    assert env["EVOMEM_LINKER_BASE_URL"]["value"] == f"http://{name_of('llm')}:8080/v1"
    server = gpu.workloads["llm"]["spec"]["template"]["spec"]["containers"][0]
    args = server["args"]
    assert args[args.index("--alias") + 1] == env["EVOMEM_LINKER_MODEL"]["value"]
    assert args[args.index("--port") + 1] == "8080"
    assert gpu.env("gateway")["EVOMEM_AUTO_SUPERSEDE"]["value"] == "llm"
    # The cronista runs the model on the chart's Triton (lite only when Triton cannot answer).
    cronista = gpu.env("cronista")
    assert cronista["EVOMEM_CRONISTA_BACKEND"]["value"] == "triton"
    assert cronista["EVOMEM_TRITON_URL"]["value"] == f"{name_of('triton')}:8001"


def test_model_servers_load_from_a_volume_and_probe_their_health(gpu: Rendered, chart: Chart) -> None:
    triton = gpu.workloads["triton"]["spec"]["template"]["spec"]
    (server,) = triton["containers"]
    assert server["image"].startswith("nvcr.io/nvidia/tritonserver:")
    assert server["readinessProbe"]["httpGet"]["path"] == "/v2/health/ready"
    assert server["startupProbe"]["httpGet"]["path"] == "/v2/health/ready"
    startup = server["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 300, "model load needs minutes, not seconds"
    volumes = {v["name"]: v for v in triton["volumes"]}
    assert volumes["models"]["persistentVolumeClaim"]["claimName"] == f"{name_of('triton')}-models"
    assert gpu.named("PersistentVolumeClaim", f"{name_of('triton')}-models")

    llm = gpu.workloads["llm"]["spec"]["template"]["spec"]
    (server,) = llm["containers"]
    assert server["image"].startswith("ghcr.io/ggml-org/llama.cpp:server-cuda-")
    assert server["readinessProbe"]["httpGet"]["path"] == "/health"
    startup = server["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 300
    assert server["args"][server["args"].index("--model") + 1] == "/models/linker.gguf"
    assert {v["name"]: v for v in llm["volumes"]}["model"]["persistentVolumeClaim"]["readOnly"] is True

    # From an image: an init container copies the repository into an emptyDir.
    from_image = render(chart, VALUE_SETS["custom images"]).workloads["triton"]["spec"]["template"]["spec"]
    (init,) = from_image["initContainers"]
    assert init["image"] == "registry.example.com/team/evomem-models:2026.12.1"
    assert "emptyDir" in {v["name"]: v for v in from_image["volumes"]}["models"]


# ---------------------------------------------------------------------------- pods: security, resources, probes


def test_every_pod_is_locked_down(each: Rendered) -> None:
    for component, spec in each.pod_specs().items():
        pod = spec["securityContext"]
        assert spec["automountServiceAccountToken"] is False, component
        assert pod["runAsNonRoot"] is True and pod["runAsUser"] > 0, component
        assert pod["seccompProfile"] == {"type": "RuntimeDefault"}, component
        for container in spec.get("initContainers", []) + spec["containers"]:
            where = f"{component}/{container['name']}"
            sc = container["securityContext"]
            assert sc["readOnlyRootFilesystem"] is True, where
            assert sc["allowPrivilegeEscalation"] is False, where
            assert sc["capabilities"]["drop"] == ["ALL"] and "add" not in sc["capabilities"], where
            assert sc.get("runAsNonRoot", pod["runAsNonRoot"]) is True, where
            assert sc.get("runAsUser", pod["runAsUser"]) != 0, where
            assert sc["seccompProfile"] == {"type": "RuntimeDefault"}, where
            assert not sc.get("privileged"), where
    for account in each.kind("ServiceAccount"):
        assert account["automountServiceAccountToken"] is False


def test_every_container_has_resources(each: Rendered) -> None:
    for component, spec in each.pod_specs().items():
        for container in spec.get("initContainers", []) + spec["containers"]:
            resources = container["resources"]
            where = f"{component}/{container['name']}"
            assert {"cpu", "memory"} <= set(resources["requests"]), where
            assert "memory" in resources["limits"], where


def test_every_container_has_probes_and_grpc_services_use_grpc_probes(each: Rendered) -> None:
    for component, workload in each.workloads.items():
        for container in workload["spec"]["template"]["spec"]["containers"]:
            where = f"{component}/{container['name']}"
            for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
                assert probe in container, f"{where} has no {probe}"
            if component in GRPC_SERVICES:
                ports = {p["name"]: p["containerPort"] for p in container["ports"]}
                # The cronista's probes ask for the server's overall status "": its service name
                # is NOT_SERVING while it extracts through its lite fallback (degraded, alive).
                service = "" if component == "cronista" else GRPC_SERVICES[component]
                for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
                    assert container[probe]["grpc"] == {"port": ports["grpc"], "service": service}


IMAGE = re.compile(r"^(?P<repo>[^@\s]+?)(?::(?P<tag>[\w][\w.-]*))?(?:@(?P<digest>sha256:[0-9a-f]{64}))?$")


def test_image_tags_are_pinned(each: Rendered) -> None:
    for component, spec in each.pod_specs().items():
        for container in spec.get("initContainers", []) + spec["containers"]:
            image = container["image"]
            match = IMAGE.match(image)
            assert match, f"{component}: {image!r} is not an image reference"
            pinned = match["digest"] or (match["tag"] and match["tag"] != "latest" and re.search(r"\d", match["tag"]))
            assert pinned, f"{component}: {image!r} has no pinned tag or digest"


def test_evomem_image_defaults_to_the_app_version(gpu: Rendered) -> None:
    app_version = yaml.safe_load((CHART_DIR / "Chart.yaml").read_text())["appVersion"]
    for component in ("gateway", "storage", "cronista", "linker", "worker"):
        container = gpu.workloads[component]["spec"]["template"]["spec"]["containers"][0]
        assert container["image"] == f"evomem:{app_version}"


def test_custom_images_are_used(chart: Chart) -> None:
    specs = render(chart, VALUE_SETS["custom images"]).pod_specs()
    image = {c: s["containers"][0]["image"] for c, s in specs.items()}
    assert image["gateway"] == image["storage"] == image["test"] == "registry.example.com/team/evomem:0.3.0-rc1"
    assert image["redis"] == "mirror.example.com/redis:7.2.5"
    assert image["triton"] == "mirror.example.com/nvidia/tritonserver:24.12-py3"
    assert image["llm"] == "mirror.example.com/ggml-org/llama.cpp@sha256:" + "a" * 64


# ---------------------------------------------------------------------------- NetworkPolicy


def selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    assert set(selector) <= {"matchLabels"}, f"only matchLabels selectors are used: {selector}"
    return all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items())


def pod_labels(rendered: Rendered) -> dict[str, dict[str, str]]:
    out = {c: w["spec"]["template"]["metadata"]["labels"] for c, w in rendered.workloads.items()}
    for pod in rendered.kind("Pod"):
        out[pod["metadata"]["labels"]["app.kubernetes.io/component"]] = pod["metadata"]["labels"]
    return out


def callers_by_address(rendered: Rendered) -> dict[str, set[str]]:
    """Who calls whom, read from the variables: a component calls X when one of its values names X's Service."""
    services = {
        s["metadata"]["name"]: s["metadata"]["labels"]["app.kubernetes.io/component"] for s in rendered.kind("Service")
    }
    secrets = {s["metadata"]["name"]: s.get("data", {}) for s in rendered.kind("Secret")}
    calls: dict[str, set[str]] = {c: set() for c in rendered.workloads}
    for component in rendered.workloads:
        for entry in rendered.env(component).values():
            value = str(entry.get("value", ""))
            ref = entry.get("valueFrom", {}).get("secretKeyRef")
            if ref and ref["key"] in secrets.get(ref["name"], {}):  # a URL kept in the release's Secret
                value = base64.b64decode(secrets[ref["name"]][ref["key"]]).decode()
            for host in re.findall(r"(?:^|//|@)([a-z0-9-]+):\d+", value):
                if host in services:
                    calls[services[host]].add(component)
    return calls


def test_network_policies_select_their_pods_and_admit_only_their_callers(each: Rendered) -> None:
    labels = pod_labels(each)
    policies = {p["metadata"]["name"]: p["spec"] for p in each.kind("NetworkPolicy")}
    default_deny = policies.pop(f"{RELEASE}-evomem-default-deny")
    assert default_deny["policyTypes"] == ["Ingress"] and "ingress" not in default_deny
    assert all(selects(default_deny["podSelector"], pod) for pod in labels.values()), "a pod escapes the default deny"

    expected = callers_by_address(each)  # the cronista calls Triton at EVOMEM_TRITON_URL
    policy_of = {}
    for name, spec in policies.items():
        targets = {c for c, pod in labels.items() if selects(spec["podSelector"], pod)}
        assert len(targets) == 1 and name == name_of(next(iter(targets))), f"{name} selects {targets}"
        policy_of[next(iter(targets))] = spec
    assert set(policy_of) == set(each.workloads), "every component has its NetworkPolicy"

    for component, spec in policy_of.items():
        ports = {
            p["containerPort"] for p in each.workloads[component]["spec"]["template"]["spec"]["containers"][0]["ports"]
        }
        admitted: set[str] = set()
        for rule in spec.get("ingress", []):
            assert {p["port"] for p in rule["ports"]} <= ports, f"{component} admits a port it does not listen on"
            peers = rule.get("from")
            if component == "gateway":
                continue
            assert peers, f"{component} is open to every source"
            for peer in peers:
                release_pods = peer.get("podSelector", {}).get("matchLabels", {}).get("app.kubernetes.io/instance")
                if release_pods == RELEASE and "namespaceSelector" not in peer:
                    matched = {c for c, pod in labels.items() if selects(peer["podSelector"], pod)}
                    assert len(matched) == 1, f"{component}: a peer selects {matched}"
                    admitted |= matched
                else:  # a peer outside the release (networkPolicy.metricsFrom): metrics only
                    assert {p["port"] for p in rule["ports"]} <= METRICS_PORTS, f"{component} admits {peer}"
        assert admitted == expected[component], f"{component} admits {admitted}, its callers are {expected[component]}"


def test_only_the_gateway_is_reachable_from_outside(gpu: Rendered, chart: Chart) -> None:
    gateway = next(p for p in gpu.kind("NetworkPolicy") if p["metadata"]["name"] == name_of("gateway"))
    (rule,) = gateway["spec"]["ingress"]
    assert "from" not in rule and rule["ports"] == [{"port": 8765, "protocol": "TCP"}]
    # Narrowed to the ingress controller's namespace, the helm test still gets in.
    narrowed = render(chart, VALUE_SETS["Ingress on"])
    gateway = next(p for p in narrowed.kind("NetworkPolicy") if p["metadata"]["name"] == name_of("gateway"))
    peers = gateway["spec"]["ingress"][0]["from"]
    assert peers[0] == VALUE_SETS["Ingress on"]["networkPolicy"]["gatewayFrom"][0]
    assert selects(peers[1]["podSelector"], pod_labels(narrowed)["test"])
    for service in gpu.kind("Service"):
        assert service["spec"].get("type", "ClusterIP") == "ClusterIP", service["metadata"]["name"]


# ---------------------------------------------------------------------------- configuration and secrets


def test_every_variable_the_chart_sets_is_a_setting(chart: Chart) -> None:
    from evomem.settings import env_names  # the settings model: every EVOMEM_* variable it reads

    known = env_names()
    unknown: dict[str, set[str]] = {}
    for name, values in VALUE_SETS.items():
        rendered = render(chart, values)
        for component, spec in rendered.pod_specs().items():
            for container in spec["containers"]:
                if not container["image"].split("@")[0].rsplit(":", 1)[0].endswith("evomem"):
                    continue  # Redis, Triton and llama.cpp read their own flags
                for variable in container_env(rendered, container):
                    if variable not in known and variable not in NOT_SETTINGS:
                        unknown.setdefault(variable, set()).add(f"{component} ({name})")
    assert unknown == {}, f"set by the chart, read by no setting: {unknown}"


def test_pods_roll_when_their_configuration_changes(chart: Chart, gpu: Rendered) -> None:
    changed = render(chart, {"config": {"logLevel": "DEBUG"}})
    for component in ("gateway", "storage", "cronista", "linker", "worker"):
        before = gpu.workloads[component]["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
        after = changed.workloads[component]["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
        assert before != after, component
        assert changed.env(component)["EVOMEM_LOG_LEVEL"]["value"] == "DEBUG"
    keyed = render(chart, VALUE_SETS["custom images"])
    before = gpu.workloads["linker"]["spec"]["template"]["metadata"]["annotations"]["checksum/secret"]
    assert keyed.workloads["linker"]["spec"]["template"]["metadata"]["annotations"]["checksum/secret"] != before


def test_external_redis_comes_from_the_secret(chart: Chart) -> None:
    rendered = render(chart, VALUE_SETS["external Redis"])
    url = VALUE_SETS["external Redis"]["redis"]["external"]["url"]
    secret = rendered.named("Secret", f"{RELEASE}-evomem")
    assert base64.b64decode(secret["data"]["redis-url"]).decode() == url
    for component in ("gateway", "worker"):
        ref = rendered.env(component)["EVOMEM_REDIS_URL"]["valueFrom"]["secretKeyRef"]
        assert ref == {"name": f"{RELEASE}-evomem", "key": "redis-url"}
    assert all(url not in yaml.safe_dump(m) for m in rendered.kind("ConfigMap")), "the URL holds a password"


def test_an_existing_secret_replaces_the_charts(chart: Chart) -> None:
    rendered = render(chart, VALUE_SETS["existing Secret"])
    assert rendered.kind("Secret") == []
    assert rendered.env("linker")["EVOMEM_LINKER_API_KEY"]["valueFrom"]["secretKeyRef"] == {
        "name": "evomem-prod",
        "key": "linker-api-key",
        "optional": True,
    }
    assert rendered.env("worker")["EVOMEM_REDIS_URL"]["valueFrom"]["secretKeyRef"]["name"] == "evomem-prod"


def test_ingress_and_autoscaler_target_the_gateway(chart: Chart) -> None:
    rendered = render(chart, VALUE_SETS["Ingress on"])
    (ingress,) = rendered.kind("Ingress")
    (rule,) = ingress["spec"]["rules"]
    backend = rule["http"]["paths"][0]["backend"]["service"]
    service = rendered.named("Service", backend["name"])
    assert backend["port"]["name"] in {p["name"] for p in service["spec"]["ports"]}
    assert service["spec"]["selector"] == rendered.workloads["gateway"]["spec"]["selector"]["matchLabels"]
    assert ingress["spec"]["tls"] == [{"secretName": "evomem-tls", "hosts": ["evomem.example.com"]}]
    assert "https://evomem.example.com/mcp" in rendered.notes

    scaled = render(chart, VALUE_SETS["autoscaling on"])
    (hpa,) = scaled.kind("HorizontalPodAutoscaler")
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": name_of("gateway")}
    assert hpa["spec"]["minReplicas"] == 3
    assert "replicas" not in scaled.workloads["gateway"]["spec"], "the autoscaler owns the replica count"


def test_gateway_is_highly_available(each: Rendered) -> None:
    gateway = each.workloads["gateway"]
    assert gateway["kind"] == "Deployment"
    assert gateway["spec"].get("replicas", 2) >= 2
    pdb = each.named("PodDisruptionBudget", name_of("gateway"))
    assert pdb["spec"]["selector"] == gateway["spec"]["selector"]
    assert pdb["spec"]["minAvailable"] >= 1


# ---------------------------------------------------------------------------- bad values


@pytest.mark.parametrize(
    ("values", "where", "says"),
    [
        ({"storage": {"replicas": 0}}, "/storage/replicas", "minimum: got 0, want 1"),
        ({"gateway": {"replicas": "two"}}, "/gateway/replicas", "got string, want integer"),
        ({"gateway": {"replicas": 1}}, "/gateway/replicas", "minimum: got 1, want 2"),
        ({"gpu": {"enabled": "yes"}}, "/gpu/enabled", "got string, want boolean"),
        ({"cronista": {"backend": "gpu"}}, "/cronista/backend", "value must be one of"),
        ({"cronista": {"triton": {"timeoutMs": 0}}}, "/cronista/triton/timeoutMs", "minimum: got 0, want 1"),
        ({"linker": {"mode": "magic"}}, "/linker/mode", "value must be one of"),
        ({"config": {"vectors": "sometimes"}}, "/config/vectors", "value must be one of"),
        ({"image": {"tag": "latest"}}, "/image/tag", "'latest' does not match pattern"),
        ({"storage": {"replica": 1}}, "/storage", "additional properties 'replica' not allowed"),
        ({"podSecurityContext": {"runAsNonRoot": False}}, "/podSecurityContext/runAsNonRoot", "value must be true"),
        ({"containerSecurityContext": {"readOnlyRootFilesystem": False}}, "readOnlyRootFilesystem", "must be true"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_bad_values_fail_with_a_clear_schema_error(chart: Chart, values: dict[str, Any], where: str, says: str) -> None:
    with pytest.raises(HelmError) as caught:
        chart.render(values=values, name=RELEASE)
    message = str(caught.value)
    assert "values don't meet the specifications of the schema" in message
    assert where in message and says in message, message


@pytest.mark.parametrize(
    ("values", "says"),
    [
        ({"gpu": {"enabled": False}, "linker": {"mode": "llm"}}, "set linker.llm.baseUrl"),
        ({"redis": {"enabled": False}}, "/redis/external/url"),
        ({"gpu": {"enabled": False}, "cronista": {"backend": "triton"}}, "set cronista.triton.url"),
    ],
    ids=["llm linker without a GPU or an endpoint", "no Redis at all", "triton cronista without a GPU or a server"],
)
def test_inconsistent_values_fail_with_a_message(chart: Chart, values: dict[str, Any], says: str) -> None:
    with pytest.raises(HelmError) as caught:
        chart.render(values=values, name=RELEASE)
    assert says in str(caught.value)


def test_llm_linker_on_an_external_endpoint_without_a_gpu(chart: Chart) -> None:
    values = {"gpu": {"enabled": False}, "linker": {"mode": "llm", "llm": {"baseUrl": "http://llm.example:8080/v1"}}}
    env = render(chart, values).env("linker")
    assert env["EVOMEM_LINKER"]["value"] == "llm"
    assert env["EVOMEM_LINKER_BASE_URL"]["value"] == "http://llm.example:8080/v1"


# ---------------------------------------------------------------------------- parity with compose.gpu.yaml


def compose_services() -> dict[str, dict[str, Any]]:
    return yaml.safe_load(COMPOSE_GPU.read_text())["services"]


def compose_ports(services: dict[str, dict[str, Any]]) -> dict[str, set[int]]:
    """The ports each compose service listens on: expose, published targets, *_PORT values, and
    the addresses the other services call it at."""
    ports: dict[str, set[int]] = {name: set() for name in services}
    for name, service in services.items():
        ports[name] |= {int(p) for p in service.get("expose", [])}
        ports[name] |= {int(str(p).rsplit(":", 1)[-1]) for p in service.get("ports", [])}
        for key, value in (service.get("environment") or {}).items():
            if key.endswith("_PORT") and str(value).isdigit():
                ports[name].add(int(value))
            for host, port in re.findall(r"(?:^|//)([a-z0-9-]+):(\d+)", str(value)):
                if host in services:
                    ports[host].add(int(port))
    return ports


def compose_health(service: dict[str, Any]) -> str:
    return " ".join(str(part) for part in service["healthcheck"]["test"])


def chart_health(container: dict[str, Any]) -> str:
    probe = container["readinessProbe"]
    if "grpc" in probe:
        return f"grpc {probe['grpc']['port']} {probe['grpc']['service']}"
    if "httpGet" in probe:
        port = probe["httpGet"]["port"]
        number = (
            next(p["containerPort"] for p in container["ports"] if p["name"] == port) if isinstance(port, str) else port
        )
        return f"{number}{probe['httpGet']['path']}"
    return " ".join(probe["exec"]["command"])


def test_chart_and_compose_gpu_have_the_same_components_ports_and_variables(gpu: Rendered) -> None:
    services = compose_services()
    assert set(services) == set(gpu.workloads) == COMPONENTS
    ports = compose_ports(services)
    for component, workload in gpu.workloads.items():
        (container,) = workload["spec"]["template"]["spec"]["containers"]
        chart_ports = {p["containerPort"] for p in container.get("ports", [])}
        assert chart_ports == ports[component], f"{component}: chart {chart_ports}, compose {ports[component]}"
        compose_env = set(services[component].get("environment") or {})
        assert set(gpu.env(component)) == compose_env, f"{component}: the variables differ"


def test_chart_and_compose_gpu_check_the_same_health(gpu: Rendered) -> None:
    services = compose_services()
    for component, workload in gpu.workloads.items():
        (container,) = workload["spec"]["template"]["spec"]["containers"]
        probe = chart_health(container)
        check = compose_health(services[component])
        if component == "cronista":
            # The server's overall status: degraded (Triton down, lite fallback) is NOT_SERVING
            # for the service name only, and must not restart the pod or take it out of service.
            assert probe == "grpc 50052 " and "grpc 50052 evomem.v1.CronistaService" in check, (probe, check)
        elif probe.startswith("grpc "):
            assert probe in check.replace("/opt/evomem/bin/evomem-healthcheck ", ""), (component, probe, check)
        elif "redis-cli ping" in probe:
            assert "redis-cli ping" in check
        elif "evomem-healthcheck worker" in probe:
            assert check.endswith("evomem-healthcheck worker")
        else:
            assert f"127.0.0.1:{probe}" in check or probe.split("/", 1)[1] in check, (component, probe, check)


def test_only_triton_and_llm_reserve_a_gpu_in_compose() -> None:
    for name, service in compose_services().items():
        devices = service.get("deploy", {}).get("resources", {}).get("reservations", {}).get("devices", [])
        gpus = [d for d in devices if "gpu" in d.get("capabilities", [])]
        assert bool(gpus) == (name in GPU_COMPONENTS), name


def test_compose_gpu_pins_images_and_orders_start_up_by_health() -> None:
    services = compose_services()
    for name in GPU_COMPONENTS:
        image = re.sub(r"\$\{[A-Z_]+:-(.+)\}", r"\1", services[name]["image"])
        tag = image.rsplit(":", 1)[-1]
        assert tag != "latest" and re.search(r"\d", tag), f"{name}: {services[name]['image']}"
        assert services[name]["image"].startswith("${"), f"{name}: the image is not overridable"
        period = services[name]["healthcheck"]["start_period"]
        assert int(period.rstrip("s")) >= 300, f"{name}: start_period {period} is too short for a model load"
    assert services["linker"]["depends_on"]["llm"] == {"condition": "service_healthy"}
    assert services["cronista"]["depends_on"]["triton"] == {"condition": "service_healthy"}
    env = services["linker"]["environment"]
    assert "llm" in env["EVOMEM_LINKER"] and "http://llm:8080/v1" in env["EVOMEM_LINKER_BASE_URL"]


# ---------------------------------------------------------------------------- README, NOTES and helm test


def test_chart_readme_tables_are_up_to_date() -> None:
    readme = (CHART_DIR / "README.md").read_text(encoding="utf-8")
    values = (CHART_DIR / "values.yaml").read_text(encoding="utf-8")
    assert helm_readme.render_readme(readme, values) == readme, "run: python scripts/helm_readme.py"


def test_readme_generator_refuses_an_undocumented_value() -> None:
    values = (CHART_DIR / "values.yaml").read_text(encoding="utf-8")
    undocumented = values.replace("  ## @param worker.sweepIntervalS ", "  ## (no longer described) ")
    with pytest.raises(helm_readme.ValuesDocError, match=r"worker\.sweepIntervalS has no ## @param line"):
        helm_readme.parse(undocumented)
    with pytest.raises(helm_readme.ValuesDocError, match=r"## @param worker\.nothing names no value"):
        helm_readme.parse(values + "\n## @param worker.nothing A value that does not exist\n")


def test_notes_say_how_to_reach_the_gateway(gpu: Rendered, lite: Rendered) -> None:
    assert f"port-forward svc/{name_of('gateway')} 8765:8765" in gpu.notes
    assert "claude mcp add --transport http evomem http://127.0.0.1:8765/mcp" in gpu.notes
    assert f"helm test {RELEASE}" in gpu.notes
    assert "Lite CPU deployment" in lite.notes and "Triton" in gpu.notes


def load_ledger_story() -> Any:
    spec = importlib.util.spec_from_file_location("ledger_story", CHART_DIR / "files" / "ledger_story.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_helm_test_pod_runs_the_ledger_story_against_the_gateway(gpu: Rendered) -> None:
    (pod,) = gpu.kind("Pod")
    assert pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    (container,) = pod["spec"]["containers"]
    assert container["command"] == ["python", "/scripts/ledger_story.py"]
    assert container["args"][0] == f"http://{name_of('gateway')}:8765/mcp"
    config = gpu.named("ConfigMap", name_of("test"))
    assert config["data"]["ledger_story.py"] == (CHART_DIR / "files" / "ledger_story.py").read_text()


def test_the_ledger_story_passes_against_the_real_tools(service: MemoryService) -> None:
    """The helm test's script, run here against the MCP tools the gateway serves (in process)."""
    story = load_ledger_story()
    server = build_mcp_server(lambda: service)
    anyio.run(story.story, server, 30.0)
    # It cleaned up after itself: its notes are purged.
    stats = service.stats(None)
    assert stats.purged == 2 and stats.by_status.get("active", 0) == 0, stats


def test_the_ledger_story_fails_when_no_gateway_answers(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    assert load_ledger_story().main([f"http://127.0.0.1:{port}/mcp", "5"]) == 1
    assert capsys.readouterr().out.startswith("FAIL ")


def test_gateway_takes_tokens_and_every_service_the_grpc_secret_from_the_secret(gpu: Rendered) -> None:
    """Issue 14: no MCP call without a token, no gRPC call without the shared secret."""
    import hashlib
    import tomllib

    secret = gpu.named("Secret", f"{RELEASE}-evomem")["data"]
    grpc_secret = base64.b64decode(secret["grpc-secret"]).decode()
    assert len(base64.b64decode(secret["metrics-token"]).decode()) >= 32
    test_token = base64.b64decode(secret["test-token"]).decode()
    assert len(grpc_secret) >= 32 and len(test_token) >= 32
    tokens = tomllib.loads(base64.b64decode(secret["tokens.toml"]).decode())["tokens"]
    assert [(t["name"], t["role"]) for t in tokens] == [("helm-test", "admin")]
    assert tokens[0]["sha256"] == hashlib.sha256(test_token.encode()).hexdigest()
    for component in ("gateway", "storage", "cronista", "linker", "worker"):
        env = gpu.env(component)
        assert env["EVOMEM_GRPC_SECRET_FILE"]["value"] == "/run/secrets/evomem/grpc-secret"
        assert env["EVOMEM_GRPC_HOST"]["value"] == "0.0.0.0"
        pod = gpu.workloads[component]["spec"]["template"]["spec"]
        (volume,) = [v for v in pod["volumes"] if v["name"] == "secrets"]
        keys = {i["key"] for i in volume["secret"]["items"]}
        shared = {"grpc-secret", "metrics-token"}
        assert keys == (shared | {"tokens.toml"} if component == "gateway" else shared), component
        assert env["EVOMEM_METRICS_TOKEN_FILE"]["value"] == "/run/secrets/evomem/metrics-token"
    assert gpu.env("gateway")["EVOMEM_AUTH_FILE"]["value"] == "/run/secrets/evomem/tokens.toml"
    assert f"{RELEASE}-evomem-gateway:*" in gpu.env("gateway")["EVOMEM_ALLOWED_HOSTS"]["value"]
