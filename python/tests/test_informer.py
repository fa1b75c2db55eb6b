"""Informers against the bundled control plane: reads, indexes, handlers,
waits, warm restarts and errors, as a Python program uses them."""

from __future__ import annotations

import asyncio
import os
import platform
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from kubernetes import client

import kube_dynamic_informer as kdi
from kube_dynamic_informer import _memory
from conftest import ControlPlane, body, create_widget, install_crd, namespace, unique, wait_until, widget


class Widgets:
    """A Widget CRD of its own group, a namespace with four Widgets in it."""

    def __init__(self, control_plane: ControlPlane) -> None:
        self.api = control_plane.api()
        self.kubeconfig = control_plane.kubeconfigs["admin"]
        self.group = f"{unique('t')}.kdi-py.example.com"
        install_crd(self.api, self.group)
        self.ns = namespace(self.api)
        self.created = [
            create_widget(self.api, self.group, self.ns, widget(f"w{i}", node=f"node-{i % 2}", app="web" if i < 3 else "db", tags=[f"t{i}", "all"]))
            for i in range(4)
        ]

    @property
    def resource(self) -> str:
        return f"widgets.{self.group}"


@pytest.fixture(scope="module")
def widgets(control_plane: ControlPlane) -> Widgets:
    return Widgets(control_plane)


@pytest.fixture(params=["compact", "objects"])
def factory(request: pytest.FixtureRequest, widgets: Widgets) -> Iterator[kdi.Factory]:
    with kdi.Factory(widgets.kubeconfig, storage=request.param) as factory:
        yield factory


def test_reads_come_from_the_cache(factory: kdi.Factory, widgets: Widgets) -> None:
    informer = factory.informer(widgets.resource, indexes={"node": "spec.nodeName"})
    informer.add_index("tag", "spec.tags")
    factory.start()
    informer.wait_for_sync(timeout=60)
    assert informer.has_synced
    # The status follows the cache's first list within moments.
    wait_until("the status to say synced", lambda: informer.status.synced and informer.status.name == "synced")

    assert len(informer) == 4
    assert sorted(informer.keys()) == [f"{widgets.ns}/w{i}" for i in range(4)]
    w0 = informer.get(f"{widgets.ns}/w0")
    assert w0 is not None
    assert informer.get("w0", namespace=widgets.ns) is not None
    assert informer.get("absent", namespace=widgets.ns) is None
    assert (w0.name, w0.namespace, w0.key, w0.kind) == ("w0", widgets.ns, f"{widgets.ns}/w0", "Widget")
    assert w0.api_version == f"{widgets.group}/v1"
    assert w0.labels == {"app": "web"}
    assert w0.annotations == {}
    assert w0.uid == widgets.created[0]["metadata"]["uid"]
    assert w0.resource_version == widgets.created[0]["metadata"]["resourceVersion"]
    assert w0["spec"] == {"nodeName": "node-0", "tags": ["t0", "all"]}
    assert w0.pointer("/spec/tags/1") == "all"
    assert w0.pointer("/spec/missing", "dflt") == "dflt"
    assert w0.get("status") is None and "spec" in w0 and "status" not in w0
    with pytest.raises(KeyError):
        w0["status"]
    assert w0.to_dict() == widgets.created[0]

    assert sorted(o.name or "" for o in informer.list(label_selector="app=web")) == ["w0", "w1", "w2"]
    assert [o.name for o in informer.list(label_selector="app=db", namespace=widgets.ns)] == ["w3"]
    assert informer.list(namespace="elsewhere") == []
    assert sorted(o.name or "" for o in informer.by_index("node", "node-1")) == ["w1", "w3"]
    assert sorted(informer.index_keys("tag", "all")) == sorted(informer.keys())
    assert informer.index_keys("tag", "t2") == [f"{widgets.ns}/w2"]
    assert sorted(informer.index_values("node")) == ["node-0", "node-1"]
    assert set(informer.index_names()) >= {"node", "tag"}


