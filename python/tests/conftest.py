"""The bundled control plane (kube-apiserver and etcd from testenv/), started
once for the test session, and helpers to write to it with the official
client."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest
from kubernetes import client, config

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class ControlPlane:
    """A running control plane: its kubeconfigs by user (``admin``, and
    ``alice`` and ``bob`` with no permissions)."""

    kubeconfigs: dict[str, str]
    data_dir: Path

    def api(self, user: str = "admin") -> client.ApiClient:
        """An official-client ``ApiClient`` acting as ``user``."""
        api: client.ApiClient = config.new_client_from_config(config_file=self.kubeconfigs[user])  # type: ignore[no-untyped-call]
        return api


def _testenv_binary() -> Path:
    explicit = os.environ.get("KDI_TESTENV_BIN")
    if explicit:
        return Path(explicit)
    built = subprocess.run(
        [str(ROOT / "scripts" / "testenv"), "build"],
        check=True,
        capture_output=True,
        text=True,
    )
    return Path(built.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def control_plane() -> Iterator[ControlPlane]:
    binary = _testenv_binary()
    with tempfile.TemporaryDirectory(prefix="kdi-pytest-") as tmp:
        data = Path(tmp) / "data"
        log = Path(tmp) / "testenv.log"
        process = subprocess.Popen(
            [
                str(binary),
                "--data-dir",
                str(data),
                "--log-file",
                str(log),
                "--exit-on-stdin-close",
                # Old resourceVersions expire quickly: a watch resumed from
                # one gets 410 Gone.
                "--etcd-compaction-interval",
                "2s",
                # Pod templates bypass the server's watch cache: a watch from
                # a compacted resourceVersion gets 410 Gone from etcd.
                "--apiserver-arg=--watch-cache-sizes=podtemplates#0",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert process.stdout is not None
        ready: dict[str, Any] | None = None
        for line in process.stdout:
            if '"ready":true' in line:
                ready = json.loads(line)
                break
        if ready is None:
            process.wait(timeout=30)
            tail = log.read_text()[-2000:] if log.exists() else ""
            pytest.fail(f"testenv exited before it was ready:\n{tail}")
        try:
            yield ControlPlane(kubeconfigs=ready["kubeconfigs"], data_dir=data)
        finally:
            assert process.stdin is not None
            process.stdin.close()
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@pytest.fixture()
def admin(control_plane: ControlPlane) -> str:
    """The admin's kubeconfig path."""
    return control_plane.kubeconfigs["admin"]


def wait_until(what: str, condition: Callable[[], bool], timeout: float = 30.0) -> None:
    """Waits until ``condition()`` holds, failing with ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.05)


def unique(prefix: str) -> str:
    """``prefix`` and a random suffix: a name no other test uses."""
    return f"{prefix}-{secrets.token_hex(3)}"


def widget_crd(group: str) -> dict[str, Any]:
    """A namespaced ``Widget`` CRD in ``group`` (short name ``wdg``)."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {
                "plural": "widgets",
                "singular": "widget",
                "kind": "Widget",
                "listKind": "WidgetList",
                "shortNames": ["wdg"],
            },
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                            },
                        }
                    },
                }
            ],
        },
    }


def install_crd(api: client.ApiClient, group: str) -> None:
    """Creates the Widget CRD of ``group`` and waits until it is served."""
    client.ApiextensionsV1Api(api).create_custom_resource_definition(body(widget_crd(group)))
    objects = client.CustomObjectsApi(api)

    def served() -> bool:
        try:
            objects.list_cluster_custom_object(group, "v1", "widgets")
            return True
        except client.ApiException:
            return False

    wait_until(f"widgets.{group} to be served", served)


def namespace(api: client.ApiClient) -> str:
    """Creates a fresh namespace and returns its name."""
    name = unique("py")
    client.CoreV1Api(api).create_namespace(body({"metadata": {"name": name}}))
    return name


def widget(name: str, node: str, app: str = "web", **spec: Any) -> dict[str, Any]:
    """A Widget body."""
    return {
        "apiVersion": "",  # set by create_widget
        "kind": "Widget",
        "metadata": {"name": name, "labels": {"app": app}},
        "spec": {"nodeName": node, **spec},
    }


def create_widget(api: client.ApiClient, group: str, ns: str, body: dict[str, Any]) -> dict[str, Any]:
    """Creates a Widget; returns what the server returned."""
    body = {**body, "apiVersion": f"{group}/v1"}
    created = client.CustomObjectsApi(api).create_namespaced_custom_object(group, "v1", ns, "widgets", body)
    return cast(dict[str, Any], created)


def body(value: dict[str, Any]) -> Any:
    """A dict as a request body: the official client takes dicts where its
    types say models."""
    return value
