"""Run a trajkit pipeline file over Ray: one task per partition, then `merge-manifests`.

    python -m trajkit.ray PIPELINE.toml --partitions N [--address ADDR] [--by path|id]

or, from Python, `trajkit.ray.run_pipeline("pipeline.toml", partitions=N)`.

Each task runs `trajkit run PIPELINE --partition I/N --partition-by BY --progress json --resume`
on a Ray worker. Every worker must see the pipeline file, its inputs and its outputs at the
same paths (a shared filesystem). A task whose `trajkit` exits with an I/O error (3) or is
killed is retried by Ray up to `max_retries` times; `--resume` makes the retry finish or
replace that partition's own partial files (`part-I-of-N`), never another partition's. Exit
codes 1 (reject rate exceeded) and 2 (refused) are not retried: they would fail again.

See docs/python.md.
"""

import argparse
import json
import os
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field

import trajkit

__all__ = ["run_pipeline", "RayRun", "PipelineRefused", "TrajkitFailed", "PartitionFailed",
           "RayMissing", "main"]

RAY_PACKAGE = "ray"


class RayMissing(RuntimeError):
    """Ray is not installed in this environment."""


class PipelineRefused(RuntimeError):
    """The pipeline file failed `trajkit run --check` (or its inputs could not be listed);
    no task was started. `output` is trajkit's stderr, `code` its exit code."""

    def __init__(self, message, output, code):
        super().__init__(message, output, code)
        self.output = output
        self.code = code

    def __str__(self):
        return f"{self.args[0]}:\n{self.output.rstrip()}"


class TrajkitFailed(RuntimeError):
    """A trajkit command the driver ran failed: `step` says which (`partition 1/4`,
    `merge-manifests`), `code` is its exit code (negative: killed by that signal), `stderr`
    what it printed besides progress."""

    def __init__(self, step, code, stderr):
        super().__init__(step, code, stderr)
        self.step = step
        self.code = code
        self.stderr = stderr

    def __str__(self):
        how = f"exit code {self.code}" if self.code >= 0 else f"killed by signal {-self.code}"
        return f"{self.step} failed ({how}):\n{self.stderr.rstrip()}"


class PartitionFailed(TrajkitFailed):
    """A partition's `trajkit run` failed for good (after Ray's retries); `partition` is `I/N`."""

    def __init__(self, partition, code, stderr):
        super().__init__(partition, code, stderr)
        self.partition = partition

    def __str__(self):
        return f"partition {super().__str__()}"


class _Transient(PartitionFailed):
    """A failure worth retrying: an I/O error (exit 3) or a killed process."""


@dataclass
class RayRun:
    """What `run_pipeline` did."""

    #: `path` or `id`: what the partitions were chosen by.
    by: str
    #: The number of partitions.
    partitions: int
    #: The inputs of the whole run (globs and directories expanded).
    inputs: list
    #: The export directories whose manifests were merged.
    exports: list
    #: Per partition, in order: its last `--progress json` line (`done: true`: the stages'
    #: in, written, filtered, rejected and seconds, records and bytes read).
    progress: list = field(default_factory=list)
    #: What `merge-manifests` printed.
    merge_output: str = ""


def _import_ray():
    try:
        import ray  # the top-level Ray package (absolute import), loaded only when needed
    except ImportError as e:
        raise RayMissing(
            f"Ray is not installed: pip install '{RAY_PACKAGE}' (or pip install 'trajkit[ray]') "
            f"to run pipelines on Ray ({e})"
        ) from None
    return ray