def test_the_same_resource_and_options_give_the_same_cache(factory: kdi.Factory, widgets: Widgets) -> None:
    by_plural = factory.informer(widgets.resource)
    by_full_name = factory.informer(f"widgets.v1.{widgets.group}")
    assert by_plural.resource == by_full_name.resource == f"widgets.v1.{widgets.group}"
    assert len(factory.informers) == 1
    factory.informer(widgets.resource, label_selector="app=db")
    assert len(factory.informers) == 2
    by_pattern = factory.matching(f"group:{widgets.group}", indexes={"node": "spec.nodeName"})
    assert [i.resource for i in by_pattern] == [by_plural.resource]
    assert factory.matching(widgets.resource)[0].resource == by_plural.resource
    with pytest.raises(kdi.IndexDefinitionError):
        factory.informer(widgets.resource, indexes={"node": "spec.other"})
    with pytest.raises(kdi.UnknownResourceError):
        factory.matching("custom:")


def test_handlers_get_the_cache_first_even_when_added_late(factory: kdi.Factory, widgets: Widgets) -> None:
    informer = factory.informer(widgets.resource)
    early: list[kdi.Event] = []
    informer.on_event(early.append)
    factory.start()
    informer.wait_for_sync(timeout=60)
    wait_until("the early handler's adds", lambda: len(early) >= 4)

    late: list[kdi.Event] = []
    handler = informer.on_add(late.append)
    wait_until("the late handler's replay", lambda: len(late) == 4)
    assert all(e.kind == "Add" and e.in_initial_list for e in late)
    assert sorted(e.object.name or "" for e in late) == ["w0", "w1", "w2", "w3"]
    wait_until("the late handler to have synced", lambda: handler.has_synced)

    updates: list[kdi.Event] = []
    informer.on_update(updates.append)
    objects = client.CustomObjectsApi(widgets.api)
    color = unique("blue")
    patched = cast(
        dict[str, Any],
        objects.patch_namespaced_custom_object(widgets.group, "v1", widgets.ns, "widgets", "w1", {"spec": {"color": color}}),
    )
    wait_until("the update", lambda: any(e.object.resource_version == patched["metadata"]["resourceVersion"] for e in updates))
    update = next(e for e in updates if e.object.resource_version == patched["metadata"]["resourceVersion"])
    assert update.kind == "Update" and not update.is_resync
    assert update.old is not None and update.old["spec"].get("color") != color
    assert update.object["spec"]["color"] == color
    handler.remove()
    handler.remove()


def test_a_handler_that_raises_gets_the_next_event_and_others_are_unaffected(
    factory: kdi.Factory, widgets: Widgets, monkeypatch: pytest.MonkeyPatch
) -> None:
    reported: list[BaseException | None] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: reported.append(u.exc_value))
    informer = factory.informer(widgets.resource)
    seen_by_raiser: list[str] = []
    seen_by_other: list[str] = []

    def raiser(event: kdi.Event) -> None:
        seen_by_raiser.append(event.object.name or "")
        raise RuntimeError(f"handler failed on {event.object.name}")

    informer.on_event(raiser)
    informer.on_event(lambda e: seen_by_other.append(e.object.name or ""))
    factory.start()
    informer.wait_for_sync(timeout=60)
    wait_until("every object at both handlers", lambda: len(seen_by_raiser) == 4 and len(seen_by_other) == 4)
    wait_until("four reports", lambda: len(reported) >= 4)
    assert all(isinstance(e, RuntimeError) for e in reported)
    assert "handler failed on" in str(reported[0])


def test_read_your_writes_with_what_the_official_client_returns(control_plane: ControlPlane, widgets: Widgets) -> None:
    with kdi.Factory(widgets.kubeconfig) as factory:
        informer = factory.informer(widgets.resource)
        configmaps = factory.informer("configmaps", namespace=widgets.ns)
        factory.start()
        factory.wait_for_sync(timeout=60)

        objects = client.CustomObjectsApi(widgets.api)
        for i in range(5):
            written = objects.patch_namespaced_custom_object(
                widgets.group, "v1", widgets.ns, "widgets", "w2", {"spec": {"round": i}}
            )
            informer.wait_for_object(written, timeout=30)
            cached = informer.get(f"{widgets.ns}/w2")
            assert cached is not None and cached["spec"]["round"] == i

        # A model of the official client (V1ConfigMap), through the factory.
        model = client.CoreV1Api(widgets.api).create_namespaced_config_map(
            widgets.ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="settings"), data={"a": "1"})
        )
        assert factory.wait_for_object(model, timeout=30) == 1
        cm = configmaps.get("settings", namespace=widgets.ns)
        assert cm is not None and cm["data"] == {"a": "1"}

        with pytest.raises(kdi.InformerError, match="resource"):
            informer.wait_for_object(model, timeout=1)
        with pytest.raises(TypeError):
            informer.wait_for_object(42)


