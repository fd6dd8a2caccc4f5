"""Dispatch's planning decisions against a stand-in backend (no GPU, no kernels)."""

from __future__ import annotations

import types

import pytest

from numba_norms import dispatch, planner, registry

KEY = registry.NormKey("layernorm_bwd", "bf16", "bf16", "bf16")


@pytest.fixture
def h200(monkeypatch):
    limits = planner.DeviceLimits(sm_count=132)
    monkeypatch.setattr(dispatch, "device_limits", lambda device: limits)
    monkeypatch.setattr(dispatch, "_plan_cache", {})
    return limits


def _backend(occupancy):
    return types.SimpleNamespace(occupancy_forward=occupancy, occupancy_backward=occupancy)


def test_measured_entry_is_planned_when_resident(h200):
    measured = registry.select_norm(KEY, 4096, 16384, 16)
    assert measured.origin == "measured"
    plan = dispatch._norm_plan("nvrtc", _backend(lambda s: 2), KEY, 16384, 4096, ((256, 2),), 0)
    assert plan.spec.config == measured


def test_measured_entry_that_cannot_be_resident_falls_back_to_te(h200):
    te = registry.select_norm(KEY, 4096, 16384, 16, measured=False)

    def occupancy(spec):  # as if the measured kernel took too many registers on this device
        return 0 if spec.config.origin == "measured" else 3

    plan = dispatch._norm_plan("numba", _backend(occupancy), KEY, 16384, 4096, ((256, 2),), 0)
    assert plan.spec.config == te and te.origin == "te"


def test_te_entry_that_cannot_be_resident_is_an_error(h200):
    with pytest.raises(planner.PlanError, match="occupancy 0"):
        dispatch._norm_plan("nvrtc", _backend(lambda s: 0), KEY, 16384, 4096, ((256, 2),), 0)
