"""Dataset-level classification metrics: evaltrace vs scikit-learn on the same data.

Run with the benchmark environment (scikit-learn is not a project dependency):

    python3 -m venv .venv-bench
    .venv-bench/bin/pip install -e . scikit-learn
    .venv-bench/bin/python bench/bench_classification.py

It builds N (expected, predicted) pairs over 20 classes (seeded, about 80% correct), then times,
best of R runs each, in the same process:

* ours: ``ClassificationDatasetEvaluator.evaluate(pairs)`` for a macro-F1 spec, which computes
  the per-class counts and ratios, micro and macro averages and the confusion matrix at once;
* sklearn: ``precision_recall_fscore_support(y_true, y_pred, labels=classes,
  average=None)`` (per class) and the same call with ``average="macro"``.

The ratio ours/sklearn is printed against the per-class call alone (the stricter comparison) and
against the two calls together. For context it also prints sklearn's time on the same labels
already converted to numpy string and integer arrays (conversion not timed), and ours on lists
instead of tuples (the slower path that inspects every item).

The script fails (exit 1) when any per-class or averaged value differs from sklearn's by more
than 1e-12, when the confusion matrix is not the transpose of sklearn's, or when ours is slower
than the per-class call (goal: ratio <= 1.0).
"""

from __future__ import annotations

import platform
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

try:  # bench/requirements.txt, which `python3 dev.py bench` installs
    import sklearn
    from sklearn.metrics import confusion_matrix, precision_recall_fscore_support
except ImportError:
    sklearn = None

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import parser, positive
from evaltrace.metrics import (
    ClassificationDetails,
    FScoreAggregatorSpec,
    build_dataset_evaluator,
)

TOLERANCE = 1e-12


def make_pairs(n: int, n_classes: int, accuracy: float, seed: int) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    classes = [f"class_{i:02d}" for i in range(n_classes)]
    expected = [rng.choice(classes) for _ in range(n)]
    predicted = [e if rng.random() < accuracy else rng.choice(classes) for e in expected]
    return expected, predicted


def best_of(repeats: int, func: Callable[[], Any]) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = func()
        best = min(best, time.perf_counter() - start)
    return best, result


def check_close(what: str, ours: float, theirs: float, failures: list[str]) -> None:
    if abs(ours - theirs) > TOLERANCE:
        failures.append(f"{what}: ours {ours!r} != sklearn {theirs!r}")