def test_a_crd_installed_later_is_waited_for(control_plane: ControlPlane) -> None:
    api = control_plane.api()
    group = f"{unique('late')}.kdi-py.example.com"
    with kdi.Factory(control_plane.kubeconfigs["admin"]) as factory:
        informer = factory.informer(f"widgets.{group}")
        factory.start()
        wait_until("the informer to say it is not served", lambda: informer.status.name == "notServed")
        assert informer.status.words == "not served"
        assert f"widgets.{group}" in (informer.status.reason or "")
        with pytest.raises(kdi.NotSyncedError) as not_served:
            informer.wait_for_sync(timeout=0.5)
        assert not_served.value.reason == "notServed"
        assert "starts once it is served" in str(not_served.value)

        install_crd(api, group)
        ns = namespace(api)
        create_widget(api, group, ns, widget("first", node="n"))
        informer.wait_for_sync(timeout=60)
        wait_until("the widget in the cache", lambda: informer.get(f"{ns}/first") is not None)


def test_forbidden_then_allowed(control_plane: ControlPlane, widgets: Widgets) -> None:
    ns = namespace(widgets.api)
    with kdi.Factory(control_plane.kubeconfigs["alice"]) as factory:
        informer = factory.informer("configmaps", namespace=ns)
        factory.start()
        with pytest.raises(kdi.NotSyncedError) as refused:
            informer.wait_for_sync(timeout=5)
        assert refused.value.reason == "forbidden"
        assert "forbidden" in str(refused.value).lower()
        assert informer.status.refused

        rbac = client.RbacAuthorizationV1Api(widgets.api)
        rule = {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}
        rbac.create_namespaced_role(ns, body({"metadata": {"name": "read"}, "rules": [rule]}))
        rbac.create_namespaced_role_binding(
            ns,
            body(
                {
                    "metadata": {"name": "read"},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "read"},
                    "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}],
                }
            ),
        )
        informer.wait_for_sync(timeout=60)
        wait_until("the status to say synced", lambda: informer.status.synced)


def test_a_warm_restart_resumes_from_the_snapshot_without_listing(widgets: Widgets, tmp_path: Path) -> None:
    snapshots = tmp_path / "snapshots"
    with kdi.Factory(widgets.kubeconfig, snapshot_dir=str(snapshots)) as factory:
        informer = factory.informer(widgets.resource, namespace=widgets.ns)
        factory.start()
        informer.wait_for_sync(timeout=60)
        assert informer.stats["lists"] == 1
    assert any(snapshots.rglob("*")), "the shutdown wrote a snapshot"

    with kdi.Factory(widgets.kubeconfig, snapshot_dir=str(snapshots)) as factory:
        informer = factory.informer(widgets.resource, namespace=widgets.ns)
        factory.start()
        informer.wait_for_sync(timeout=60)
        assert len(informer) == 4
        stats = informer.stats
        assert stats["lists"] == 0 and stats["list_requests"] == 0, stats
        assert stats["snapshot_start"] and "resumed" in stats["snapshot_start"].lower()


def test_the_heap_is_trimmed_once_a_list_ends(widgets: Widgets, monkeypatch: pytest.MonkeyPatch) -> None:
    trims: list[bool] = []

    def counted() -> bool:
        trimmed = real_trim()
        trims.append(trimmed)
        return trimmed

    real_trim = _memory.trim
    monkeypatch.setattr(_memory, "trim", counted)
    with kdi.Factory(widgets.kubeconfig) as factory:
        informer = factory.informer(widgets.resource, namespace=widgets.ns)
        factory.start()
        informer.wait_for_sync(timeout=60)
        wait_until("a trim after the list", lambda: len(trims) >= 1, timeout=10)
    if platform.system() == "Linux" and platform.libc_ver()[0] == "glibc":
        assert _memory._MALLOC_TRIM is not None, "glibc's malloc_trim was not found"


