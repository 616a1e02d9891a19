"""The Python samples (python/samples/) run, each on its small built-in data."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import sluice

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


def run(name, *args):
    env = dict(os.environ)
    # The sluice this test imported, whichever way it was found (its files may be
    # links into the source tree: not resolved).
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(sluice.__file__)))
    env["PYTHONPATH"] = os.pathsep.join([package_root, env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, str(SAMPLES / name), *args], env=env,
                          capture_output=True, text=True, timeout=300)


def has_torch():
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.parametrize("name", ["cats_vs_dogs.py", "tfrecord.py", "file_formats.py",
                                  "language_model_input.py", "object_store.py"])
def test_help(name):
    r = run(name, "--help")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("usage:")


def test_cats_vs_dogs():
    r = run("cats_vs_dogs.py", "--epochs", "1")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "train: 6 batches of 16, valid: 2" in r.stdout
    if has_torch():
        assert "valid: sparse_categorical_accuracy" in r.stdout
    else:
        assert "torch is not installed" in r.stdout and "96 images" in r.stdout


def sluice_cli():
    path = Path(os.environ.get("SLUICE_BUILD_DIR", "/nonexistent")) / "tools" / "sluice"
    return str(path) if path.is_file() else None


def test_tfrecord():
    try:
        import sluice.io  # noqa: F401
        args = []
    except ImportError:
        if sluice_cli() is None:
            pytest.skip("no sluice.io and no $SLUICE_BUILD_DIR/tools/sluice to write records")
        args = ["--sluice", sluice_cli()]
    r = run("tfrecord.py", "--epochs", "1", *args)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "wrote 96 Examples" in r.stdout
    assert "6 batches; the first: images (16, 64, 64, 3) float32" in r.stdout
    if has_torch():
        assert "epoch 1/1: loss" in r.stdout


def test_file_formats():
    r = run("file_formats.py")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "text: 3 lines, the first b'GET /a 200'" in r.stdout
    assert "csv: batch of 4: columns ['age', 'fare', 'name'], labels [0, 1, 0, 1]" in r.stdout
    assert "csv: 10 rows; the last: age 29.0, name b'passenger, 9'" in r.stdout
    assert "webdataset: 2 shards, 10 samples" in r.stdout
    assert "numpy: 10 batches of 8 windows of 129 tokens; resumed at batch 2 exactly" in r.stdout


def test_language_model_input():
    r = run("language_model_input.py")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "batch 0: inputs [4, 64]" in r.stdout
    assert "% padding of " in r.stdout
    assert "resumed with weights 0.5/0.5:" in r.stdout


def test_object_store_on_a_local_folder(tmp_path):
    r = run("object_store.py", str(tmp_path / "demo"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "glob matched 4" in r.stdout
    assert "epoch 2: 1024 examples, label sum 523776" in r.stdout
    assert "512 examples left, the same as without the checkpoint" in r.stdout
