"""The file names of a reward-table folder, the error for one made under other inputs, and the
check of a table manifest's fields.

Shared by the table's build (:mod:`.build`), its readers (:mod:`.io`), tables fused from block
scores (:mod:`.fusion`), grown tables (:mod:`.grow`) and on-demand rewards (:mod:`.ondemand`).
"""

from __future__ import annotations

from ..io import manifest_field

__all__ = ["MANIFEST", "TABLE", "ManifestMismatch", "check_table_manifest"]

MANIFEST = "manifest.json"
TABLE = "table.parquet"


class ManifestMismatch(ValueError):
    """A table (or a partial build) was made under different inputs."""


def check_table_manifest(manifest: dict, where) -> None:
    """Refuse a (hand-edited) table manifest whose fields a reader needs are missing or of the
    wrong type, in one line naming the field."""
    manifest_field(manifest, "n_tools", int, where, positive=True)
    manifest_field(manifest, "reasoner", str, where)
    manifest_field(manifest, "lambda", (int, float), where)
    tools = manifest_field(manifest, "tools", list, where)
    if len(tools) != manifest["n_tools"] or not all(
        isinstance(t, list) and len(t) == 2 and isinstance(t[0], str) for t in tools
    ):
        raise ValueError(f"{where}: field 'tools' must list {manifest['n_tools']} [name, version] pairs, got {tools!r}")