def _trajkit(exe, args):
    """Runs `exe ARGS` on the driver; returns (exit code, stdout, stderr)."""
    p = subprocess.run([exe, *args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def _file_partition_by(pipeline):
    """`[partition] by` when the pipeline file sets it. trajkit reads TOML 1.1 and Python's
    tomllib 1.0: a file only trajkit reads counts as not setting it (pass `by` then)."""
    with open(pipeline, "rb") as f:
        try:
            return tomllib.load(f).get("partition", {}).get("by")
        except tomllib.TOMLDecodeError:
            return None


def choose_by(inputs, partitions, given=None, in_file=None):
    """What to partition by: `given` (the caller's), else the pipeline file's `[partition] by`,
    else `path` when the inputs outnumber the partitions (each partition reads only its own
    files) and `id` otherwise (every partition reads every input and keeps its share of the
    trajectories: the way to split a few big files)."""
    if given:
        return given
    if in_file:
        return in_file
    return "path" if inputs > partitions else "id"


def _partition(exe, pipeline, index, count, by, threads):
    """One Ray task: `trajkit run` for partition INDEX/COUNT. Returns its last progress line;
    raises `_Transient` (retried) or `PartitionFailed`."""
    spec = f"{index}/{count}"
    cmd = [exe, "run", pipeline, "--partition", spec, "--partition-by", by, "--progress", "json",
           "--resume", "--threads", str(threads)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    last, other = None, []
    for line in proc.stderr:
        if line.startswith('{"progress"'):
            try:
                last = json.loads(line)
            except ValueError:
                other.append(line)
                continue
            # Ray forwards a task's stderr to the driver: live progress, one line per partition.
            print(f"trajkit partition {spec}: {line}", end="", file=sys.stderr, flush=True)
        else:
            other.append(line)
    code = proc.wait()
    if code == 0:
        return last
    failure = _Transient if code < 0 or code == 3 else PartitionFailed
    raise failure(spec, code, "".join(other))


def run_pipeline(pipeline, partitions, *, by=None, address=None, binary=None, max_retries=3,
                 cpus_per_task=1):
    """Runs PIPELINE (a trajkit pipeline file) as PARTITIONS Ray tasks and merges their
    manifests; returns a `RayRun`.

    `by`: `path` or `id`; by default the pipeline file's `[partition] by`, else `path` when the
    inputs outnumber the partitions and `id` otherwise. `address`: the Ray cluster to connect
    to when Ray is not initialized yet (`ray.init(address=...)`; None starts a local Ray or
    uses RAY_ADDRESS). `binary`: the `trajkit` executable the tasks run (default: the
    TRAJKIT_BINARY environment variable, else `trajkit.binary()`); it must exist at that path
    on every worker. `max_retries`: Ray's retries of a partition killed or failing with an I/O
    error. `cpus_per_task`: the CPUs each task reserves and the threads its `trajkit` uses.

    Raises RayMissing, PipelineRefused (nothing started), PartitionFailed (a partition failed
    for good; nothing merged) or TrajkitFailed (`merge-manifests` refused).
    """
    ray = _import_ray()
    if partitions < 1:
        raise ValueError("partitions must be at least 1")
    exe = binary or os.environ.get("TRAJKIT_BINARY") or trajkit.binary()
    pipeline = os.path.abspath(pipeline)
    spec0 = ["--partition", f"0/{partitions}"]
    code, _, err = _trajkit(exe, ["run", pipeline, "--check", *spec0])
    if code != 0:
        raise PipelineRefused(f"{pipeline} fails `trajkit run --check`", err, code)
    code, out, err = _trajkit(exe, ["run", "-q", pipeline, "--list-inputs"])
    if code != 0:
        raise PipelineRefused(f"the inputs of {pipeline} cannot be listed", err, code)
    inputs = out.splitlines()
    code, out, err = _trajkit(exe, ["run", pipeline, "--print-config", "--json"])
    if code != 0:
        raise PipelineRefused(f"{pipeline}: --print-config failed", err, code)
    exports = [e["output"] for e in json.loads(out).get("export", [])]
    chosen = choose_by(len(inputs), partitions, by, _file_partition_by(pipeline))

    if not ray.is_initialized():
        ray.init(address=address)
    task = ray.remote(_partition).options(
        num_cpus=cpus_per_task, max_retries=max_retries, retry_exceptions=[_Transient]
    )
    refs = [task.remote(exe, pipeline, i, partitions, chosen, cpus_per_task)
            for i in range(partitions)]
    results, failures = [], []
    for i, ref in enumerate(refs):
        try:
            results.append(ray.get(ref))
        except ray.exceptions.RayError as e:
            # A task's own failure, or Ray's (a worker lost more times than retried).
            cause = getattr(e, "cause", None)
            if not isinstance(cause, PartitionFailed):
                cause = PartitionFailed(f"{i}/{partitions}", 3, str(e))
            failures.append(cause)
    if failures:
        raise failures[0]
    code, _, err = _trajkit(exe, ["merge-manifests", *exports])
    if code != 0:
        raise TrajkitFailed("merge-manifests", code, err)
    return RayRun(by=chosen, partitions=partitions, inputs=inputs, exports=exports,
                  progress=results, merge_output=err)


def _exit_code(e):
    """trajkit's exit code for a refused file or a failed partition (3 when it was killed), 2
    for Ray or the executable missing."""
    code = getattr(e, "code", 2)
    if code < 0:
        return 3
    return code or 2


def main(argv=None):
    """`python -m trajkit.ray`: returns the exit code (0, trajkit's own for a failed partition
    or a refused file, 2 for Ray missing)."""
    ap = argparse.ArgumentParser(
        prog="python -m trajkit.ray",
        description="Run a trajkit pipeline file as N Ray tasks (one per partition) on storage "
                    "every worker sees, then merge the exports' manifests.")
    ap.add_argument("pipeline", help="the pipeline file (TOML)")
    ap.add_argument("--partitions", type=int, required=True, metavar="N")
    ap.add_argument("--address", help="the Ray cluster (default: RAY_ADDRESS, else a local Ray)")
    ap.add_argument("--by", choices=["path", "id"],
                    help="the partition key (default: the file's [partition] by, else path when "
                         "the inputs outnumber the partitions, else id)")
    ap.add_argument("--max-retries", type=int, default=3, metavar="R",
                    help="retries of a partition killed or failing with an I/O error (default 3)")
    ap.add_argument("--cpus-per-task", type=int, default=1, metavar="C",
                    help="CPUs each task reserves and trajkit threads it runs (default 1)")
    a = ap.parse_args(argv)
    try:
        run = run_pipeline(a.pipeline, a.partitions, by=a.by, address=a.address,
                           max_retries=a.max_retries, cpus_per_task=a.cpus_per_task)
    except (RayMissing, PipelineRefused, TrajkitFailed, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return _exit_code(e)
    sys.stderr.write(run.merge_output)
    total = {}
    for p in run.progress:
        for s in (p or {}).get("stages", []):
            t = total.setdefault(s["stage"], [0, 0, 0, 0])
            for k, key in enumerate(["in", "written", "filtered", "rejected"]):
                t[k] += s.get(key, 0)
    for stage, (n_in, written, filtered, rejected) in total.items():
        print(f"ray: {stage} (all partitions): {n_in} in, {written} written, {filtered} "
              f"filtered, {rejected} rejected", file=sys.stderr)
    print(f"ray: {run.partitions} partitions by {run.by} over {len(run.inputs)} inputs; merged "
          f"{', '.join(run.exports)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    from trajkit.ray import main as _main  # the module by its name, so Ray pickles by reference

    sys.exit(_main())
