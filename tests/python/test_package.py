"""Tests of the installed Python package: `trajkit.binary()` and the Ray driver.

Run by scripts/test-python.sh with the python of a fresh virtual environment holding the wheel,
Ray, pyarrow and `datasets`: `python -m unittest discover -s tests/python -v` from the
repository root. One local Ray (2 CPUs, no dashboard) serves every test. The corpus tests read
../shared/corpus/adp (or $TRAJKIT_SHARED/corpus/adp); they skip without it, and fail when CI
is set.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import trajkit
import trajkit.ray

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("TRAJKIT_SHARED", REPO.parent / "shared"))


def setUpModule():
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)


def tearDownModule():
    import ray

    ray.shutdown()


def adp_corpus():
    d = SHARED / "corpus" / "adp"
    if d.is_dir():
        return d
    if os.environ.get("CI"):
        raise AssertionError(f"the shared corpus is missing at {d} but CI is set")
    raise unittest.SkipTest(f"no shared corpus at {d}")


def run(*args, **kw):
    return subprocess.run([trajkit.binary(), *map(str, args)], capture_output=True, text=True,
                          **kw)


def corpus_pipeline(out):
    return (f'[[input]]\npath = "{adp_corpus()}/*/sample_std.json"\nformat = "adp"\n\n'
            '[validate]\nmax_reject_rate = 1.0\n\n'
            f'[[export]]\nto = "parquet"\noutput = "{out}/parquet"\n'
            'split = "train=0.7,validation=0.3"\n\n'
            f'[[export]]\nto = "sharegpt"\noutput = "{out}/sharegpt"\n'
            'split = "train=0.7,validation=0.3"\n')


def rows(export, split):
    """The rows of `split` in an export directory, sorted, as JSON text."""
    import pyarrow.parquet as pq

    out = []
    for f in sorted((export / "data").glob(f"{split}-*")):
        if f.suffix == ".parquet":
            out += [json.dumps(r, sort_keys=True, default=str) for r in pq.read_table(f).to_pylist()]
        else:
            out += [line for line in f.read_text(encoding="utf-8").splitlines() if line]
    return sorted(out)


class Package(unittest.TestCase):
    def test_binary_is_the_bundled_executable_of_the_package_version(self):
        exe = Path(trajkit.binary())
        self.assertEqual(exe.parent, Path(sys.executable).parent, "the venv's scripts")
        out = run("--version")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn(trajkit.__version__, out.stdout)

    def test_python_m_trajkit_runs_it(self):
        out = subprocess.run([sys.executable, "-m", "trajkit", "formats"], capture_output=True,
                             text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("claude-code", out.stdout)


class RayDriver(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="trajkit-ray-"))
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)

    def single_run(self):
        """The corpus pipeline run once, unpartitioned, into tmp/one."""
        f = self.tmp / "one.toml"
        f.write_text(corpus_pipeline(self.tmp / "one"))
        out = run("run", "-q", f)
        self.assertEqual(out.returncode, 0, out.stderr)
        return self.tmp / "one"

    def assert_same_rows(self, one, merged):
        for target in ["parquet", "sharegpt"]:
            for split in ["train", "validation"]:
                want = rows(one / target, split)
                self.assertTrue(want, f"{target} {split} has rows")
                self.assertEqual(rows(merged / target, split), want, f"{target} {split}")
            m = json.loads((merged / target / "manifest.json").read_text())
            self.assertEqual(m["partition"], {"count": 4, "by": "path"})

    def test_four_partitions_merged_hold_the_rows_of_one_run(self):
        one = self.single_run()
        merged = self.tmp / "ray"
        f = self.tmp / "ray.toml"
        f.write_text(corpus_pipeline(merged))
        result = trajkit.ray.run_pipeline(f, partitions=4)
        self.assertEqual(result.by, "path", "17 inputs outnumber 4 partitions")
        self.assertEqual(len(result.inputs), 17)
        self.assertEqual(len(result.progress), 4)
        self.assertTrue(all(p["done"] for p in result.progress))
        self.assert_same_rows(one, merged)
        # The merged directories load like one export.
        import datasets
        import pyarrow.parquet as pq

        manifest = json.loads((merged / "parquet" / "manifest.json").read_text())
        table = pq.ParquetDataset(merged / "parquet" / "data").read()
        self.assertEqual(table.num_rows, manifest["counts"]["written"])
        for target in ["parquet", "sharegpt"]:
            m = json.loads((merged / target / "manifest.json").read_text())
            ds = datasets.load_dataset(str(merged / target),
                                       cache_dir=str(self.tmp / "hf-cache"))
            for s in m["splits"]:
                self.assertEqual(ds[s["name"]].num_rows, s["rows"], f"{target} {s['name']}")

    def test_a_killed_partition_is_retried_and_replaces_only_its_partial_output(self):
        one = self.single_run()
        merged = self.tmp / "ray"
        f = self.tmp / "ray.toml"
        f.write_text(corpus_pipeline(merged))
        # Partition 1's first attempt leaves a partial shard of its own, as a run killed while
        # writing does, and dies of SIGKILL; the retry runs the real binary.
        marker = self.tmp / "partition-1-failed-once"
        partial = merged / "parquet" / "data" / ".train-part-00001-of-00004-00000.partial"
        wrapper = self.tmp / "flaky-trajkit"
        wrapper.write_text(
            "#!/bin/sh\n"
            'case " $* " in *" --partition 1/4 "*)\n'
            f'  if mkdir "{marker}" 2>/dev/null; then\n'
            f'    mkdir -p "{partial.parent}" && echo junk > "{partial}"\n'
            '    kill -KILL $$\n'
            "  fi;;\n"
            "esac\n"
            f'exec "{trajkit.binary()}" "$@"\n')
        wrapper.chmod(0o755)
        result = trajkit.ray.run_pipeline(f, partitions=4, binary=str(wrapper), max_retries=1)
        self.assertTrue(marker.is_dir(), "the first attempt failed")
        self.assertFalse(partial.exists(), "the retry removed its partial shard")
        self.assertEqual(len(result.progress), 4)
        self.assert_same_rows(one, merged)

    def test_a_partition_that_fails_for_good_fails_the_run_with_its_stderr(self):
        merged = self.tmp / "ray"
        f = self.tmp / "ray.toml"
        f.write_text(corpus_pipeline(merged))
        wrapper = self.tmp / "broken-trajkit"
        wrapper.write_text(
            "#!/bin/sh\n"
            'case " $* " in *" --partition 2/4 "*) echo "disk on fire" >&2; exit 3;; esac\n'
            f'exec "{trajkit.binary()}" "$@"\n')
        wrapper.chmod(0o755)
        with self.assertRaises(trajkit.ray.PartitionFailed) as e:
            trajkit.ray.run_pipeline(f, partitions=4, binary=str(wrapper), max_retries=1)
        self.assertEqual((e.exception.partition, e.exception.code), ("2/4", 3))
        self.assertIn("disk on fire", str(e.exception))
        self.assertFalse((merged / "parquet" / "manifest.json").exists(), "nothing merged")

    def test_a_file_failing_check_is_refused_before_any_task(self):
        f = self.tmp / "bad.toml"
        out_dir = self.tmp / "out"
        f.write_text(f'[[input]]\npath = "{REPO}/sample_data/adp"\n\n'
                     f'[[export]]\nto = "adp"\noutput = "{out_dir}"\nshard_rowz = 3\n')
        cmd = [sys.executable, "-m", "trajkit.ray", str(f), "--partitions", "2"]
        out = subprocess.run(cmd, capture_output=True, text=True)
        self.assertEqual(out.returncode, 2, out.stderr)
        self.assertIn("fails `trajkit run --check`", out.stderr)
        self.assertIn("shard_rowz", out.stderr)
        self.assertFalse(out_dir.exists(), "no task ran")

    def test_without_ray_the_driver_names_the_package_to_install(self):
        code = ("import sys; sys.modules['ray'] = None; from trajkit.ray import main; "
                "sys.exit(main(['p.toml', '--partitions', '2']))")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        self.assertEqual(out.returncode, 2, out.stderr)
        self.assertIn("Ray is not installed: pip install 'ray'", out.stderr)

    def test_by_path_when_inputs_outnumber_partitions(self):
        choose = trajkit.ray.choose_by
        self.assertEqual(choose(17, 4), "path")
        self.assertEqual(choose(4, 4), "id")
        self.assertEqual(choose(1, 8), "id")
        self.assertEqual(choose(17, 4, in_file="id"), "id")
        self.assertEqual(choose(1, 4, given="path", in_file="id"), "path")


if __name__ == "__main__":
    unittest.main()
