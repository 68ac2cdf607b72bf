"""The book's Kubernetes manifests parse and validate, as kubeconform -strict would check them.

Every ``*.yaml`` under ``source/08-production-deployment/manifests/``: each document is valid YAML with an
apiVersion and kind; built-in kinds validate against the Kubernetes schemas bundled with ``kubernetes-validate``
(strict: unknown fields are errors); the custom resources (InferencePool, HTTPRoute) validate against the released
CRD schemas in ``tests/k8s/crds`` (see its README), unknown fields included.  Every ``vllm`` command line in a
container's command/args parses with the pinned release's CLI spec, like the chapters' commands.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
MANIFESTS = sorted((REPO / "source" / "08-production-deployment" / "manifests").glob("*.yaml"))
CRDS = {(s["group"], s["kind"]): s for s in (json.loads(p.read_text()) for p in (Path(__file__).parent / "crds").glob("*.json"))}
K8S_VERSION = "1.33.0"


def _docs() -> list[tuple[str, int, dict]]:
    out = []
    for path in MANIFESTS:
        for i, doc in enumerate(yaml.safe_load_all(path.read_text(encoding="utf-8"))):
            if doc is not None:
                out.append((path.name, i, doc))
    return out


def _unknown_fields(doc, schema: dict, where: str = "") -> list[str]:
    """Fields of *doc* the structural schema does not declare (what the API server would prune silently)."""
    out = []
    if isinstance(doc, dict) and schema.get("type") == "object":
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        for k, v in doc.items():
            if props is not None and k in props:
                out += _unknown_fields(v, props[k], f"{where}.{k}")
            elif isinstance(extra, dict):
                out += _unknown_fields(v, extra, f"{where}.{k}")
            elif props is not None and not schema.get("x-kubernetes-preserve-unknown-fields") and k not in (
                    "apiVersion", "kind", "metadata"):
                out.append(f"{where}.{k}")
    elif isinstance(doc, list) and isinstance(schema.get("items"), dict):
        for i, v in enumerate(doc):
            out += _unknown_fields(v, schema["items"], f"{where}[{i}]")
    return out


def test_there_are_manifests():
    assert MANIFESTS and _docs()


@pytest.mark.parametrize("name,index,doc", _docs(), ids=lambda v: v if isinstance(v, str) else None)
def test_manifest_validates(name: str, index: int, doc: dict):
    import kubernetes_validate

    where = f"{name} document {index + 1} ({doc.get('kind')})"
    assert doc.get("apiVersion") and doc.get("kind") and doc.get("metadata", {}).get("name"), where
    group = doc["apiVersion"].rpartition("/")[0]
    crd = CRDS.get((group, doc["kind"]))
    if crd is not None:
        assert doc["apiVersion"].endswith("/" + crd["version"]), f"{where}: {doc['apiVersion']} is not the checked version"
        schema = crd["openAPIV3Schema"]
        try:
            jsonschema.validate(doc, schema)
        except jsonschema.ValidationError as exc:
            pytest.fail(f"{where}: {exc.message} at {'/'.join(map(str, exc.absolute_path))} "
                        f"(schema of {doc['kind']} {crd['bundle']})")
        unknown = _unknown_fields(doc, schema)
        assert not unknown, f"{where}: fields the {doc['kind']} schema ({crd['bundle']}) does not have: {unknown}"
        return
    try:
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
    except kubernetes_validate.ValidationError as exc:
        pytest.fail(f"{where}: {exc.message} at {'/'.join(map(str, exc.path))} (Kubernetes {K8S_VERSION} schema)")
    except kubernetes_validate.SchemaNotFoundError:
        pytest.fail(f"{where}: no schema for {doc['apiVersion']} {doc['kind']}: add its CRD schema to tests/k8s/crds")


def _vllm_commands(doc: dict) -> list[list[str]]:
    pods = []
    spec = doc.get("spec", {})
    tpl = spec.get("template", {}).get("spec") if isinstance(spec, dict) else None
    for s in (tpl, spec if doc.get("kind") == "Pod" else None):
        if isinstance(s, dict):
            pods += s.get("containers", []) + s.get("initContainers", [])
    out = []
    for c in pods:
        argv = [*c.get("command", []), *c.get("args", [])]
        if argv and Path(argv[0]).name == "vllm":
            out.append(argv)
    return out


def test_vllm_command_lines_in_manifests_parse_with_the_pinned_cli():
    from vllm_book import pin as pin_mod
    from vllm_book.sync import commands

    spec = commands.load_spec(commands.spec_path(pin_mod.load_pin(REPO).version))
    checked, problems = 0, []
    for name, index, doc in _docs():
        for argv in _vllm_commands(doc):
            words = [commands.Word(a, 1, raw=a) for a in argv]
            inv = commands.invocation(words)
            assert inv is not None, f"{name}: {argv}"
            problems += [f"{name} document {index + 1}: {i.message}" for i in commands.check_invocation(spec, inv, None)]
            checked += 1
    assert checked, "no vllm command line in the manifests: the check would be vacuous"
    assert not problems, "\n".join(problems)
