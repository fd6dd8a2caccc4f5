"""Fixtures of the GPU tests."""

from __future__ import annotations

import pytest


@pytest.fixture(params=["nvrtc", "numba"])
def backend(request, monkeypatch):
    """Run the test once per backend (DISABLE_NVRTC is read at call time)."""
    if request.param == "numba":
        monkeypatch.setenv("DISABLE_NVRTC", "1")
    else:
        monkeypatch.delenv("DISABLE_NVRTC", raising=False)
    return request.param
