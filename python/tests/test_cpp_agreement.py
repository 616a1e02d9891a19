"""The Python API builds the same pipelines as the C++ API: the same elements
in the same order for the same seeds (reference_pipelines.cc prints the C++
side; ctest sets SLUICE_BUILD_DIR)."""

import json
import os
import subprocess

import numpy as np
import pytest

import sluice


def python_pipelines():
    D = sluice.Dataset
    return {
        "shuffle": D.range(100).shuffle(50, seed=3),
        "global_shuffle": D.range(64).global_shuffle(seed=9),
        "map_shuffle_batch": D.range(40).map(lambda x: x * x, num_parallel_calls=sluice.AUTOTUNE)
                                        .shuffle(16, seed=5).batch(6),
        "interleave": D.range(4).interleave(lambda x: D.range(x * 10, x * 10 + 3),
                                            cycle_length=2, block_length=2),
        "shard": D.range(20).global_shuffle(seed=1).shard(3, 1),
        "options_seed": D.range(30).shuffle(30).with_options(seed=11),
        "repeat_reshuffle": D.range(10).shuffle(10, seed=4).repeat(3),
        "distribute": D.range(20).global_shuffle(seed=2).distribute((1, 3)),
    }


def flat(ds):
    out = []
    for e in ds:
        for v in (e if isinstance(e, tuple) else (e,)):
            out.extend(np.asarray(v).reshape(-1).tolist())
    return out


@pytest.fixture(scope="module")
def cpp():
    build = os.environ.get("SLUICE_BUILD_DIR")
    exe = os.path.join(build or "", "python", "reference_pipelines")
    if not build or not os.path.exists(exe):
        pytest.skip("reference_pipelines not built (SLUICE_BUILD_DIR unset)")
    out = subprocess.run([exe], capture_output=True, text=True, timeout=120, check=True).stdout
    return {r["name"]: r["values"] for r in map(json.loads, out.splitlines())}


@pytest.mark.parametrize("name", sorted(python_pipelines()))
def test_same_elements_in_the_same_order_as_cpp(cpp, name):
    assert flat(python_pipelines()[name]) == cpp[name]
