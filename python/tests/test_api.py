"""The package's public surface: documented, typed, importable without a
cluster."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import pytest

import kube_dynamic_informer as kdi

PACKAGE = Path(kdi.__file__).parent


def public_members(cls: type) -> list[str]:
    return [name for name in vars(cls) if not name.startswith("_")]


@pytest.mark.parametrize("name", kdi.__all__)
def test_every_public_name_has_a_docstring(name: str) -> None:
    value = getattr(kdi, name)
    assert inspect.getdoc(value), f"{name} has no docstring"
    if isinstance(value, type):
        for member in public_members(value):
            assert inspect.getdoc(getattr(value, member)), f"{name}.{member} has no docstring"


def test_the_stubs_name_what_the_extension_has() -> None:
    stubs = (PACKAGE / "_native.pyi").read_text()
    for name in ("CachedObject", "Event", "Factory", "Handler", "Informer", "Member", "Status"):
        assert f"class {name}:" in stubs, name
        for member in public_members(getattr(kdi, name)):
            assert f"def {member}(" in stubs, f"{name}.{member} is missing from _native.pyi"
    assert (PACKAGE / "py.typed").exists()


def test_the_exceptions_mirror_the_library_and_pythons_own() -> None:
    assert issubclass(kdi.SyncTimeoutError, kdi.NotSyncedError)
    assert issubclass(kdi.SyncTimeoutError, TimeoutError)
    assert issubclass(kdi.WaitTimeoutError, TimeoutError)
    assert issubclass(kdi.NotSyncedError, kdi.InformerError) and issubclass(kdi.NotSyncedError, kdi.FactoryError)
    assert issubclass(kdi.UnknownResourceError, LookupError)
    assert issubclass(kdi.UnknownIndexError, KeyError)
    assert str(kdi.UnknownIndexError("no index named x")) == "no index named x"
    for error in (kdi.SelectorError, kdi.IndexDefinitionError, kdi.ConfigFileError):
        assert issubclass(error, ValueError)
    for name in kdi.errors.__all__:
        assert issubclass(getattr(kdi.errors, name), kdi.KubeDynamicInformerError)


def test_a_bad_argument_is_refused_before_any_request(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""
    )
    with pytest.raises(ValueError, match="storage"):
        kdi.Factory(str(kubeconfig), storage="disk")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="namespace must not be empty"):
        kdi.Factory(str(kubeconfig), namespace="")
    factory = kdi.Factory(str(kubeconfig))
    try:
        with pytest.raises(ValueError, match="timeout"):
            factory.wait_for_sync(timeout=float("nan"))
    finally:
        assert factory.shutdown(5.0)


def test_importing_needs_no_cluster() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import kube_dynamic_informer as k; print(len(k.__all__))"],
        capture_output=True,
        text=True,
        env={"KUBECONFIG": "/nonexistent", "PATH": "/usr/bin:/bin"},
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) > 10


def test_the_stubs_carry_the_extensions_docstrings() -> None:
    # Editors read the stubs, not the compiled module: the docstrings written
    # in Rust are copied into them (python/tools/stub_docs.py).
    tool = Path(__file__).resolve().parents[1] / "tools" / "stub_docs.py"
    done = subprocess.run([sys.executable, str(tool), "--check"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
