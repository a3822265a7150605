"""Test collection: the CUDA tests exist only where CUDA does; the workers probe caches into a temporary folder."""

import os
import tempfile

import torch

# tests/test_cuda.py needs a GPU. Without one it is not collected at all (rather than skipped), so the
# "no skips" rule of CI holds on CPU-only machines; on a CUDA machine it runs like any other test file.
collect_ignore = [] if torch.cuda.is_available() else ["test_cuda.py"]

# `--workers auto` caches its probe per machine; tests never write into the home folder.
os.environ.setdefault("COATSEARCH_CACHE", tempfile.mkdtemp(prefix="coatsearch-cache-"))