def test_ctrl_c_interrupts_a_wait(control_plane: ControlPlane) -> None:
    group = f"{unique('never')}.kdi-py.example.com"
    with kdi.Factory(control_plane.kubeconfigs["admin"]) as factory:
        informer = factory.informer(f"widgets.{group}")
        factory.start()
        # Python's own Ctrl-C handler, even where the process was started
        # with SIGINT ignored (a background job of a non-interactive shell).
        previous = signal.signal(signal.SIGINT, signal.default_int_handler)
        timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
        timer.start()
        try:
            with pytest.raises(KeyboardInterrupt):
                informer.wait_for_sync(timeout=120)
        finally:
            timer.cancel()
            signal.signal(signal.SIGINT, previous)


def test_asyncio_events_and_sync(widgets: Widgets) -> None:
    async def main() -> list[str]:
        with kdi.Factory(widgets.kubeconfig) as factory:
            informer = factory.informer(widgets.resource, namespace=widgets.ns)
            factory.start()
            await factory.synced(60)
            await informer.synced(60)
            names: list[str] = []
            async with informer.events() as events:
                async for event in events:
                    assert event.kind == "Add"
                    names.append(event.object.name or "")
                    if len(names) == 4:
                        break
            return sorted(names)

    assert asyncio.run(main()) == ["w0", "w1", "w2", "w3"]


def test_bad_input_raises_the_library_errors(factory: kdi.Factory, widgets: Widgets) -> None:
    with pytest.raises(kdi.UnknownResourceError) as unknown:
        factory.informer("wigdets")
    assert isinstance(unknown.value, LookupError)
    with pytest.raises(ValueError, match="resource must not be empty"):
        factory.informer(" ")
    with pytest.raises(ValueError, match="storage"):
        factory.informer(widgets.resource, storage="bytes")  # type: ignore[arg-type]

    informer = factory.informer(widgets.resource, indexes={"node": "spec.nodeName"})
    with pytest.raises(kdi.IndexDefinitionError) as bad_index:
        informer.add_index("broken", "spec.[")
    assert isinstance(bad_index.value, ValueError) and "broken" in str(bad_index.value)
    with pytest.raises(kdi.IndexDefinitionError):
        informer.add_index("node", "spec.other")
    with pytest.raises(kdi.UnknownIndexError) as unknown_index:
        informer.by_index("nope", "x")
    assert "nope" in str(unknown_index.value)
    with pytest.raises(kdi.SelectorError):
        informer.list(label_selector="app in (web")
    with pytest.raises(ValueError, match="timeout"):
        informer.wait_for_sync(timeout=-1)
    with pytest.raises(kdi.ConfigError, match="kubeconfig"):
        kdi.Factory("/nonexistent/kubeconfig")
    with pytest.raises(kdi.ConfigError, match="nosuch"):
        kdi.Factory(widgets.kubeconfig, context="nosuch")
    assert all(issubclass(e, kdi.KubeDynamicInformerError) for e in (kdi.ConfigError, kdi.CacheError, kdi.FactoryError))


def test_listing_builds_handles_not_dicts(factory: kdi.Factory, widgets: Widgets) -> None:
    informer = factory.informer(widgets.resource)
    factory.start()
    informer.wait_for_sync(timeout=60)
    objects: list[Any] = informer.list()
    assert objects and all(type(o) is kdi.CachedObject for o in objects)
    assert "CachedObject Widget" in repr(objects[0])


def test_a_config_file_declares_the_informers_and_its_errors_are_located(widgets: Widgets, tmp_path: Path) -> None:
    config = tmp_path / "informers.yaml"
    config.write_text(
        f"""apiVersion: kube-dynamic-informer.io/v1alpha1
kind: InformerSet
informers:
  - name: widgets
    resource: {widgets.resource}
    namespaces: [{widgets.ns}]
    indexes:
      node: spec.nodeName
"""
    )
    with kdi.Factory.from_file(config, widgets.kubeconfig) as factory:
        members = factory.members
        assert [(m.entry, m.from_pattern) for m in members] == [("widgets", False)]
        informer = members[0].informer
        factory.start()
        factory.wait_for_sync(timeout=60)
        assert sorted(o.name or "" for o in informer.by_index("node", "node-0")) == ["w0", "w2"]

    broken = tmp_path / "broken.yaml"
    broken.write_text(
        """apiVersion: kube-dynamic-informer.io/v1alpha1
kind: InformerSet
informers:
  - resource: configmaps
    indexes:
      bad: "spec.["
"""
    )
    with pytest.raises(kdi.ConfigFileError) as located:
        kdi.Factory.from_file(broken, widgets.kubeconfig)
    assert f"{broken}:6" in str(located.value)
    assert isinstance(located.value, ValueError)


