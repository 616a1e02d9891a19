"""A language model's input pipeline, with sluice:

1. two corpora of token sequences (web text and code), mixed 70/30 with
   Dataset.sample_from_datasets (the same interleaving on every machine);
2. packed into fixed-length rows with Dataset.pack_sequences: per row the
   tokens, their segment ids (which sequence) and positions (within it), the
   layout MaxText and Grain train on;
3. batched, read for a few steps, checkpointed, and resumed with the
   mixture changed to 50/50: each corpus continues where it was.

    python language_model_input.py
    python language_model_input.py --row-length 128 --batches 5
"""

import argparse

import numpy as np

import sluice


def corpus(n, first, stride):
    """n sequences of 3..50 tokens each, tokens counting up from `first`."""
    lengths = [3 + (i * stride) % 48 for i in range(n)]
    return sluice.Dataset.from_generator(
        lambda: ({"inputs": np.arange(first, first + k, dtype=np.int32)} for k in lengths),
        output_signature={"inputs": sluice.TensorSpec([None], sluice.int32)})


def pipeline(weights, row_length):
    mixed = sluice.Dataset.sample_from_datasets(
        [corpus(400, 1000, 7), corpus(400, 5000, 11)], weights, seed=1)
    return mixed.pack_sequences(row_length, algorithm="best_fit").batch(4, drop_remainder=True)


def describe(row_tokens, row_segments):
    """'W'/'C' where a web/code sequence starts, 'w'/'c' inside it, '.' padding."""
    out, last = [], 0
    for token, segment in zip(row_tokens.tolist(), row_segments.tolist()):
        if segment == 0:
            out.append(".")
        else:
            letter = "c" if token >= 5000 else "w"
            out.append(letter.upper() if segment != last else letter)
        last = segment
    return "".join(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--row-length", type=int, default=64, help="tokens per packed row")
    parser.add_argument("--batches", type=int, default=3, help="batches before the checkpoint")
    args = parser.parse_args()

    rows = pipeline([0.7, 0.3], args.row_length)
    it = rows.iterator()
    for b in range(args.batches):
        batch = next(it)
        print(f"batch {b}: inputs {list(batch['inputs'].shape)}, "
              f"segments up to {int(batch['inputs_segment_ids'].max())} per row")
        print("  row 0:", describe(batch["inputs"][0], batch["inputs_segment_ids"][0]))
    pack = [s for s in it.stats()["stages"] if s["kind"] == "pack_sequences"][0]
    print(f"packing: {100 * pack['padding_fraction']:.1f}% padding of {pack['tokens']} tokens")

    state = it.save()
    resumed = pipeline([0.5, 0.5], args.row_length).iterator(state=state)
    rest = sum(1 for _ in resumed)
    print(f"checkpoint: {len(state)} bytes; resumed with weights 0.5/0.5: {rest} more batches")


if __name__ == "__main__":
    main()
