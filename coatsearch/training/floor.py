"""The fair linear floor: the best linear classifier on a score's own training images, chosen on validation images.

A regime guard asks whether a network learns more than a linear classifier on the pixels. Trained with the
space's recipe (RandAugment, label smoothing, a short schedule), the linear model is a crippled floor: on 5,000
Fashion-MNIST images it reads about 67% where an L2-tuned logistic regression reads about 82%. So the floor is the
better, on the validation images, of that recipe run and an L2 path of multinomial logistic regressions without
augmentation (scikit-learn, lbfgs, warm-started from strong to weak regularization); the test images never
choose, they only read the chosen classifier.
"""

from __future__ import annotations

import copy
import warnings
from dataclasses import dataclass

import numpy as np

from coatsearch.training.data import TensorData

C_GRID = (1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3, 1.0)  # inverse L2 strengths, strong to weak (warm-started path)
_MAX_ITER = 200  # lbfgs iterations per fit; warm starts converge within it on Fashion-MNIST-sized inputs
SELECT_MAX = 12_000  # training images the L2 path is fitted on to choose C; a larger set refits the chosen C on all
# of them (a 60,000-image path cost 20 CPU-minutes on one core, 7 fits of up to _MAX_ITER lbfgs steps)
RECIPE = "recipe"  # Floor.choice when the space's own recipe run read better on the validation images


@dataclass(frozen=True)
class Floor:
    """The chosen linear classifier: its validation and test accuracy (fractions) and what was chosen."""

    val_acc: float
    test_acc: float
    choice: str  # "C=0.03" (the L2 path's pick) or RECIPE


def _xy(data: TensorData) -> tuple[np.ndarray, np.ndarray]:
    return data.x.flatten(1).double().numpy(), data.y.numpy()


def _l2_path(train: TensorData, validation: TensorData, test: TensorData) -> list[Floor]:
    """One Floor per C of C_GRID: logistic regression on the flattened pixels, no augmentation. On more than
    SELECT_MAX training images the path runs on a class-balanced SELECT_MAX of them (chosen by a fixed seed) and the
    C best on the validation images is refit on all of them, warm-started: that refit is the path's last Floor,
    named "C=<c>, all <n>" (more data only helps a linear model at a fixed C, so it is the floor)."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    (x, y), (xv, yv), (xt, yt) = _xy(train), _xy(validation), _xy(test)
    chosen = _balanced(y, SELECT_MAX) if len(y) > SELECT_MAX else None
    model = LogisticRegression(max_iter=_MAX_ITER, warm_start=True)
    out, fits = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # a warm-started step may stop at _MAX_ITER: still read
        for c in C_GRID:
            model.set_params(C=c).fit(x if chosen is None else x[chosen], y if chosen is None else y[chosen])
            out.append(Floor(float(model.score(xv, yv)), float(model.score(xt, yt)), f"C={c:g}"))
            fits.append(copy.deepcopy(model) if chosen is not None else None)
        if chosen is not None:  # the C best on validation, from its subsample solution on to all images
            best = max(range(len(C_GRID)), key=lambda i: out[i].val_acc)  # max keeps the first of equals
            kept = fits[best]
            assert kept is not None  # chosen: every C's fit was kept
            full = kept.fit(x, y)
            out.append(Floor(float(full.score(xv, yv)), float(full.score(xt, yt)), f"C={C_GRID[best]:g}, all {len(y)}"))
    return out


def _balanced(y: np.ndarray, n: int) -> np.ndarray:
    """Indices of about n images with the classes in their proportions in y, drawn by a fixed seed, in order."""
    rng = np.random.default_rng(0)
    picked = [rng.permutation(np.flatnonzero(y == k))[: max(1, round(n * np.mean(y == k)))] for k in np.unique(y)]
    return np.sort(np.concatenate(picked))


def linear_floor(
    train: TensorData, validation: TensorData, test: TensorData, recipe: Floor | None = None
) -> tuple[Floor, list[Floor]]:
    """(the floor, every contender): the contender with the best validation accuracy, the recipe run included; a
    tie goes to the earlier (more regularized) one."""
    path = _l2_path(train, validation, test)
    contenders = [*path, *([recipe] if recipe is not None else [])]
    best = max(contenders, key=lambda f: f.val_acc)  # max keeps the first of equals
    return best, contenders
