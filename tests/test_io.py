"""Atomic writes and committable adapters."""

import json

import pytest

from fgpo_core.hf import adapter_hash, portable_adapter
from fgpo_core.io import atomic_path, write_json, write_text


def test_atomic_write_replaces_whole_and_leaves_nothing_on_failure(tmp_path):
    p = tmp_path / "sub" / "f.json"
    write_json(p, {"a": 1})
    assert json.loads(p.read_text()) == {"a": 1}
    with pytest.raises(RuntimeError):
        with atomic_path(p) as tmp:
            tmp.write_text("half")
            raise RuntimeError("killed")
    assert json.loads(p.read_text()) == {"a": 1}  # the old file survives a failed write
    assert sorted(x.name for x in p.parent.iterdir()) == ["f.json"]  # and no temporary is left behind
    write_text(p, "new")
    assert p.read_text() == "new"


def test_adapter_hash_depends_on_the_weights_not_on_the_configs_layout(tmp_path):
    for name, modules in (("a", ["q_proj", "v_proj", "k_proj"]), ("b", ["k_proj", "q_proj", "v_proj"])):
        d = tmp_path / name
        d.mkdir()
        (d / "adapter_model.safetensors").write_bytes(b"weights")
        (d / "adapter_config.json").write_text(json.dumps({"target_modules": modules, "base_model_name_or_path": "/x"}))
        (d / "README.md").write_text("card")
        portable_adapter(d, "org/base")
    assert adapter_hash(tmp_path / "a") == adapter_hash(tmp_path / "b")
    assert (tmp_path / "a" / "adapter_config.json").read_bytes() == (
        tmp_path / "b" / "adapter_config.json"
    ).read_bytes()
    cfg = json.loads((tmp_path / "a" / "adapter_config.json").read_text())
    assert cfg["base_model_name_or_path"] == "org/base" and not (tmp_path / "a" / "README.md").exists()
    (tmp_path / "b" / "adapter_model.safetensors").write_bytes(b"other weights")
    assert adapter_hash(tmp_path / "a") != adapter_hash(tmp_path / "b")
    with pytest.raises(FileNotFoundError, match="no adapter weights"):
        adapter_hash(tmp_path)
