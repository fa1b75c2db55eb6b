"""Conditions and filters from Python against the bundled control plane:
handlers with a filter and a change predicate, and waits for a state
answered from the cache."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from kubernetes import client

import kube_dynamic_informer as kdi
from conftest import ControlPlane, create_widget, install_crd, namespace, unique, wait_until, widget


class Shop:
    """A Widget CRD of its own group; each test makes its own namespace."""

    def __init__(self, control_plane: ControlPlane) -> None:
        self.api = control_plane.api()
        self.kubeconfig = control_plane.kubeconfigs["admin"]
        self.group = f"{unique('c')}.kdi-py.example.com"
        install_crd(self.api, self.group)
        self.objects = client.CustomObjectsApi(self.api)

    @property
    def resource(self) -> str:
        return f"widgets.{self.group}"

    def fill(self, count: int, **spec: Any) -> str:
        """A new namespace with Widgets w0..w{count-1}; returns its name."""
        ns = namespace(self.api)
        for i in range(count):
            create_widget(self.api, self.group, ns, widget(f"w{i}", node=f"node-{i % 2}", **spec))
        return ns

    def patch(self, ns: str, name: str, patch: dict[str, Any]) -> dict[str, Any]:
        patched = self.objects.patch_namespaced_custom_object(self.group, "v1", ns, "widgets", name, patch)
        return cast(dict[str, Any], patched)


@pytest.fixture(scope="module")
def shop(control_plane: ControlPlane) -> Shop:
    return Shop(control_plane)


@pytest.fixture(params=["compact", "objects"])
def factory(request: pytest.FixtureRequest, shop: Shop) -> Iterator[kdi.Factory]:
    with kdi.Factory(shop.kubeconfig, storage=request.param) as factory:
        yield factory


def test_a_filtered_handler_sees_objects_enter_and_leave_and_only_the_changes_it_asked_for(
    factory: kdi.Factory, shop: Shop
) -> None:
    ns = shop.fill(3, color="red")
    shop.patch(ns, "w2", {"spec": {"color": "blue"}})
    informer = factory.informer(shop.resource, namespace=ns)
    seen: list[kdi.Event] = []
    everything: list[kdi.Event] = []
    informer.on_event(seen.append, filter="spec.color == 'red'", changes="spec")
    informer.on_event(everything.append)
    factory.start()
    informer.wait_for_sync(timeout=60)
    wait_until("the red widgets", lambda: len(seen) == 2)
    assert sorted(e.object.name or "" for e in seen) == ["w0", "w1"]
    assert all(e.kind == "Add" and e.in_initial_list and not e.entered_filter for e in seen)

    # An annotation is not spec: the handler does not hear of it.
    annotated = shop.patch(ns, "w0", {"metadata": {"annotations": {"seen": "yes"}}})
    # w2 turns red (enters), w1 turns green (leaves), w0's spec changes.
    shop.patch(ns, "w2", {"spec": {"color": "red"}})
    shop.patch(ns, "w1", {"spec": {"color": "green"}})
    last = shop.patch(ns, "w0", {"spec": {"size": 3}})
    wait_until(
        "every write at the unfiltered handler",
        lambda: any(e.object.resource_version == last["metadata"]["resourceVersion"] for e in everything),
    )
    wait_until("three events at the filtered handler", lambda: len(seen) == 5)
    entered, left, changed = seen[2:]
    assert (entered.kind, entered.object.name, entered.entered_filter) == ("Add", "w2", True)
    assert not entered.in_initial_list
    assert (left.kind, left.object.name, left.left_filter) == ("Delete", "w1", True)
    assert left.object["spec"]["color"] == "green" and not left.final_state_unknown
    assert (changed.kind, changed.object.name) == ("Update", "w0")
    assert changed.object["spec"]["size"] == 3
    assert all(e.object.resource_version != annotated["metadata"]["resourceVersion"] for e in seen)
    # The cache is not filtered: every object is still there.
    assert len(informer) == 3


def test_a_config_files_filter_and_changes_reach_its_members_handlers(shop: Shop, tmp_path: Path) -> None:
    ns = shop.fill(3, color="red")
    shop.patch(ns, "w2", {"spec": {"color": "blue"}})
    config = tmp_path / "informers.yaml"
    config.write_text(
        f"""apiVersion: kube-dynamic-informer.io/v1alpha1
kind: InformerSet
informers:
  - name: red
    resource: {shop.resource}
    namespaces: [{ns}]
    filter: spec.color == 'red'
    changes: [spec]
  - name: all
    resource: {shop.resource}
    namespaces: [{ns}]
