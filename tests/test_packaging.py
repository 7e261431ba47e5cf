"""pyproject.toml and environment.yml ask for the same packages."""

import re

import tomllib
import yaml

from fgpo_core.book.build import REPO_ROOT


def norm(req: str) -> str:
    return re.sub(r"\s+", "", req).lower().replace("_", "-")


def test_environment_yml_matches_pyproject():
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    wanted = set(map(norm, project["dependencies"]))
    for extra in ("book", "test"):
        wanted |= set(map(norm, project["optional-dependencies"][extra]))
    env = yaml.safe_load((REPO_ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    got = {norm(r) for r in pip if not r.startswith("-e")}
    assert got == wanted, f"only in environment.yml: {got - wanted}; only in pyproject: {wanted - got}"
    assert "-e ." in pip


def test_gpu_extra_keeps_vllm_out_of_the_cpu_set():
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    assert any(r.startswith("vllm") for r in project["optional-dependencies"]["gpu"])
    cpu = project["dependencies"] + project["optional-dependencies"]["book"] + project["optional-dependencies"]["test"]
    assert not any(r.startswith("vllm") for r in cpu)
