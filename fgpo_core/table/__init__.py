"""The reward table: the reasoner's correctness for every (question, subset), its build and its files."""

from .files import ManifestMismatch
from .io import has_table, load_table, load_tables
from .reward_table import BASELINE_NAMES, RewardTable

__all__ = ["RewardTable", "BASELINE_NAMES", "load_table", "load_tables", "has_table", "ManifestMismatch"]
