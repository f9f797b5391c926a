"""Test-wide configuration: markers, GPU detection."""
import os

import pytest

os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")


def pytest_collection_modifyitems(config, items):
    # the long tests first, so that with `-n` (scripts/test.sh: --dist worksteal, whose idle
    # worker takes queued tests from a busy one) they run beside the short ones, not after
    items.sort(key=lambda item: "slow" not in item.keywords)
    try:
        import torch
        has_gpu = torch.cuda.is_available()
    except Exception:  # pragma: no cover
        has_gpu = False
    if has_gpu:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