def main() -> int:
    command = parser(__doc__)
    command.add_argument("--n", type=positive, default=1_000_000, help="number of pairs")
    command.add_argument("--classes", type=positive, default=20, help="number of classes")
    command.add_argument("--repeats", type=positive, default=3, help="best of this many runs")
    command.add_argument("--seed", type=int, default=20240601)
    args = command.parse_args()
    if sklearn is None:
        command.error("scikit-learn is missing: run python3 dev.py bench classification")

    expected, predicted = make_pairs(args.n, args.classes, accuracy=0.8, seed=args.seed)
    classes = sorted(set(expected) | set(predicted))
    pairs = list(zip(expected, predicted, strict=True))
    evaluator = build_dataset_evaluator(FScoreAggregatorSpec(classes=classes), "bench")

    ours_time, ours = best_of(args.repeats, lambda: evaluator.evaluate(pairs))
    fallback_pairs = [[e, p] for e, p in pairs]
    fallback_time, _ = best_of(args.repeats, lambda: evaluator.evaluate(fallback_pairs))
    none_time, per_class = best_of(
        args.repeats,
        lambda: precision_recall_fscore_support(
            expected, predicted, labels=classes, average=None, zero_division=0
        ),
    )
    macro_time, macro = best_of(
        args.repeats,
        lambda: precision_recall_fscore_support(
            expected, predicted, labels=classes, average="macro", zero_division=0
        ),
    )
    # For context only: sklearn on data already converted to numpy (conversion not timed).
    expected_str, predicted_str = np.array(expected), np.array(predicted)
    numpy_str_time, _ = best_of(
        args.repeats,
        lambda: precision_recall_fscore_support(
            expected_str, predicted_str, labels=classes, average=None, zero_division=0
        ),
    )
    index_of = {name: i for i, name in enumerate(classes)}
    expected_int = np.array([index_of[e] for e in expected])
    predicted_int = np.array([index_of[p] for p in predicted])
    numpy_int_time, _ = best_of(
        args.repeats,
        lambda: precision_recall_fscore_support(
            expected_int,
            predicted_int,
            labels=list(range(len(classes))),
            average=None,
            zero_division=0,
        ),
    )
    micro = precision_recall_fscore_support(
        expected, predicted, labels=classes, average="micro", zero_division=0
    )
    sk_matrix = confusion_matrix(expected, predicted, labels=classes)

    details = ours.details
    assert isinstance(details, ClassificationDetails)
    failures: list[str] = []
    sk_precision, sk_recall, sk_f1, sk_support = per_class
    for i, name in enumerate(classes):
        mine = details.per_class[name]
        check_close(f"{name} precision", mine.precision, float(sk_precision[i]), failures)
        check_close(f"{name} recall", mine.recall, float(sk_recall[i]), failures)
        check_close(f"{name} f1", mine.f_score, float(sk_f1[i]), failures)
        if mine.support != int(sk_support[i]):
            failures.append(f"{name} support: ours {mine.support} != sklearn {sk_support[i]}")
    for label, averaged, theirs in (
        ("macro", details.macro, macro),
        ("micro", details.micro, micro),
    ):
        check_close(f"{label} precision", averaged.precision, float(theirs[0]), failures)
        check_close(f"{label} recall", averaged.recall, float(theirs[1]), failures)
        check_close(f"{label} f1", averaged.f_score, float(theirs[2]), failures)
    check_close("headline (macro F1)", ours.score, float(macro[2]), failures)
    if not np.array_equal(np.array(details.confusion_matrix), sk_matrix.T):
        failures.append("confusion matrix is not the transpose of sklearn's [true][pred]")

    ratio_single = ours_time / none_time
    ratio_both = ours_time / (none_time + macro_time)
    print(
        f"python {platform.python_version()}, scikit-learn {sklearn.__version__}, "
        f"numpy {np.__version__}, {platform.machine()}"
    )
    print(f"{args.n:,} pairs, {len(classes)} classes, best of {args.repeats}")
    print(f"  evaltrace evaluate (tuples, macro F1)      {ours_time * 1000:9.1f} ms")
    print(f"  evaltrace evaluate (lists, fallback path)  {fallback_time * 1000:9.1f} ms")
    print(f"  sklearn prfs average=None                  {none_time * 1000:9.1f} ms")
    print(f"  sklearn prfs average='macro'               {macro_time * 1000:9.1f} ms")
    print("  context (sklearn on pre-converted numpy arrays, conversion not timed):")
    print(f"    sklearn prfs average=None, str arrays    {numpy_str_time * 1000:9.1f} ms")
    print(f"    sklearn prfs average=None, int arrays    {numpy_int_time * 1000:9.1f} ms")
    print(f"  ratio ours / sklearn(average=None)         {ratio_single:9.3f}")
    print(f"  ratio ours / sklearn(None + macro)         {ratio_both:9.3f}")
    print(f"  max |difference| allowed                   {TOLERANCE:9.0e}")
    if failures:
        print("MISMATCH with sklearn:\n  " + "\n  ".join(failures))
        return 1
    print("  results equal sklearn's per class, macro and micro; matrix is sklearn's transposed")
    if ratio_single > 1.0:
        print("GOAL MISSED: ours is slower than sklearn's per-class call")
        return 1
    print("  goal met: ratio <= 1.0")
    return 0


if __name__ == "__main__":
    sys.exit(main())
