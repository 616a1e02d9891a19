"""Dataset.pack_sequences / sluice.experimental.pack_sequences: Grain's packing."""

import numpy as np
import pytest

import sluice


def seqs_dataset(seqs, dtype=np.int64, targets=None):
    def gen():
        for i, s in enumerate(seqs):
            e = {"inputs": np.asarray(s, dtype)}
            if targets is not None:
                e["targets"] = np.asarray(targets[i], dtype)
            yield e

    sig = {"inputs": sluice.TensorSpec((None,), dtype)}
    if targets is not None:
        sig["targets"] = sluice.TensorSpec((None,), dtype)
    return sluice.Dataset.from_generator(gen, output_signature=sig)


CRAFTED = [[1, 2, 3, 4, 5], [11, 12, 13, 14, 15, 16], [21, 22, 23], [31, 32]]


def rows(ds):
    return [{k: v.tolist() for k, v in e.items()} for e in ds]


def test_first_fit_row_layout_and_names():
    ds = seqs_dataset(CRAFTED).pack_sequences(10, num_packing_bins=2, shuffle_bins=False)
    out = rows(ds)
    assert list(next(iter(ds)).keys()) == ["inputs", "inputs_segment_ids", "inputs_positions"]
    assert out[0] == {"inputs": [1, 2, 3, 4, 5, 21, 22, 23, 31, 32],
                      "inputs_segment_ids": [1, 1, 1, 1, 1, 2, 2, 2, 3, 3],
                      "inputs_positions": [0, 1, 2, 3, 4, 0, 1, 2, 0, 1]}
    assert out[1] == {"inputs": [11, 12, 13, 14, 15, 16, 0, 0, 0, 0],
                      "inputs_segment_ids": [1, 1, 1, 1, 1, 1, 0, 0, 0, 0],
                      "inputs_positions": [0, 1, 2, 3, 4, 5, 0, 0, 0, 0]}
    e = next(iter(ds))
    assert e["inputs_segment_ids"].dtype == np.int32 and e["inputs"].dtype == np.int64


def test_best_fit_differs_and_apply_form():
    ds = seqs_dataset(CRAFTED).apply(sluice.experimental.pack_sequences(
        10, algorithm="best_fit", num_packing_bins=2, shuffle_bins=False))
    out = rows(ds)
    assert out[0]["inputs"] == [1, 2, 3, 4, 5, 31, 32, 0, 0, 0]
    assert out[1]["inputs"] == [11, 12, 13, 14, 15, 16, 21, 22, 23, 0]
    assert out[1]["inputs_segment_ids"] == [1, 1, 1, 1, 1, 1, 2, 2, 2, 0]


def test_two_components_int32_feature_lengths_padding():
    ds = seqs_dataset([[1, 2], [3]], np.int32, targets=[[7, 8, 9], [10, 11, 12]])
    out = rows(ds.pack_sequences(6, num_packing_bins=1, feature_lengths={"inputs": 4},
                                 padding_value={"inputs": -1}))
    assert out == [{"inputs": [1, 2, 3, -1], "targets": [7, 8, 9, 10, 11, 12],
                    "inputs_segment_ids": [1, 1, 2, 0], "inputs_positions": [0, 1, 0, 0],
                    "targets_segment_ids": [1, 1, 1, 2, 2, 2],
                    "targets_positions": [0, 1, 2, 0, 1, 2]}]


def unpack(ds):
    out = []
    for e in ds:
        v, seg, pos = e["inputs"], e["inputs_segment_ids"], e["inputs_positions"]
        for sid in sorted(set(seg.tolist()) - {0}):
            mask = seg == sid
            assert pos[mask].tolist() == list(range(int(mask.sum())))
            out.append(v[mask].tolist())
    return sorted(out)


@pytest.mark.parametrize("algorithm", ["first_fit", "best_fit"])
def test_round_trip(algorithm):
    rng = np.random.default_rng(0)
    seqs = [rng.integers(1, 1000, size=rng.integers(1, 40)).tolist() for _ in range(200)]
    ds = seqs_dataset(seqs).pack_sequences(48, algorithm=algorithm, num_packing_bins=6, seed=3)
    assert unpack(ds) == sorted(seqs)


def test_save_restore_and_padding_stats():
    ds = seqs_dataset(CRAFTED * 5).pack_sequences(10, num_packing_bins=3)
    want = rows(ds)
    it = ds.iterator()
    first = [{k: v.tolist() for k, v in next(it).items()} for _ in range(2)]
    rest = rows(ds.iterator(state=it.save()))
    assert first + rest == want
    stats = it.stats()
    pack = [s for s in stats["stages"] if s["kind"] == "pack_sequences"][0]
    assert pack["tokens"] == 20
    assert 0 <= pack["padding_fraction"] <= 1
    assert pack["padding_fraction"] == pytest.approx(pack["padding_tokens"] / 20)


def test_errors():
    with pytest.raises(sluice.InvalidArgumentError, match="length must be"):
        seqs_dataset(CRAFTED).pack_sequences(0)
    with pytest.raises(sluice.InvalidArgumentError, match="algorithm"):
        seqs_dataset(CRAFTED).pack_sequences(8, algorithm="worst_fit")
    with pytest.raises(sluice.InvalidArgumentError, match="more than its row length 4"):
        list(seqs_dataset(CRAFTED).pack_sequences(4))
    out = rows(seqs_dataset([[1, 2, 3, 4, 5]]).pack_sequences(4, truncate=True))
    assert out[0]["inputs"] == [1, 2, 3, 4]
    strings = sluice.Dataset.from_tensor_slices({"t": [[b"a"], [b"b"]]})
    with pytest.raises(sluice.InvalidArgumentError, match="string"):
        strings.pack_sequences(4)
