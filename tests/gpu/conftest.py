"""Fixtures of the GPU tests."""

from __future__ import annotations

import dataclasses

import pytest


@pytest.fixture(params=["nvrtc", "numba"])
def backend(request, monkeypatch):
    """Run the test once per backend (DISABLE_NVRTC is read at call time)."""
    if request.param == "numba":
        monkeypatch.setenv("DISABLE_NVRTC", "1")
    else:
        monkeypatch.delenv("DISABLE_NVRTC", raising=False)
    return request.param


@pytest.fixture(params=["cluster", "counter"])
def row_sync(request, monkeypatch):
    """How the CTAs of a row meet: as a thread-block cluster (sm_90+) or through the counter
    barrier of a cooperative launch (older devices; forced here by limits without clusters).

    The test module names where its plans read the device limits: ``ROW_SYNC_LIMITS = (owner,
    name)``, a ``DeviceLimits`` attribute or a function returning them; it is replaced for the
    test by limits with or without clusters. Returns "cluster" or "counter"."""
    owner, name = request.module.ROW_SYNC_LIMITS
    current = getattr(owner, name)
    base = current() if callable(current) else current
    if request.param == "cluster" and not base.clusters:
        pytest.skip("the device has no thread-block clusters")
    limits = dataclasses.replace(base, clusters=request.param == "cluster")
    monkeypatch.setattr(owner, name, (lambda: limits) if callable(current) else limits)
    return request.param