def test_a_restart_from_a_compacted_snapshot_relists_with_tombstones(control_plane: ControlPlane, tmp_path: Path) -> None:
    # Pod templates are not in the server's watch cache (see conftest): a watch
    # from a compacted resourceVersion gets 410 Gone from etcd itself.
    api = control_plane.api()
    core = client.CoreV1Api(api)
    ns = namespace(api)
    template = {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}
    for name in ("keep", "change", "vanish"):
        core.create_namespaced_pod_template(ns, body({"metadata": {"name": name}, **template}))
    snapshots = str(tmp_path / "snapshots")
    with kdi.Factory(control_plane.kubeconfigs["admin"], namespace=ns, snapshot_dir=snapshots) as factory:
        informer = factory.informer("podtemplates")
        factory.start()
        informer.wait_for_sync(timeout=60)
    # At least as new as the snapshot's: once this one is compacted, so is that.
    listed = core.list_namespaced_pod_template(ns).metadata
    assert listed is not None
    snapshot_rv = cast(str, listed.resource_version)

    # While nothing watches: changes a resumed watch will never see.
    core.delete_namespaced_pod_template("vanish", ns)
    core.patch_namespaced_pod_template("change", ns, {"metadata": {"labels": {"changed": "yes"}}})
    core.create_namespaced_pod_template(ns, body({"metadata": {"name": "new"}, **template}))

    def compacted() -> bool:
        try:
            core.list_namespaced_pod_template(ns, resource_version=snapshot_rv, resource_version_match="Exact")
            # Writes elsewhere move the compaction on.
            core.create_namespaced_pod_template(ns, body({"metadata": {"generateName": "pace-"}, **template}))
            return False
        except client.ApiException as e:
            return bool(e.status == 410)

    wait_until(f"resourceVersion {snapshot_rv} to be compacted", compacted, timeout=60)

    with kdi.Factory(control_plane.kubeconfigs["admin"], namespace=ns, snapshot_dir=snapshots) as factory:
        informer = factory.informer("podtemplates")
        events: list[kdi.Event] = []
        informer.on_event(events.append)
        factory.start()
        wait_until("the relist after 410", lambda: informer.stats["relists_after_gone"] >= 1 and informer.get("new", namespace=ns) is not None)
        wait_until("the handler to catch up", lambda: any(e.kind == "Add" and e.object.name == "new" for e in events))
        # The snapshot's objects come first (initial adds); what follows is
        # the relist. "new" may come as an initial add too: the relist is the
        # informer's first list of this run.
        snapshot = {"keep", "change", "vanish"}
        live = sorted(
            (e.kind, e.object.name or "", e.final_state_unknown)
            for e in events
            if not (e.in_initial_list and e.object.name in snapshot) and not (e.object.name or "").startswith("pace-")
        )
        assert live == [("Add", "new", False), ("Delete", "vanish", True), ("Update", "change", False)]
        assert informer.stats["tombstones"] >= 1
        changed = informer.get("change", namespace=ns)
        assert changed is not None and changed.labels == {"changed": "yes"}
        assert informer.get("vanish", namespace=ns) is None


def test_factories_still_running_at_exit_write_their_snapshots(widgets: Widgets, tmp_path: Path) -> None:
    snapshots = tmp_path / "snapshots"
    program = f"""
import kube_dynamic_informer as kdi
factory = kdi.Factory({widgets.kubeconfig!r}, namespace={widgets.ns!r}, snapshot_dir={str(snapshots)!r})
informer = factory.informer({widgets.resource!r})
factory.start()
informer.wait_for_sync(timeout=60)
print(len(informer))
"""
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "4"
    assert [p for p in snapshots.rglob("*") if p.is_file()], "no snapshot written at exit"
