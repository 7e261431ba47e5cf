"""The file names of a reward-table folder and the error for one made under other inputs.

Shared by the table's build (:mod:`.build`), its readers (:mod:`.io`), tables fused from block
scores (:mod:`.fusion`), grown tables (:mod:`.grow`) and on-demand rewards (:mod:`.ondemand`).
"""
from __future__ import annotations

__all__ = ["MANIFEST", "TABLE", "ManifestMismatch"]

MANIFEST = "manifest.json"
TABLE = "table.parquet"


class ManifestMismatch(ValueError):
    """A table (or a partial build) was made under different inputs."""