"""
    )
    with kdi.Factory.from_file(config, shop.kubeconfig) as factory:
        red, every = sorted(factory.members, key=lambda m: m.entry != "red")
        assert (red.filter, red.changes) == ("spec.color == 'red'", ["spec"])
        assert (every.filter, every.changes) == (None, [])
        # Both entries share one cache; their handlers see what each asks for.
        assert red.informer.resource == every.informer.resource
        seen: list[kdi.Event] = []
        unfiltered: list[kdi.Event] = []
        red.on_event(seen.append)
        every.on_event(unfiltered.append)
        factory.start()
        factory.wait_for_sync(timeout=60)
        wait_until("the red widgets", lambda: len(seen) == 2)
        shop.patch(ns, "w0", {"metadata": {"labels": {"tier": "front"}}})
        last = shop.patch(ns, "w1", {"spec": {"color": "green"}})
        wait_until(
            "the last write at the unfiltered handler",
            lambda: any(e.object.resource_version == last["metadata"]["resourceVersion"] for e in unfiltered),
        )
        wait_until("w1 leaving", lambda: len(seen) == 3)
        assert (seen[2].kind, seen[2].object.name, seen[2].left_filter) == ("Delete", "w1", True)
        assert sorted(e.object.name or "" for e in seen[:2]) == ["w0", "w1"]


def test_asyncio_events_take_a_filter(shop: Shop) -> None:
    ns = shop.fill(4)
    shop.patch(ns, "w3", {"spec": {"color": "red"}})

    async def main() -> list[str]:
        with kdi.Factory(shop.kubeconfig) as factory:
            informer = factory.informer(shop.resource, namespace=ns)
            factory.start()
            await informer.synced(60)
            async with informer.events(filter="spec.color == 'red'", changes=["spec", "metadata.labels"]) as events:
                async for event in events:
                    return [event.kind, event.object.name or ""]
        return []

    assert asyncio.run(main()) == ["Add", "w3"]


def test_wait_until_answers_from_the_cache_as_a_writer_brings_the_state(factory: kdi.Factory, shop: Shop) -> None:
    ns = shop.fill(6)
    informer = factory.informer(shop.resource, indexes={"node": "spec.nodeName"})
    factory.start()
    informer.wait_for_sync(timeout=60)

    def writer() -> None:
        for i in range(6):
            shop.patch(ns, f"w{i}", {"status": {"ready": True}})

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        report = informer.wait_until("status.ready == `true`", namespace=ns, timeout=60)
    finally:
        thread.join()
    assert report.holds and bool(report)
    assert sorted(o.name for o in report.objects) == [f"w{i}" for i in range(6)]
    assert all(o.holds and o.reason == "met" and o.namespace == ns for o in report.objects)
    assert report.blocking == [] and report.not_synced == []

    # By keys (names in a namespace), by index value, any and none.
    assert informer.wait_until("status.ready", ["w0", "w1"], namespace=ns).holds
    assert informer.wait_until("status.ready", f"{ns}/w2").holds
    by_node = informer.wait_until("status.ready", namespace=ns, index=("node", "node-1"))
    assert sorted(o.name for o in by_node.objects) == ["w1", "w3", "w5"]
    assert informer.wait_until("spec.nodeName == 'node-1'", namespace=ns, quantifier="any").holds
    assert informer.wait_until("status.ready == `false`", namespace=ns, quantifier="none").holds

    # kubectl's forms, and deletion.
    assert informer.wait_until("jsonpath={.status.ready}=true", "w4", namespace=ns).holds
    shop.objects.delete_namespaced_custom_object(shop.group, "v1", ns, "widgets", "w5")
    assert informer.wait_until("delete", "w5", namespace=ns, timeout=60).holds


def test_a_wait_that_times_out_names_exactly_the_objects_not_done(factory: kdi.Factory, shop: Shop) -> None:
    ns = shop.fill(4)
    shop.patch(ns, "w1", {"status": {"phase": "Done"}})
    shop.patch(ns, "w2", {"status": {"phase": "Done"}})
    informer = factory.informer(shop.resource, namespace=ns)
    factory.start()
    informer.wait_for_sync(timeout=60)
    with pytest.raises(kdi.ConditionTimeoutError) as timed_out:
        informer.wait_until("status.phase == 'Done'", timeout=0.5)
    error = timed_out.value
    assert isinstance(error, kdi.WaitTimeoutError) and isinstance(error, TimeoutError)
    report = error.report
    assert not report.holds and report.waited >= 0.5
    assert sorted((o.name, o.reason) for o in report.blocking) == [("w0", "notMet"), ("w3", "notMet")]
    assert len(report.objects) == 4
    assert "w0" in str(error) and "w3" in str(error)
    # A key not created yet is missing.
    with pytest.raises(kdi.ConditionTimeoutError) as missing:
        informer.wait_until("create", "nosuch", namespace=ns, timeout=0.2)
    assert [(o.name, o.reason) for o in missing.value.report.blocking] == [("nosuch", "missing")]


def test_a_factory_waits_across_its_informers(control_plane: ControlPlane, shop: Shop) -> None:
    other = Shop(control_plane)
    ns = shop.fill(2)
    # The other resource's Widgets in the same namespace.
    for i in range(3):
        create_widget(other.api, other.group, ns, widget(f"o{i}", node="node-9"))
    with kdi.Factory(shop.kubeconfig, namespace=ns) as factory:
        mine, theirs = factory.informer(shop.resource), factory.informer(other.resource)
        factory.start()
        factory.wait_for_sync(timeout=60)
        mine.wait_for_object(shop.patch(ns, "w0", {"status": {"ready": True}}))
        with pytest.raises(kdi.ConditionTimeoutError) as timed_out:
            factory.wait_until("status.ready == `true`", timeout=1)
        blocking = sorted((o.resource, o.name) for o in timed_out.value.report.blocking)
        assert blocking == sorted(
            [(mine.resource, "w1"), (theirs.resource, "o0"), (theirs.resource, "o1"), (theirs.resource, "o2")]
        )
        report = factory.wait_until("starts_with(spec.nodeName, 'node-')", [mine, theirs], timeout=60)
        assert report.holds and len(report.objects) == 5
        assert factory.wait_until("status.ready", [mine], keys="w0", namespace=ns).holds
        with pytest.raises(ValueError, match="no informer"):
            factory.wait_until("status.ready", [])


def test_the_awaitable_wait(shop: Shop) -> None:
    ns = shop.fill(2)

    async def main() -> kdi.WaitReport:
        with kdi.Factory(shop.kubeconfig) as factory:
            informer = factory.informer(shop.resource, namespace=ns)
            factory.start()
            mine = await informer.until("starts_with(spec.nodeName, 'node-')", quantifier="all", timeout=60)
            assert mine.holds and len(mine.objects) == 2
            return await factory.until("spec.nodeName != null", [informer], keys=["w0", "w1"], namespace=ns)

    report = asyncio.run(main())
    assert report.holds and sorted(o.name for o in report.objects) == ["w0", "w1"]


def test_the_wait_for_example_exits_0_when_met_and_4_naming_what_is_not(shop: Shop) -> None:
    ns = shop.fill(2)
    shop.patch(ns, "w0", {"status": {"ready": True}})
    example = Path(__file__).resolve().parents[1] / "examples" / "wait_for.py"

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, str(example), shop.resource, *args, "-n", ns, "--kubeconfig", shop.kubeconfig]
        return subprocess.run(command, capture_output=True, text=True, timeout=120)

    met = run("status.ready", "w0", "--timeout", "60")
    assert met.returncode == 0, met.stderr
    assert "hold" in met.stdout
    not_met = run("status.ready", "--timeout", "1")
    assert not_met.returncode == 4, not_met.stderr
    lines = not_met.stderr.splitlines()
    assert f"{ns}/w1: null" in lines and not any(line.startswith(f"{ns}/w0") for line in lines)
    bad = run("status.[", "--timeout", "1")
    assert bad.returncode == 1 and "condition" in bad.stderr


def test_bad_expressions_and_arguments_raise_with_the_position(factory: kdi.Factory, shop: Shop) -> None:
    informer = factory.informer(shop.resource)
    with pytest.raises(kdi.ExpressionError, match="condition") as bad_filter:
        informer.on_event(lambda e: None, filter="spec.[")
    assert isinstance(bad_filter.value, ValueError) and "invalid at" in str(bad_filter.value)
    with pytest.raises(kdi.ExpressionError, match="change expression"):
        informer.on_update(lambda e: None, changes=["spec", "nosuchfn(spec)"])
    with pytest.raises(kdi.ExpressionError):
        informer.on_event(lambda e: None, changes=[])
    with pytest.raises(kdi.ExpressionError, match="condition"):
        informer.wait_until("status.[", timeout=0.1)
    with pytest.raises(kdi.ExpressionError):
        informer.wait_until("jsonpath={..name}", timeout=0.1)
    with pytest.raises(kdi.SelectorError):
        informer.wait_until("status.ready", label_selector="app in (web", timeout=0.1)
    with pytest.raises(ValueError, match="quantifier"):
        informer.wait_until("status.ready", quantifier="most", timeout=0.1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not both"):
        informer.wait_until("status.ready", "w0", label_selector="app=web", timeout=0.1)
    with pytest.raises(TypeError):
        informer.on_event(lambda e: None, changes=3)  # type: ignore[arg-type]
