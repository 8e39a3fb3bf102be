"""Shared fixtures: where the shared data lives, and the `gpu` marker's skip rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparserl.datasets.local import shared_data_folder

# The read-only data folder beside the checkout; SPARSERL_SHARED_DATA overrides it
# (the GPU machine gets a copy carried inside the working tree).
SHARED_DATA = shared_data_folder()


def gpu_available() -> bool:
    """True when CuPy imports and sees at least one CUDA device."""
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def pytest_collection_modifyitems(config, items):
    if gpu_available():
        return
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU with CuPy")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The read-only `../shared/data` folder beside the checkout (skips when absent)."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data folder not found at {SHARED_DATA}")
    return SHARED_DATA
