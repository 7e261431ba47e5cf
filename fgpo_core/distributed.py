"""The table build and a study's grid of runs on Ray (``--executor ray``), writing what the local path writes.

Nothing here computes a row or trains a head: each Ray task runs the local code on its slice in a
folder of its own on the node that runs it, and sends the files it wrote back to this process,
which writes them, atomically and checksummed, where the local command would have. So the result
is the local build's, byte for byte, and the out folder need not be shared by the nodes; the inputs
(benchmark, reasoner weights, tables and features) must be at the same paths on every node (a
relative path is read from this process's working directory, which each task enters when it
exists there).

* Table (:func:`build_table_ray`): one Ray actor per worker loads the questions, the tool library
  and the reasoner once; each chunk of the shard's questions (by every subset) is one call. The
  actor builds chunk ``j`` with :func:`~fgpo_core.table.build.build_table` itself, in its own
  folder where every other chunk of the shard is marked done (an empty file and its checksum), so
  the resumable builder makes exactly that chunk. Chunks already whole in the out folder are not
  sent again; a killed run loses only the chunks in flight.
* Study (:func:`run_study_ray`): the study's ``N`` (method, rate, seed) jobs become ``N`` tasks,
  task ``i`` running :func:`~fgpo_core.experiments.study.run_study` as ``--shard i/N`` on a copy
  of the parts already trained; the new parts come back, and one run without a shard assembles
  the results from them, as after a sharded local study.

Ray is imported only here, and only when asked for (``pip install -e '.[ray]'``);
:mod:`fgpo_core.experiments.study` does not import this module.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from .io import atomic_file, file_digest, write_text

__all__ = [
    "EXECUTORS",
    "check_executor",
    "ray_session",
    "chunk_name",
    "shard_questions",
    "TableWorker",
    "build_table_ray",
    "study_parts",
    "study_shard_task",
    "run_study_ray",
]

EXECUTORS = ("local", "ray")
"""Where ``fgpo table build`` and ``fgpo study`` run: this process (the default) or Ray."""

_EMPTY = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
"""sha256 of no bytes: the checksum of a placeholder chunk."""


def check_executor(executor: str, address: str | None) -> None:
    """Refuse an unknown executor, and an ``--address`` without Ray."""
    if executor not in EXECUTORS:
        raise ValueError(f"--executor must be one of {', '.join(EXECUTORS)}, got {executor!r}")
    if address and executor != "ray":
        raise ValueError("--address names a Ray cluster: give it with --executor ray")


def _host_port(address: str) -> tuple[str, int]:
    """``(host, port)`` of ``HOST:PORT`` or ``ray://HOST:PORT``."""
    rest = address.removeprefix("ray://")
    host, _, port = rest.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"--address takes HOST:PORT, ray://HOST:PORT or auto, got {address!r}")
    return host.strip("[]"), int(port)


def _reachable(address: str, timeout: float = 5.0) -> None:
    """Refuse a cluster address nothing answers at (Ray itself would retry for minutes)."""
    host, port = _host_port(address)
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as exc:
        raise ValueError(f"cannot reach a Ray cluster at {address}: {exc.strerror or exc}") from None


@contextmanager
def ray_session(address: str | None = None):
    """Ray, connected: to the cluster at ``address`` (``HOST:PORT``, ``ray://HOST:PORT``, ``auto``),
    or to a Ray started on this machine for the block (None). A session already open in this
    process (a test's ``ray.init(num_cpus=2)``) is used as it is and left open. Ray is imported
    before the address is tried, so a missing Ray is said first."""
    try:
        import ray
    except ImportError:
        raise ValueError("--executor ray needs Ray: pip install -e '.[ray]'") from None
    if address and address != "auto":
        _reachable(address)
    if ray.is_initialized():
        yield ray
        return
    if not address:  # a Ray of this machine runs its workers at this process's priority (Ray's default: 15 lower)
        os.environ.setdefault("RAY_worker_niceness", "0")
    kw = {"address": address} if address else {"include_dashboard": False}
    try:
        ray.init(**kw, log_to_driver=False, logging_level="ERROR")
    except (ConnectionError, RuntimeError, TimeoutError) as exc:
        raise ValueError(f"cannot connect to a Ray cluster at {address or 'this machine'}: {exc}") from None
    try:
        yield ray
    finally:
        ray.shutdown()


def _get(ray, refs):
    """``ray.get``, with a task's own user error raised as itself (its one line, not Ray's trace)."""
    try:
        return ray.get(refs)
    except ray.exceptions.RayTaskError as exc:
        cause = getattr(exc, "cause", None)
        raise (cause if isinstance(cause, Exception) else exc) from None


def _enter(cwd: str | None) -> None:
    if cwd and os.path.isdir(cwd):
        os.chdir(cwd)


def chunk_name(shard: tuple[int, int], j: int) -> str:
    """The file of chunk ``j`` of shard ``(i, N)``, as :func:`~fgpo_core.table.build.build_table` names it."""
    return f"shard{shard[0]:03d}of{shard[1]:03d}-chunk{j:05d}.parquet"


