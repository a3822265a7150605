"""Fixtures the runner tests share."""

from __future__ import annotations

import pytest

from tests.support.checkpoint import make_pools


@pytest.fixture(scope="module")
def pools():
    """Tiny train and eval pools of synthetic images: 300 images, 4 steps an epoch at batch 64."""
    return make_pools()
