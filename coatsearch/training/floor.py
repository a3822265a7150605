"""The fair linear floor: the best linear classifier on a score's own training images, chosen on validation images.

A regime guard asks whether a network learns more than a linear classifier on the pixels. Trained with the
space's recipe (RandAugment, label smoothing, a short schedule), the linear model is a crippled floor: on 5,000
Fashion-MNIST images it reads about 67% where an L2-tuned logistic regression reads about 82%. So the floor is the
better, on the validation images, of that recipe run and an L2 path of multinomial logistic regressions without
augmentation (scikit-learn, lbfgs, warm-started from strong to weak regularization); the test images never
choose, they only read the chosen classifier.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from coatsearch.training.data import TensorData

C_GRID = (1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3, 1.0)  # inverse L2 strengths, strong to weak (warm-started path)
_MAX_ITER = 200  # lbfgs iterations per fit; warm starts converge within it on Fashion-MNIST-sized inputs
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
    """One Floor per C of C_GRID: logistic regression on the flattened pixels, no augmentation."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    (x, y), (xv, yv), (xt, yt) = _xy(train), _xy(validation), _xy(test)
    model = LogisticRegression(max_iter=_MAX_ITER, warm_start=True)
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # a warm-started step may stop at _MAX_ITER: still read
        for c in C_GRID:
            model.set_params(C=c).fit(x, y)
            out.append(Floor(float(model.score(xv, yv)), float(model.score(xt, yt)), f"C={c:g}"))
    return out


def linear_floor(
    train: TensorData, validation: TensorData, test: TensorData, recipe: Floor | None = None
) -> tuple[Floor, list[Floor]]:
    """(the floor, every contender): the contender with the best validation accuracy, the recipe run included; a
    tie goes to the earlier (more regularized) one."""
    path = _l2_path(train, validation, test)
    contenders = [*path, *([recipe] if recipe is not None else [])]
    best = max(contenders, key=lambda f: f.val_acc)  # max keeps the first of equals
    return best, contenders