def shard_questions(n: int, shard: tuple[int, int]) -> range:
    """The question indices of shard ``(i, N)`` of ``n`` questions: the i-th of N contiguous ranges, as
    :func:`~fgpo_core.table.build.build_table` splits them (``tests/test_executor.py`` builds a
    shard both ways and compares the files)."""
    i, N = shard
    return range(i * n // N, (i + 1) * n // N)


def _placeholder(path: Path) -> None:
    """An empty chunk whose checksum matches: the builder skips it as done."""
    path.write_bytes(b"")
    path.with_name(path.name + ".sha256").write_text(_EMPTY + "\n")


class TableWorker:
    """One Ray actor of a table build: its questions, library and reasoner, loaded once by
    ``make_inputs()`` (a picklable callable returning ``(questions, library, reasoner)``)."""

    def __init__(self, make_inputs, shard: tuple[int, int], chunk_size: int, extend_from=None, cwd=None):
        self.make_inputs, self.shard, self.chunk_size = make_inputs, tuple(shard), chunk_size
        self.extend_from, self.cwd, self.inputs = extend_from, cwd, None
        self.dir = Path(tempfile.mkdtemp(prefix="fgpo-table-"))

    def _build(self) -> None:
        from .table.build import build_table

        build_table(
            *self.inputs,
            self.dir,
            shard=self.shard,
            chunk_size=self.chunk_size,
            progress=False,
            max_chunks=1,
            extend_from=self.extend_from,
        )

    def setup(self) -> tuple[bytes, int]:
        """Load the inputs; returns the table's manifest (as the local build writes it) and the
        shard's number of chunks."""
        _enter(self.cwd)
        self.inputs = self.make_inputs()
        n_chunks = -(-len(shard_questions(len(self.inputs[0]), self.shard)) // self.chunk_size)
        for j in range(n_chunks):
            _placeholder(self.dir / chunk_name(self.shard, j))
        self._build()  # every chunk marked done: writes the manifest only
        return (self.dir / "manifest.json").read_bytes(), n_chunks

    def chunk(self, j: int) -> tuple[int, bytes, int]:
        """Build chunk ``j`` with the local builder; returns ``(j, the chunk file's bytes, the
        reasoner calls it made)``."""
        from .table.build import COSTS, build_cost

        path = self.dir / chunk_name(self.shard, j)
        path.unlink()
        path.with_name(path.name + ".sha256").unlink()
        try:
            self._build()
            return j, path.read_bytes(), (build_cost(self.dir) or {}).get("reasoner_calls", 0)
        finally:  # marked done again, built or not: the next call builds only its own chunk
            _placeholder(path)
            (self.dir / COSTS).unlink(missing_ok=True)

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


def _write_file(path: Path, data: bytes, checksum: bool) -> None:
    """Write bytes atomically (and, for a chunk, its checksum after it, as the builder does)."""
    with atomic_file(path) as fh:
        fh.write(data)
    if checksum:
        write_text(path.with_name(path.name + ".sha256"), file_digest(path) + "\n")


def build_table_ray(
    make_inputs,
    out_dir,
    shard: tuple[int, int] = (0, 1),
    chunk_size: int = 16,
    extend_from=None,
    address: str | None = None,
    workers: int = 0,
    num_cpus: float = 1,
    num_gpus: float = 0,
    progress: bool = True,
) -> Path:
    """Build (or resume) shard ``shard`` of a reward table in ``out_dir`` on Ray: the files of
    :func:`~fgpo_core.table.build.build_table` with the same arguments (merge it as usual).
    ``workers`` actors (0: as many as the cluster's CPUs hold, at most one per chunk to build),
    each holding ``num_cpus`` CPUs and ``num_gpus`` GPUs."""
    from tqdm import tqdm

    from .table.build import check_manifest, chunk_ok, record_cost, shard_lock
    from .table.files import MANIFEST

    out = Path(out_dir)
    cwd = os.getcwd()
    with ray_session(address) as ray:
        from ray.util import ActorPool

        have = ray.cluster_resources()
        need = {k: v for k, v in (("CPU", num_cpus), ("GPU", num_gpus)) if v > 0}
        room = min((int(have.get(k, 0) // v) for k, v in need.items()), default=1)
        if room < 1:
            raise ValueError(f"no node of the Ray cluster ({have}) holds a worker's {need}")
        Worker = ray.remote(num_cpus=num_cpus, num_gpus=num_gpus)(TableWorker)
        actors = [Worker.remote(make_inputs, shard, chunk_size, extend_from, cwd)]
        try:
            manifest, n_chunks = _get(ray, actors[0].setup.remote())
            out.mkdir(parents=True, exist_ok=True)
            check_manifest(out / MANIFEST, json.loads(manifest))  # written as the local build writes it
            with shard_lock(out, shard):
                todo = [j for j in range(n_chunks) if not chunk_ok(out / chunk_name(shard, j))]
                n = max(1, min(workers or room, len(todo)))
                actors += [Worker.remote(make_inputs, shard, chunk_size, extend_from, cwd) for _ in range(n - 1)]
                for other in _get(ray, [a.setup.remote() for a in actors[1:]]):
                    if other[0] != manifest:
                        raise ValueError("the Ray workers disagree on the table's manifest (other package versions?)")
                desc = f"table shard {shard[0]}/{shard[1]} on Ray"
                t0, calls = time.time(), 0
                try:
                    with tqdm(total=len(todo), desc=desc, unit="chunk", disable=not progress) as bar:
                        for j, data, made in _unordered(ray, ActorPool(actors), todo):
                            _write_file(out / chunk_name(shard, j), data, checksum=True)
                            calls += made
                            bar.update()
                finally:  # wall seconds of the whole pool: its calls per second are the cluster's
                    record_cost(out, calls, time.time() - t0, executor="ray", workers=len(actors))
        finally:  # each actor's folder removed (one never started is not waited for), its CPUs freed
            ray.wait([a.close.remote() for a in actors], num_returns=len(actors), timeout=30)
            for a in actors:
                ray.kill(a)
    return out


def _unordered(ray, pool, todo):
    """The chunks' results as they come (a chunk's user error raised as itself)."""
    try:
        yield from pool.map_unordered(lambda a, j: a.chunk.remote(j), todo)
    except ray.exceptions.RayTaskError as exc:
        cause = getattr(exc, "cause", None)
        raise (cause if isinstance(cause, Exception) else exc) from None


def study_parts(cfg) -> list[str]:
    """The part file of each of the study's (method, rate, seed) jobs, in the study's order (a
    method whose every stage fixes its rate is trained once, not once per rate), as
    :func:`~fgpo_core.experiments.study.run_study` names them. A task ``i`` of ``N`` is sent the
    part of its jobs ``i, i+N, ...``; were the two to disagree, a part would only be trained again."""
    from .core.method_names import parse_stages
    from .experiments.study_config import PRESETS

    methods = [m.strip() for m in PRESETS.get(cfg.methods, cfg.methods).split(",") if m.strip()]
    lrs = [float(x) for x in cfg.lrs.split(",") if x.strip()]
    names = []
    for m in methods:
        stages = parse_stages(m)
        fixed = all("lr" in sp.overrides for sp in stages)
        for lr in [stages[0].overrides["lr"]] if fixed else lrs:
            names += [f"{m}__lr{lr:g}__s{s}.npz" for s in range(cfg.seeds)]
    return names


def study_shard_task(cfg, i: int, n: int, parts: dict, cwd: str | None = None) -> dict:
    """Run shard ``i/n`` of the study in a folder of its own that holds ``parts`` (name to bytes,
    the parts of its jobs trained so far); returns the parts it wrote (name to bytes)."""
    from .experiments.study import run_study

    _enter(cwd)
    tmp = Path(tempfile.mkdtemp(prefix="fgpo-study-"))
    try:
        (tmp / "parts").mkdir()
        for name, data in parts.items():
            (tmp / "parts" / name).write_bytes(data)
        run_study(replace(cfg, out_dir=str(tmp), shard=f"{i}/{n}"), progress=False)
        return {
            p.name: p.read_bytes() for p in sorted((tmp / "parts").glob("*.npz")) if parts.get(p.name) != p.read_bytes()
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run_study_ray(cfg, address: str | None = None, progress: bool = True):
    """Run (or resume) the study on Ray: each (method, rate, seed) job a task (:func:`study_shard_task`,
    sent the job's part when there is one), each new part written to ``<out>/parts`` as it comes,
    then the study assembled here from its parts (a run without a shard; it trains nothing when
    every part is there). Returns the study's folder."""
    from tqdm import tqdm

    from .experiments.study import run_study
    from .experiments.study_inputs import study_lock

    if cfg.shard:
        raise ValueError("--shard is for several local processes; --executor ray splits the study itself")
    if cfg.seeds < 1:
        raise ValueError(f"--seeds must be positive, got {cfg.seeds}")
    names = study_parts(cfg)
    n = max(len(names), 1)
    out = Path(cfg.out_dir)
    parts_dir = out / "parts"
    with ray_session(address) as ray:
        parts_dir.mkdir(parents=True, exist_ok=True)
        with study_lock(out):
            task = ray.remote(num_cpus=max(cfg.threads, 1))(study_shard_task)
            pending = []
            for i in range(n):
                mine = [parts_dir / names[j] for j in range(i, len(names), n)]
                have = {p.name: p.read_bytes() for p in mine if p.is_file()}
                pending.append(task.remote(cfg, i, n, have, os.getcwd()))
            with tqdm(total=n, desc="study on Ray", unit="task", disable=not progress) as bar:
                while pending:
                    done, pending = ray.wait(pending, num_returns=1)
                    for name, data in _get(ray, done[0]).items():
                        _write_file(parts_dir / name, data, checksum=False)
                    bar.update()
    print(f"study: {n} Ray tasks done; assembling", file=sys.stderr)
    return run_study(cfg, progress=progress)
