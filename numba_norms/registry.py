"""Launch configurations of every kernel, as data.

A configuration says how one kernel instance is shaped (warps along rows and along the row,
vector width, CTAs per row, the hidden size it serves). Both backends compile exactly these
shapes, and :mod:`numba_norms.planner` turns a configuration into a launch plan.

The norm table is seeded from TransformerEngine's registrations (``data/te_norm_registry.json``,
numbers read out of TE's sources). Selection follows TE's rules:

* a *tuned* entry serves exactly one hidden size and is used only when it is registered for these
  dtypes and this hidden size, every pointer is 16-byte aligned and ``rows % 4 == 0``;
* otherwise the *general* entry with the smallest chunk ``>= hidden`` serves, or the largest one
  with several CTAs per row;
* except (our rule, measured) rows of 1025-16384 columns that cannot take 16-byte vectors: they
  get a one-CTA general shape from :func:`narrow_general`.

Measured tables (timed sweeps on one GPU) come before TE's entries: one shared by both backends
(``data/measured_norms.json``, ``data/measured_softmax.json``: NVRTC's sweeps) and, for a backend
whose kernels prefer other shapes, its own entries on top (``data/measured_*_numba.json``: the
Numba kernels timed on NVRTC's best shapes). Selection takes a ``backend`` for that.

This module imports no backend and no array library: dtypes are names ("fp32", "fp16", "bf16",
"fp8e4m3", "fp8e5m2").
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from typing import TypeVar

__all__ = [
    "DTYPE_SIZES",
    "GRIDS",
    "NORM_OPS",
    "SOFTMAX_OPS",
    "SOFTMAX_VARIANTS",
    "SoftmaxConfig",
    "select_softmax",
    "measured_softmax_configs",
    "softmax_configs",
    "NormConfig",
    "NormKey",
    "BACKEND_TABLES",
    "UnsupportedError",
    "WARP_SIZE",
    "generated_tuned",
    "is_supported",
    "itemsize",
    "measured_configs",
    "narrow_general",
    "vector_general",
    "norm_configs",
    "select_norm",
    "supported_norm_dtypes",
]

WARP_SIZE = 32
# Backends that may have their own measured entries (data/measured_{norms,softmax}_<name>.json).
BACKEND_TABLES = ("numba",)
DTYPE_SIZES = {"fp32": 4, "fp16": 2, "bf16": 2, "fp8e4m3": 1, "fp8e5m2": 1}
FLOAT_DTYPES = ("fp32", "fp16", "bf16")
FP8_DTYPES = ("fp8e4m3", "fp8e5m2")
NORM_OPS = ("layernorm_fwd", "layernorm_bwd", "rmsnorm_fwd", "rmsnorm_bwd")
KINDS = ("tuned", "general")
# Launch grids of a row kernel: "persistent" (TE's: as many row groups as can be resident, each
# looping over rows) or "rows" (one CTA a row group, the block scheduler refills the SMs; rows of
# one CTA only; no norm backward: each of its CTAs writes one dgamma partial row).
GRIDS = ("persistent", "rows")
# Vectors a thread of the streaming softmax kernels holds at a time (SoftmaxConfig.chunk): the
# unrolled step; the run-164 prototype timed 2 and 4.
MAX_STREAM_CHUNK = 8

# sm_80 / sm_90 limits (the register cap must describe a residency the SM can reach).
MAX_THREADS_PER_BLOCK = 1024
MAX_THREADS_PER_SM = 2048
# Static shared memory a backward CTA may give its dgamma / dbeta slots (wgrad_smem): the 48 KiB
# static limit less room for the reduction buffers.
WGRAD_SMEM_BYTES = 47 * 1024

# TE's tuned kernels need 16-byte aligned pointers and a row count that is a multiple of 4.
TUNED_ALIGNMENT = 16
TUNED_ROW_MULTIPLE = 4


class UnsupportedError(TypeError):
    """A dtype combination or shape that no configuration serves."""


def itemsize(dtype: str) -> int:
    """Bytes per element of a dtype name."""
    try:
        return DTYPE_SIZES[dtype]
    except KeyError:
        raise ValueError(
            f"unknown dtype {dtype!r}; expected one of {sorted(DTYPE_SIZES)}"
        ) from None


def _pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


@dataclass(frozen=True)
class NormKey:
    """What a norm call needs, before the hidden size picks an entry.

    ``input`` is x's dtype, ``output`` is y's dtype (forward) or dy's dtype (backward).
    """

    op: str
    weight: str
    input: str
    output: str
    fused_add: bool = False


@dataclass(frozen=True)
class NormConfig:
    """One registered norm kernel configuration.

    Parameters
    ----------
    op : str
        One of :data:`NORM_OPS`.
    kind : str
        ``"tuned"`` (exactly ``hidden_size`` columns) or ``"general"`` (any row length; one CTA
        covers ``hidden_size`` columns per row, more CTAs share longer rows).
    hidden_size : int
        Tuned: the row length served. General: columns one CTA covers.
    weight, input, output, compute : str
        Dtype names. ``output`` is y (forward) or dy (backward).
    ctas_per_row : int
        Tuned only: CTAs sharing one row (> 1 needs a cooperative launch).
    warps_m, warps_n : int
        Warps per CTA along rows and along the row.
    bytes_per_ldg : int
        Bytes of x one thread loads per vector access.
    bytes_per_ldg_final : int
        Backward only: vector width of the dgamma/dbeta finalize kernel (0 for forward).
    fused_add : bool
        RMSNorm backward that adds ``add`` into dx.
    origin : str
        ``"te"`` for TransformerEngine's table, ``"measured"`` for entries chosen by a timed
        sweep (``data/measured_norms.json``), ``"generated"`` for entries made at run time.
    min_ctas_per_sm : int
        Register cap: the kernel is compiled for at least this many resident CTAs per SM
        (``__launch_bounds__``); 1 leaves the register count to the compiler.
    prefetch : bool
        Issue the next row's loads before this row's reductions (a software pipeline; more
        registers). The NVRTC kernels follow it; the Numba kernels only where their register
        estimate fits under the cap (``backends/numba/_norms.py``).
    grid : str
        One of :data:`GRIDS`: ``"persistent"`` (resident row groups that loop over the rows) or
        ``"rows"`` (a row group per CTA; forward ops only, applied where a row takes one CTA).
        A launch parameter: the same compiled kernel serves both.
    wgrad_smem : int
        Tuned backward entries only: how many of the per-column dgamma / dbeta partial sums each
        thread keeps in shared memory instead of registers (0; LayerNorm 1: dbeta, 2: both;
        RMSNorm 1: dgamma). Frees registers on long rows; the slots (``warps_m * hidden_size /
        ctas_per_row`` floats each) must fit :data:`WGRAD_SMEM_BYTES`. Both backends follow it;
        the Numba backend gets no shared entry that sets it (measured on NVRTC only).
    fold : bool
        Tuned RMSNorm forward entries of one CTA a row only: the NVRTC kernel is compiled
        without the inter-CTA exchange and addresses each row from one pointer, as LayerNorm's
        one-CTA forwards always are. It ran 0.47-1.17x against the same shape unfolded (H200,
        runs 139-140), so it is set per measured entry. The Numba kernels ignore it.
    """

    op: str
    kind: str
    hidden_size: int
    weight: str
    input: str
    output: str
    compute: str = "fp32"
    ctas_per_row: int = 1
    warps_m: int = 1
    warps_n: int = 4
    bytes_per_ldg: int = 16
    bytes_per_ldg_final: int = 0
    fused_add: bool = False
    origin: str = "te"
    min_ctas_per_sm: int = 1
    prefetch: bool = False
    grid: str = "persistent"
    wgrad_smem: int = 0
    fold: bool = False

    def __post_init__(self) -> None:
        if self.op not in NORM_OPS:
            raise ValueError(f"op: expected one of {NORM_OPS}, got {self.op!r}")
        if self.kind not in KINDS:
            raise ValueError(f"kind: expected one of {KINDS}, got {self.kind!r}")
        for field_name in ("weight", "input", "output", "compute"):
            value = getattr(self, field_name)
            if value not in DTYPE_SIZES:
                raise ValueError(f"{field_name}: unknown dtype {value!r}")
        if self.compute != "fp32":
            raise ValueError(f"compute: only fp32 is supported, got {self.compute!r}")
        if self.input in FP8_DTYPES or self.weight in FP8_DTYPES:
            raise ValueError("input and weight dtypes cannot be fp8")
        if self.fused_add and self.op != "rmsnorm_bwd":
            raise ValueError("fused_add exists only for rmsnorm_bwd")
        for field_name in ("hidden_size", "ctas_per_row", "warps_m", "warps_n", "min_ctas_per_sm"):
            if getattr(self, field_name) < 1:
                raise ValueError(f"{field_name} must be >= 1, got {getattr(self, field_name)}")
        if self.threads > MAX_THREADS_PER_BLOCK:
            raise ValueError(
                f"warps_m * warps_n * 32 = {self.threads} exceeds {MAX_THREADS_PER_BLOCK} threads"
            )
        if self.threads * self.min_ctas_per_sm > MAX_THREADS_PER_SM:
            raise ValueError(
                f"min_ctas_per_sm {self.min_ctas_per_sm} x {self.threads} threads exceeds the "
                f"{MAX_THREADS_PER_SM} threads an SM holds"
            )
        if self.kind == "general" and self.ctas_per_row != 1:
            raise ValueError("general entries have ctas_per_row == 1 (the planner sets it)")
        if self.grid not in GRIDS:
            raise ValueError(f"grid: expected one of {GRIDS}, got {self.grid!r}")
        if self.grid == "rows" and (self.is_backward or self.ctas_per_row != 1):
            raise ValueError(
                "grid 'rows' needs a forward op with one CTA a row, got "
                f"{self.op} with ctas_per_row {self.ctas_per_row}"
            )
        if self.wgrad_smem:
            most = 1 if self.is_rms else 2
            if not (self.is_backward and self.kind == "tuned" and 0 <= self.wgrad_smem <= most):
                raise ValueError(
                    f"wgrad_smem: expected 0 (or up to {most} for a tuned {self.op} entry), got "
                    f"{self.wgrad_smem} for a {self.kind} {self.op} entry"
                )
            need = 4 * self.wgrad_smem * self.warps_m * (self.hidden_size // self.ctas_per_row)
            if need > WGRAD_SMEM_BYTES:
                raise ValueError(
                    f"wgrad_smem {self.wgrad_smem}: {need} bytes of shared memory a CTA exceed "
                    f"{WGRAD_SMEM_BYTES}"
                )
        if self.fold and not self.foldable:
            raise ValueError(
                "fold: expected a tuned rmsnorm_fwd entry with ctas_per_row 1, got a "
                f"{self.kind} {self.op} entry with ctas_per_row {self.ctas_per_row}"
            )
        if not _pow2(self.bytes_per_ldg) or self.bytes_per_ldg > 16:
            raise ValueError(
                f"bytes_per_ldg must be a power of two <= 16, got {self.bytes_per_ldg}"
            )
        if self.bytes_per_ldg % itemsize(self.input):
            raise ValueError(
                f"bytes_per_ldg {self.bytes_per_ldg} is not a multiple of {self.input}'s size"
            )
        if self.is_backward and not _pow2(self.bytes_per_ldg_final):
            raise ValueError("backward entries need a power-of-two bytes_per_ldg_final")
        if self.kind == "tuned" and self.hidden_size % self.cols_per_pass:
            raise ValueError(
                f"tuned hidden_size {self.hidden_size} is not a multiple of "
                f"ctas_per_row * warps_n * 32 * elements per vector = {self.cols_per_pass}"
            )

    @property
    def is_backward(self) -> bool:
        return self.op.endswith("_bwd")

    @property
    def is_rms(self) -> bool:
        return self.op.startswith("rmsnorm")

    @property
    def foldable(self) -> bool:
        """Whether ``fold`` may be set: a tuned RMSNorm forward of one CTA a row."""
        return self.op == "rmsnorm_fwd" and self.kind == "tuned" and self.ctas_per_row == 1

    @property
    def smem_sums(self) -> tuple[bool, bool]:
        """(dgamma, dbeta): which partial sums ``wgrad_smem`` puts in shared memory (LayerNorm
        moves dbeta first; the NVRTC kernel's SM_DG / SM_DB make the same choice)."""
        if self.is_rms:
            return self.wgrad_smem == 1, False
        return self.wgrad_smem == 2, self.wgrad_smem >= 1

    @property
    def threads(self) -> int:
        return self.warps_m * self.warps_n * WARP_SIZE

    @property
    def num_elts(self) -> int:
        """Elements of x per vector access."""
        return self.bytes_per_ldg // itemsize(self.input)

    @property
    def cols_per_pass(self) -> int:
        """Columns all CTAs of one row cover with one vector access per thread."""
        return self.ctas_per_row * self.warps_n * WARP_SIZE * self.num_elts

    @property
    def key(self) -> NormKey:
        return NormKey(self.op, self.weight, self.input, self.output, self.fused_add)

    @classmethod
    def tuned_for(
        cls,
        key: NormKey,
        hidden_size: int,
        *,
        ctas_per_row: int,
        warps_m: int,
        warps_n: int,
        bytes_per_ldg: int = 16,
        origin: str,
        min_ctas_per_sm: int = 1,
        prefetch: bool = False,
        grid: str = "persistent",
        wgrad_smem: int = 0,
        fold: bool = False,
    ) -> NormConfig:
        """A tuned entry for ``key`` made outside TE's table (measured or generated)."""
        return cls._made_for(
            "tuned", key, hidden_size, ctas_per_row, warps_m, warps_n, bytes_per_ldg, origin,
            min_ctas_per_sm, prefetch, grid, wgrad_smem, fold,
        )  # fmt: skip

    @classmethod
    def general_for(
        cls,
        key: NormKey,
        hidden_size: int,
        *,
        warps_m: int,
        warps_n: int,
        bytes_per_ldg: int,
        origin: str,
        min_ctas_per_sm: int = 1,
        prefetch: bool = False,
        grid: str = "persistent",
    ) -> NormConfig:
        """A general entry for ``key`` made outside TE's table; one CTA covers ``hidden_size``
        columns."""
        return cls._made_for(
            "general", key, hidden_size, 1, warps_m, warps_n, bytes_per_ldg, origin,
            min_ctas_per_sm, prefetch, grid,
        )  # fmt: skip

    @classmethod
    def _made_for(
        cls, kind, key, hidden_size, ctas_per_row, warps_m, warps_n, bytes_per_ldg, origin,
        min_ctas_per_sm, prefetch, grid, wgrad_smem=0, fold=False,
    ) -> NormConfig:  # fmt: skip
        return cls(
            op=key.op,
            kind=kind,
            hidden_size=hidden_size,
            weight=key.weight,
            input=key.input,
            output=key.output,
            ctas_per_row=ctas_per_row,
            warps_m=warps_m,
            warps_n=warps_n,
            bytes_per_ldg=bytes_per_ldg,
            bytes_per_ldg_final=4 if key.op.endswith("_bwd") else 0,
            fused_add=key.fused_add,
            origin=origin,
            min_ctas_per_sm=min_ctas_per_sm,
            prefetch=prefetch,
            grid=grid,
            wgrad_smem=wgrad_smem,
            fold=fold,
        )


def _entry_from_json(raw: dict) -> NormConfig:
    return NormConfig(
        op=raw["op"],
        kind=raw["kind"],
        hidden_size=int(raw["hidden_size"]),
        weight=raw["weight"],
        input=raw["input"],
        output=raw["output"],
        compute=raw["compute"],
        ctas_per_row=int(raw.get("ctas_per_row") or 1),
        warps_m=int(raw["warps_m"]),
        warps_n=int(raw["warps_n"]),
        bytes_per_ldg=int(raw["bytes_per_ldg"]),
        bytes_per_ldg_final=int(raw.get("bytes_per_ldg_final") or 0),
        fused_add=bool(raw.get("fused_add", False)) or raw.get("stage") == "BackwardAdd",
    )


def _measured_from_json(raw: dict) -> NormConfig:
    return NormConfig.tuned_for(
        NormKey(raw["op"], raw["weight"], raw["input"], raw["output"]),
        int(raw["hidden_size"]),
        ctas_per_row=int(raw["ctas_per_row"]),
        warps_m=int(raw["warps_m"]),
        warps_n=int(raw["warps_n"]),
        bytes_per_ldg=int(raw["bytes_per_ldg"]),
        origin="measured",
        min_ctas_per_sm=int(raw.get("min_ctas_per_sm", 1)),
        prefetch=bool(raw.get("prefetch", False)),
        grid=raw.get("grid", "persistent"),
        wgrad_smem=int(raw.get("wgrad_smem", 0)),
        fold=bool(raw.get("fold", False)),
    )


def _check_backend(backend: str | None) -> None:
    if backend is not None and backend not in ("nvrtc",) + BACKEND_TABLES:
        raise ValueError(
            f"backend: expected None, 'nvrtc' or one of {BACKEND_TABLES}, got {backend!r}"
        )


def _table_entries(stem: str, backend: str | None) -> list[dict]:
    """Entries of ``data/<stem>.json`` (``backend`` None or "nvrtc": the shared table) or of
    ``data/<stem>_<backend>.json`` (that backend's own entries; none where the file is absent)."""
    _check_backend(backend)
    own = backend in BACKEND_TABLES
    path = resources.files("numba_norms").joinpath(
        f"data/{stem}_{backend}.json" if own else f"data/{stem}.json"
    )
    if own and not path.is_file():
        return []
    return json.loads(path.read_text())["entries"]


@functools.cache
def measured_configs(backend: str | None = None) -> tuple[NormConfig, ...]:
    """Tuned entries chosen by a timed sweep (``perf/tune_norms.py``) on the GPU named in
    ``data/measured_norms.json``; each beat the TE/generated entry it replaces by >= 3% there.

    ``backend`` "numba" gives that backend's own entries instead (``measured_norms_numba.json``:
    each beat, on the Numba kernels, the entry the shared tables pick by >= 3%); None or "nvrtc"
    the shared table.
    """
    out = []
    for raw in _table_entries("measured_norms", backend):
        cfg = _measured_from_json(raw)
        out.append(cfg)
        if cfg.output == "fp8e4m3":  # e5m2 stores the same bytes; the sweep timed e4m3
            out.append(_replace(cfg, output="fp8e5m2"))
    return tuple(out)


@functools.cache
def norm_configs(include_fp8: bool = False, backend: str | None = None) -> tuple[NormConfig, ...]:
    """Every norm configuration: measured entries first (they take precedence over TE's for
    the same dtypes and hidden size; ``backend``'s own before the shared ones), then TE's
    registrations; FP8 outputs only when asked.

    FP8-output entries are also offered with an ``fp8e5m2`` output (TE registers e4m3 only).
    """
    text = resources.files("numba_norms").joinpath("data/te_norm_registry.json").read_text()
    measured = measured_configs()
    if backend in BACKEND_TABLES:
        # without the shared entries whose wgrad_smem was timed on NVRTC only (Numba's own
        # entries serve those sizes)
        measured = measured_configs(backend) + tuple(c for c in measured if not c.wgrad_smem)
    entries = [c for c in measured if include_fp8 or c.output not in FP8_DTYPES]
    for raw in json.loads(text)["entries"]:
        cfg = _entry_from_json(raw)
        if cfg.output in FP8_DTYPES:
            if not include_fp8:
                continue
            entries.append(cfg)
            entries.append(_replace(cfg, output="fp8e5m2"))
        else:
            entries.append(cfg)
    return tuple(entries)


_Config = TypeVar("_Config", "NormConfig", "SoftmaxConfig")


def _replace(cfg: _Config, **changes) -> _Config:
    from dataclasses import replace

    return replace(cfg, **changes)


@functools.cache
def _index(include_fp8: bool, measured: bool = True, backend: str | None = None) -> tuple:
    tuned: dict[tuple[NormKey, int], NormConfig] = {}
    general: dict[NormKey, list[NormConfig]] = {}
    for cfg in norm_configs(include_fp8, backend if measured else None):
        if cfg.origin == "measured" and not measured:
            continue
        if cfg.kind == "tuned":
            tuned.setdefault((cfg.key, cfg.hidden_size), cfg)
        else:
            general.setdefault(cfg.key, []).append(cfg)
    for entries in general.values():
        entries.sort(key=lambda c: c.hidden_size)
    return tuned, general


@functools.cache
def supported_norm_dtypes(op: str, fused_add: bool = False) -> tuple[tuple[str, str, str], ...]:
    """(weight, input, output) combinations served for ``op``, sorted (cached: hot path)."""
    _, general = _index(True)
    return tuple(
        sorted(
            (k.weight, k.input, k.output)
            for k in general
            if k.op == op and k.fused_add == fused_add
        )
    )


@functools.cache
def _supported_keys() -> frozenset:
    _, general = _index(True)
    return frozenset(general)


def is_supported(key: NormKey) -> bool:
    """Whether any configuration serves ``key`` (one set lookup)."""
    return key in _supported_keys()


# Generated tuned entries: 16-byte vectors first (then 8, 4), and the warp split whose slice of
# the row is nearest to the elements a thread held in the fastest shapes of the H200 sweep
# (perf/results/2026-11-30-h200-run6, the measured table, bf16/fp16): forward 24-64 (32 most
# often); backward 8 up to 4096 columns, 8-16 up to 8192, 24-64 beyond (the dgamma/dbeta
# accumulators take registers too). At most 64: 80 a thread took 255 registers (ptxas, run 4).
_GEN_BYTES = (16, 8, 4)
_GEN_MAX_ELTS = 64
_GEN_TARGET_ELTS = {"fwd": ((65536, 32),), "bwd": ((4096, 8), (8192, 16), (65536, 32))}


def _target_elts(op: str, cols: int) -> int:
    for upto, elts in _GEN_TARGET_ELTS[op.rsplit("_", 1)[1]]:
        if cols <= upto:
            return elts
    return 32


def _nearest_tuned(key: NormKey, cols: int, tuned: dict) -> NormConfig | None:
    """The tuned entry (TE's or measured) whose hidden size is nearest (by ratio) for the same
    dtypes and direction; for forwards the measured entries only, where there are any (the
    note below the function says why).

    LayerNorm's table is the template for RMSNorm too: it covers far more sizes and the kernels
    share their structure.
    """
    direction = "bwd" if key.op.endswith("_bwd") else "fwd"
    dtypes = (key.weight, key.input, key.output)
    same = [
        (hidden, cfg)
        for (k, hidden), cfg in tuned.items()
        if cfg.origin != "generated"
        and (k.weight, k.input, k.output) == dtypes
        and k.op.endswith(direction)
        and not k.fused_add
    ]
    if direction == "fwd":  # see the note below
        same = [(h, c) for h, c in same if c.origin == "measured"] or same
    best, best_ratio = None, None
    for hidden, cfg in same:
        ratio = max(hidden, cols) / min(hidden, cols)
        if best_ratio is None or ratio < best_ratio or (ratio == best_ratio and cfg.op == key.op):
            best, best_ratio = cfg, ratio
    return best


# Forwards scale their CTA count from the measured entries alone: every forward sweep on the
# H200 from 8192 to 32768 columns (and bf16 at 65536) chose one CTA a row, while TE's entries
# between them (nearer by ratio: TE registers more sizes) span 2-5, and the shapes scaled from
# them ran 1.47-1.71x slower than one CTA (run 150's tuner at 12544 / 13312 / 26112, bf16).


# CTAs a generated row may span when scaled from an entry with shared-memory sums (wgrad_smem:
# narrow CTAs, 8 a row at 16384-65536), the portable cluster size (planner.MAX_CLUSTER). Rows of
# 16 CTAs synchronise through the arrival counter and ran 0.41-0.65x the best layernorm_bwd
# shapes at 32768 / 65536 (H200, run 95); capped, bf16 131072 keeps its 8-CTA shape (run 118:
# 0.98-1.005x). Not applied to other bases: capping fp32 131072 (16 -> 8 CTAs) ran 0.87-1.23x.
_GEN_MAX_CTAS = 8


@functools.lru_cache(maxsize=1024)
def generated_tuned(
    key: NormKey, cols: int, measured: bool = True, narrow: bool = True
) -> NormConfig | None:
    """A tuned entry for a hidden size no table lists, or None when nothing tiles it.

    Run-time compilation makes a kernel per hidden size cheap, so any ``cols`` that some warp
    split tiles exactly gets its own register-resident kernel: CTAs per row scaled from the
    nearest tuned entry (TE's or measured), the warp split from :data:`_GEN_TARGET_ELTS`; where
    that count tiles nothing, the counts of :data:`_GEN_FALLBACK_CTAS`. ``narrow``: forwards
    may trade the widest vectors for the pipeline (:data:`_GEN_NARROW_MIN_WARPS`; NVRTC only).
    """
    tuned, _ = _index(True, measured)
    base = _nearest_tuned(key, cols, tuned)
    if base is None:
        return None
    size = itemsize(key.input)
    ctas = max(1, round(base.ctas_per_row * cols / base.hidden_size))
    if base.wgrad_smem:
        ctas = min(ctas, _GEN_MAX_CTAS)
    target = _target_elts(key.op, cols)
    norm, direction = key.op.split("_")
    regs = _GEN_BWD_REGS_PER_ELT[norm] if direction == "bwd" else 0
    shape = _gen_shape(cols, size, (ctas,), target, regs)
    if shape is None:  # the scaled count tiles nothing (or nothing that fits)
        others = tuple(c for c in _GEN_FALLBACK_CTAS if c != ctas)
        shape = _gen_shape(cols, size, others, target, regs)
    if shape is None:
        return None
    ctas, warps_n, nbytes = shape
    warps_m = _gen_warps_m(ctas, warps_n)
    prefetch = _gen_prefetch(key, size, cols // (ctas * warps_n * WARP_SIZE), warps_m, warps_n)
    wide_unpiped = direction == "fwd" and ctas == 1 and not prefetch and nbytes > size
    if narrow and wide_unpiped and warps_n >= _GEN_NARROW_MIN_WARPS:
        alt = _gen_shape(cols, size, (ctas,), target, max_bytes=nbytes // 2)
        if alt is not None:
            a_ctas, a_warps, a_bytes = alt
            a_m = _gen_warps_m(a_ctas, a_warps)
            if _gen_prefetch(key, size, cols // (a_ctas * a_warps * WARP_SIZE), a_m, a_warps):
                ctas, warps_n, nbytes, warps_m, prefetch = a_ctas, a_warps, a_bytes, a_m, True
    return NormConfig.tuned_for(
        key,
        cols,
        ctas_per_row=ctas,
        warps_m=warps_m,
        warps_n=warps_n,
        bytes_per_ldg=nbytes,
        prefetch=prefetch,
        origin="generated",
    )


# Registers an element of a backward slice needs (x-hat and dy * gamma in fp32, the row's
# dgamma (and dbeta) partial sums), by norm. The fastest LayerNorm backward shapes of run 145's
# sweep (H200, bf16, 4096-65536) kept 4 or fewer per element within their threads' share (8
# elements on 1024 threads, 16-32 on 512, 64 on 32-128); generated shapes that did not ran
# 0.55-0.70x (run 155: layernorm_bwd 58880 on 2 CTAs of 23 warps, 40 elements at 80 registers,
# 1036 GB/s). Run 156's A/B (NVRTC): shapes moved by this rule ran 1.52-2.29x (LayerNorm bf16),
# 1.06-1.31x (RMSNorm bf16), 1.97-4.99x (fp32); RMSNorm moved at 4 an element lost 0.69-0.78x
# where 3 fit (16896 / 34816 / 35328 bf16), so RMSNorm (no dbeta, no mean) takes 3.
_GEN_BWD_REGS_PER_ELT = {"layernorm": 4, "rmsnorm": 3}


def _thread_registers(threads: int) -> int:
    """Registers each of ``threads`` gets when they share an SM's 64K (at most 255; the
    allocation unit is 8).

    The rules below were fitted against this share. ptxas gives less where the warp count is
    not a multiple of 4 (each of an SM's four schedulers has 16K registers, and the busiest
    sets the share: 128 for 14 warps, 80 for 23), but with that share in its place the fitted
    rules moved 489 selections and lost where measured (H200, run 159: rmsnorm_fwd 39424 0.93x,
    layernorm_bwd 59904 0.78x), so it stays until they are refitted.
    """
    return min(255, 65536 // threads // 8 * 8)


def _gen_warps_m(ctas: int, warps_n: int) -> int:
    """Warp rows of a generated CTA: at least 4 warps a CTA; rows shared by CTAs keep one warp
    row (as TE's)."""
    return max(1, 4 // warps_n) if ctas == 1 else 1


# Generated 16-bit forwards of one warp row a CTA run the pipeline (prefetch) where it paid in
# same-shape pairs on the H200 (bf16 / fp16 / FP8 outputs, rows 16384; runs 150, 153, 154):
# - RMSNorm where a thread's registers hold it, about 1.5 an element (x in fp32 and the next row
#   as loaded) against 64K an SM shared by the CTA's threads: 1.02-1.62x in 22 of 24 pairs
#   (fp16 22528 0.91x, Numba 9216 0.97x); beyond the estimate (57344 / 61440 columns, 1024 / 960
#   threads of 56 / 64 elements) 0.59-0.85x.
# - LayerNorm (which holds the centred values too) up to 32 elements a thread: 1.04-1.59x in all
#   18 pairs; at 40-56 elements 0.43-0.83x in 7 of 9 (one CTA of 7 or 17 warps won). Past 32
#   on CTAs of 4+ warps where 4 registers an element fit: ptxas (sm_90, NVRTC 13.0) fits those
#   pipelines (5-13 warps, 34-62 elements) with at most 8 B of spill stores (16 B in 13.5),
#   where the 14-32 warp shapes it skips spilled 120-452 B. Runs 159-160 (A/B, 16-bit and FP8
#   outputs): 1.02-1.69x on 21 of 23 rows (8064 / 8960: 0.997 / 0.99x), Numba 1.01-1.64x;
#   3-warp CTAs, which run several an SM without it, 0.94-1.19x (4224 / 4992 / 5952), so they
#   keep it off.
# Backwards (0.82-1.36x in run 150) and fp32 (measured entries split) keep it off.
def _gen_prefetch(key: NormKey, size: int, elts: int, warps_m: int, warps_n: int) -> bool:
    if not key.op.endswith("_fwd") or size != 2 or warps_m != 1:
        return False
    cap = _thread_registers(warps_n * WARP_SIZE)
    if key.op.startswith("layernorm"):
        return elts <= 32 or (warps_n >= 4 and 4 * elts <= cap)
    return 3 * elts // 2 <= cap


# Generated 16-bit forwards of one CTA a row whose widest vectors leave a one-warp-row CTA of
# this many warps or more without the pipeline take the narrower vectors (twice the warps, half
# the slice) that run it, where one tiles (not timed on rows of several CTAs). Run 161 (H200,
# A/B against 275ae22, two rounds, NVRTC): layernorm_fwd bf16 1.14-1.70x at 17280-28800 (13-25
# warps before; 26880 from 21 warps of 40 elements to 30 of 28: 1.70x), fp16 / FP8 outputs at
# 25088 1.20-1.22x; from fewer warps it lost (19712: 11 -> 22 warps, 0.84-0.89x in bf16, where
# ptxas spills 96 B with the pipeline; 4992: 3 -> 6, 0.95x). The Numba kernel keeps the widest
# vectors: its pipeline needs more registers than 28 warps leave (its own check turns it off)
# and 25088 ran 0.73x.
_GEN_NARROW_MIN_WARPS = 13


# CTA counts tried where the count scaled from the nearest entry tiles nothing (12544 bf16
# columns from TE's 5-CTA 12800 entry, say): those the tuner sweeps (perf/tune_norms.py), the
# slice nearest the target size winning, ties to fewer CTAs. Against TE's general entries that
# served such sizes before (H200, run 150, bf16, tuner at 12544 / 13312 / 26112): one CTA of 7 /
# 13 warps and 2 CTAs of 17 warps ran 1.3-2.3x.
_GEN_FALLBACK_CTAS = (1, 2, 4, 8)


def _gen_shape(
    cols: int,
    size: int,
    ctas_options: tuple[int, ...],
    target: int,
    regs_per_elt: int = 0,
    max_bytes: int = 16,
) -> tuple[int, int, int] | None:
    """(ctas_per_row, warps_n, bytes_per_ldg) tiling ``cols`` exactly, or None: the widest
    vectors (up to ``max_bytes``) that tile (16-byte vectors matter more than the slice size),
    then the slice nearest ``target`` elements a thread by ratio; ties go to fewer CTAs, then
    fewer warps. ``regs_per_elt``: only slices whose registers (that many an element) fit what
    each thread of the CTA gets of an SM's 64K."""
    for nbytes in _GEN_BYTES:
        if nbytes < size or nbytes > max_bytes:
            continue
        vec = nbytes // size
        best = None
        for ctas in sorted(ctas_options):
            for warps_n in range(1, MAX_THREADS_PER_BLOCK // WARP_SIZE + 1):
                lanes = ctas * warps_n * WARP_SIZE
                if cols % (lanes * vec):
                    continue
                elts = cols // lanes
                if elts > _GEN_MAX_ELTS:
                    continue
                threads = _gen_warps_m(ctas, warps_n) * warps_n * WARP_SIZE
                if regs_per_elt and regs_per_elt * elts > _thread_registers(threads):
                    continue
                score = max(elts, target) / min(elts, target)
                if best is None or score < best[0]:
                    best = (score, ctas, warps_n)
        if best is not None:
            return best[1], best[2], nbytes
    return None


# One-CTA general shapes for rows that cannot take 16-byte vectors (an odd hidden size in 16-bit
# dtypes, a misaligned view), by op and row length: (up to cols, warps_m, warps_n,
# min_ctas_per_sm, prefetch). The fastest NVRTC kernels of two sweeps on the H200
# (`tune_norms.py --general`, bf16, scalar accesses, rows 16384, at 2053, 5003 and 12289
# columns; perf/results/2026-11-30-h200-run14 with the weights held in registers, run16 with
# them re-read where norms.cu's FwdRegisters / BwdRegisters say): 847-2091 GB/s, where TE's
# general entries (4 warps, 64 or 32 elements a thread, two CTAs a row in the backward) ran
# 372-988 GB/s.
# Below 1025 columns and past 16384, TE's entries serve (not measured).
_NARROW_MIN_COLS = 1025
_NARROW_GENERAL = {
    "layernorm_fwd": ((3072, 1, 4, 4, False), (8192, 2, 8, 1, False), (16384, 1, 8, 1, False)),
    "rmsnorm_fwd": ((3072, 1, 4, 6, False), (8192, 1, 16, 2, True), (16384, 1, 16, 1, False)),
    "layernorm_bwd": ((3072, 1, 8, 1, True), (8192, 1, 16, 1, True), (16384, 1, 16, 1, False)),
    "rmsnorm_bwd": ((3072, 1, 8, 1, True), (8192, 1, 16, 1, True), (16384, 1, 16, 1, False)),
}


# NVRTC's layernorm_fwd rows re-swept on today's kernels (H200, run 150, bf16, scalar accesses,
# `tune_norms.py --general`): 2053 columns 1 x 4 warps with the pipeline 2325 GB/s against the
# table's 2024 (1.15x), 5003 1 x 4 capped at 3 CTAs an SM, pipelined, 2003 against 1399 (1.43x;
# 40 elements a thread: the band ends where that shape would hold 40), 12289 2 x 8 warps 1642
# against 1178 (1.39x). The other ops' shapes were within 2% of the sweep's best; Numba's
# layernorm_fwd at 5003 was best on the table's shape. 16-bit inputs and outputs only (fp32 at
# 5003 ran fastest on 1 x 8 warps; FP8 outputs were not swept).
_NARROW_GENERAL_NVRTC = {
    "layernorm_fwd": (
        (3072, 1, 4, 4, True),
        (5120, 1, 4, 3, True),
        (16384, 2, 8, 1, False),
    ),
}


def narrow_general(
    key: NormKey, cols: int, alignment: int, backend: str | None = None
) -> NormConfig | None:
    """The measured one-CTA general entry of ``backend`` (None: NVRTC's) for rows of ``cols``
    whose arrays allow only ``alignment``-byte vectors (< 16), or None where
    :data:`_NARROW_GENERAL` (for NVRTC's 16-bit rows :data:`_NARROW_GENERAL_NVRTC` first) has
    none."""
    if alignment >= TUNED_ALIGNMENT or cols < _NARROW_MIN_COLS:
        return None
    size = itemsize(key.input)
    # an FP8 output's 1-byte alignment still allows one element of x (the planner narrows each
    # array's vectors to what its own alignment allows)
    nbytes = max(size, alignment)
    table = _NARROW_GENERAL[key.op]
    if backend != "numba" and size == itemsize(key.output) == 2:
        table = _NARROW_GENERAL_NVRTC.get(key.op, table)
    for upto, wm, wn, min_ctas, prefetch in table:
        if cols <= upto:
            return _one_cta_general(key, cols, nbytes, wm, wn, min_ctas, prefetch)
    return None


def _one_cta_general(
    key: NormKey, cols: int, nbytes: int, wm: int, wn: int, min_ctas: int, prefetch: bool
) -> NormConfig:
    """A measured general entry of ``nbytes``-byte vectors whose one CTA covers ``cols``."""
    lanes = wn * WARP_SIZE * (nbytes // itemsize(key.input))
    return NormConfig.general_for(
        key,
        -(-cols // lanes) * lanes,  # less than one pass of vectors to spare
        warps_m=wm,
        warps_n=wn,
        bytes_per_ldg=nbytes,
        origin="measured",
        min_ctas_per_sm=min_ctas,
        prefetch=prefetch,
    )


# One-CTA general shapes for rows of 16-bit dtypes that take 16-byte vectors but no tuned entry
# (a vector multiple no tile shape divides: 1000, say) and that TE's 1024-column general entry
# (4 x 1 warps, 32 elements a thread) would serve, by backend and op: (warps_m, warps_n,
# min_ctas_per_sm, prefetch). Each backend's fastest of a sweep at 1000 bf16 columns, rows 16384
# (`tune_norms.py --general [--backend numba]`; NVRTC and Numba forwards run 95, Numba backwards
# run 96), against TE's entry: NVRTC layernorm_fwd 1.18x, layernorm_bwd 1.26x; Numba
# rmsnorm_fwd 1.07x, layernorm_fwd 1.25x, rmsnorm_bwd 1.66x, layernorm_bwd 1.91x. Same-run A/B
# (run 96, bf16 / fp16): NVRTC layernorm 1.15-1.30x, Numba forwards 1.06-1.49x. NVRTC's RMSNorm
# winners (1.02 / 1.07x in bf16) ran 0.93 / 0.94x in fp16 there: TE's entry serves.
_VECTOR_GENERAL_COLS = (513, 1024)
_VECTOR_GENERAL = {
    "nvrtc": {
        "layernorm_fwd": (4, 1, 1, True),
        "layernorm_bwd": (1, 4, 8, True),
    },
    "numba": {
        "rmsnorm_fwd": (1, 4, 8, False),
        "layernorm_fwd": (4, 1, 8, False),
        "rmsnorm_bwd": (1, 4, 8, False),
        "layernorm_bwd": (1, 4, 8, False),
    },
}


# Longer rows of the same kind (16-bit, 16-byte vectors, no shape tiles them: 4104 = 8 x 513,
# say), by backend, op and row length: (up to cols, warps_m, warps_n, min_ctas_per_sm,
# prefetch); None: TE's general entry serves. Past a backend's last band, _capped_general.
# NVRTC's are the fastest one-CTA shapes of a sweep at 4104 / 8200 / 18944 bf16 columns (H200,
# run 150, `tune_norms.py --general`), against TE's general entries (4 warps a CTA, several
# CTAs a row from 8193 columns): 1.41-2.17x / 1.68-2.53x / 1.43-2.02x; layernorm_bwd at 18944
# 1.06x (not kept then). Each band ends where its shape holds the 40 elements a thread it was
# measured with; past 20480 TE's entries serve (at 37376 TE's several-CTA shapes,
# register-capped, were the fastest), with the caps of _CAPPED_GENERAL. layernorm_bwd from
# 10248: 1 x 16 to 16384 (32 elements a thread), TE's capped entry past it (H100, session 53:
# sweep at 12296 1.59x TE's uncapped entry; A/B bf16 / fp16 against it 1.38-1.59x at 10248-
# 20472; the capped entry from 10248 instead ran 0.96-0.98x the band at 10248-14344, 1.02x at
# 16376). The forwards' last bands (to 24576 / 28672: 6 / 7 vectors a thread on 16 warps) are
# an H100 sweep's (session 44, `tune_norms.py --general`, bf16 at 22784 / 26368): against TE's
# entry layernorm_fwd 1.57 / 1.82x (the pipeline lost at 22784: 1.30x, won at 26368; without
# it 1.67x), rmsnorm_fwd 1.26 / 1.26x. FP8 outputs take the bands too, but where
# _WIDE_VECTOR_GENERAL_FP8 has a shape.
_WIDE_VECTOR_GENERAL = {
    "nvrtc": {
        "rmsnorm_fwd": (
            (5120, 1, 4, 6, False), (10240, 1, 8, 1, True), (20480, 1, 16, 1, True),
            (28672, 1, 16, 1, False),
        ),
        "layernorm_fwd": (
            (5120, 1, 4, 2, True), (10240, 2, 8, 1, True), (20480, 1, 16, 1, True),
            (24576, 1, 16, 1, False), (28672, 1, 16, 1, True),
        ),
        "rmsnorm_bwd": ((5120, 1, 4, 3, True), (10240, 2, 8, 1, False), (20480, 1, 16, 1, False)),
        "layernorm_bwd": ((5120, 1, 4, 1, True), (10240, 1, 8, 1, True), (16384, 1, 16, 1, False)),
    },
    # Numba: the fastest one-CTA shapes of an H100 sweep (session 47, `tune_norms.py --backend
    # numba --general`, bf16 and fp16 at 4104 / 8200 / 18944) against TE's uncapped entry:
    # 1.49-2.65x / 2.05-3.17x / 1.55-2.59x. layernorm_bwd at 18944: TE's entry under
    # _CAPPED_GENERAL_NUMBA's cap ran 1.25x over 1 x 16 then (wide kernels; see below). The
    # forwards' pipeline (general kernels from session 48; H100 sweep, bf16, the same shapes
    # with / without it): layernorm_fwd 8200 253 / 434 us, 18944 1.6x; rmsnorm_fwd 8200 1 x 8 at
    # 1 CTA an SM with it 202 us against 273 for 3 CTAs without. rmsnorm_fwd to 20480: 1 x 16
    # with the pipeline (NVRTC's shape), not the sweep's 1 x 32 without (it holds no next row
    # under its cap): H100 A/B, session 52, bf16 / fp16 1.75x at 10248, 1.65x at 12296, 1.07x
    # at 18944. Session 53 (H100): rmsnorm_fwd to 5120 at 8 CTAs an SM (64 registers; a sweep
    # at 4104: 104 us with or without the pipeline, which does not fit there; 1 x 4 at 6 CTAs
    # 120 us; A/B bf16 / fp16 1.22x at 2056, 1.16x at 4104, 1.14x at 5112); layernorm_bwd to
    # 20480 in 1 x 16 once the general backward took the lean form (sweep at 12296: 1.83x TE's
    # 4-CTA entry; A/B 1.75-2.38x at 12296-20472 against the wide kernel on TE's entry; its
    # band from 5128 before, the same shape, now runs to 20480). The
    # lean backwards' sweeps at 4104 / 8200 (bf16) and A/Bs (bf16 / fp16, two rounds):
    # rmsnorm_bwd 1 x 4 at 2 CTAs an SM to 5120 (1.30-1.32x at 2056, 1.04-1.05x at 4104, 1.01x
    # at 5112) and 2 x 8 to 10240 (1.08-1.09x at 6152, 1.06-1.09x at 8200, 1.01x at 10232)
    # against 2 x 8 / 1 x 16; layernorm_bwd 1 x 4 at 2 CTAs ran 1.34x at 2056, 0.99-1.00x at
    # 3080 and 0.81-0.84x at 4104 / 5112 against 2 x 8: its own band to 3072. layernorm_fwd
    # to 3072 as NVRTC's 1 x 4 at 2 CTAs an SM with the pipeline: 1.10-1.11x at 1544, 1.26x at
    # 2056 (79 -> 63 us; torch ran 69 us there, in another call), 1.23-1.24x at 3064 against
    # the 4 x 4 band. Session 55: the sweep's best at 4104, 1 x 4 at 3 CTAs an SM (1.03x in the
    # sweep), ran 0.97-1.025x against 2 x 8 in an A/B (bf16 / fp16, 3080-5112): not taken.
    # Session 59 (H100): layernorm_bwd from 3073 on NVRTC's shapes, 1 x 4 to 5120 and 1 x 8 to
    # 10240, one CTA an SM, pipelined from kept words (session 57's lean pipeline): bf16, same
    # run, two rounds, against 2 x 8 / 1 x 16 without it, 1.16x at 4104 (194.7 -> 167.9 us) and
    # 1.21x at 8200 (388.4 -> 319.6; NVRTC 158.5 / 304.6); the Numba sweep's best at both lengths
    # (1.16 / 1.21x). fp16 and the bands' other lengths not timed (ptxas: 220-254 registers, no
    # spills, 3080-10232, both dtypes).
    "numba": {
        "rmsnorm_fwd": ((5120, 1, 4, 8, False), (10240, 1, 8, 1, True), (20480, 1, 16, 1, True)),
        "layernorm_fwd": (
            (3072, 1, 4, 2, True), (5120, 4, 4, 2, False), (10240, 2, 8, 1, True),
            (20480, 1, 16, 1, True),
        ),
        "rmsnorm_bwd": ((5120, 1, 4, 2, False), (10240, 2, 8, 1, False), (20480, 1, 16, 1, False)),
        "layernorm_bwd": (
            (3072, 1, 4, 2, False), (5120, 1, 4, 1, True), (10240, 1, 8, 1, True),
            (20480, 1, 16, 1, False),
        ),
    },
}  # fmt: skip

# FP8 outputs (forwards) where their fastest shape differs from the band's, by backend, op and
# band end: (warps_m, warps_n, min_ctas_per_sm, prefetch). H100 sweep (session 48, NVRTC
# `tune_norms.py --general`, bf16 -> e4m3 at 4104 / 8200, one round): layernorm_fwd 1 x 4 at 3
# CTAs an SM 82.2 us against the band's 94.8 (at 2), 1 x 8 at 2 180.0 against the band's 2 x 8
# 198.7; rmsnorm_fwd kept its bands (the best ran 1.02x / the band's own shape).
_WIDE_VECTOR_GENERAL_FP8 = {
    "nvrtc": {"layernorm_fwd": {5120: (1, 4, 3, True), 10240: (1, 8, 2, True)}},
    "numba": {},
}

# Past those bands (16-bit rows of 16-byte vectors no tuned shape tiles, NVRTC), TE's general
# entry (4 warps a CTA, 8192 columns a CTA forward and 4096 backward, several CTAs a row) with a
# register cap, by op:
# (min_ctas_per_sm, prefetch). The one choice of each op that ran within a few % of the best cap
# at every length of an H100 sweep (session 44, bf16, 37376 / 50432 / 57088 / 92736, and 22784
# / 26368 for layernorm_bwd, 26368 for rmsnorm_bwd) against TE's uncapped entry: layernorm_fwd
# 1.26-1.28x, rmsnorm_fwd 1.20-1.26x, layernorm_bwd 1.41-1.63x, rmsnorm_bwd 1.53-1.56x. Uncapped
# (ptxas: 159-254 registers for 128 threads) 2-3 of TE's CTAs share an SM; the caps let 3-8.
# The rule serves wherever NVRTC takes the general path for such rows (rows not a multiple of 4
# at a tuned length too); the fused add keeps TE's entry (not measured).
_CAPPED_GENERAL = {
    "layernorm_fwd": (3, False),
    "rmsnorm_fwd": (8, False),
    "layernorm_bwd": (3, True),
    "rmsnorm_bwd": (4, False),
}
# FP8 outputs (forwards): the same-run A/B (session 44, H100, 46336 / 59648 / 121344 columns)
# ran layernorm_fwd's cap 1.28-1.39x, rmsnorm_fwd's 0.90-0.985x (None: TE's uncapped entry).
# layernorm_fwd keeps 3 here: 8 ran 0.82-0.98x of it (session 45 sweep, bf16 -> e4m3).
_CAPPED_GENERAL_FP8 = {"layernorm_fwd": (3, False), "rmsnorm_fwd": None}
# bf16 rows (bf16 in and out) where a tighter cap won once the LayerNorm general forward spilled
# less (its warp counts in shared memory): 8 CTAs an SM against 3, H100, session 45: sweep at
# 40704 / 46336 / 59648 / 121344 1.04-1.24x; A/B with the kernel change 1.14-1.31x at 40704-
# 121344. fp16 rows keep 3: at 8 the new kernel spills 212 B in fp16 (ptxas; bf16 68 B, and the
# old kernel at 8: fp16 28 B, bf16 224 B) and fp16 ran 0.73-1.00x there (perf/results/
# 2026-12-06-h100-session45, calls 2-4; the old kernel at 8 was not timed in fp16).
_CAPPED_GENERAL_BF16 = {"layernorm_fwd": (8, False)}
# The Numba path runs TE's general entry for such rows too; past 20480 columns with a cap by op
# (no pipeline: the Numba kernels have none there), every 16-bit and FP8 output alike. H100
# sweep (session 45, `tune_norms.py --backend numba --general`, bf16 / fp16 / bf16 -> e4m3 at
# 24832 / 59648 / 121344; the forwards' caps at 59648 / 121344 only) against TE's uncapped
# entry (2-3 CTAs an SM: 153-246 registers as loaded): layernorm_fwd 1.51-1.65x, rmsnorm_fwd
# 1.20-1.69x, layernorm_bwd 1.28-1.44x, rmsnorm_bwd 1.43-1.53x; each the best cap at every
# length. Shorter rows past _VECTOR_GENERAL_COLS take the Numba bands of
# _WIDE_VECTOR_GENERAL (session 47). A/B (call 6): 1.18-1.65x at
# 24832 / 46336 / 121344 on every op, FP8 outputs included (16-bit LayerNorm forwards ran with
# the warp-count change then; without it, as now, 1.05x faster still: call 7).
_CAPPED_GENERAL_NUMBA = {
    "layernorm_fwd": (4, False),
    "rmsnorm_fwd": (4, False),
    "layernorm_bwd": (3, False),
    "rmsnorm_bwd": (4, False),
}
# 16-bit rows (in and out) of the forwards take 6: the Numba forward's lean form (x kept as
# loaded, session 49) fits there. H100, same run, two rounds, TE's entry at 4 / 6 / 8 CTAs an
# SM, bf16: layernorm_fwd at 6 1.72x (46336) and 1.62x (121344) the wide form at 4, rmsnorm_fwd
# 1.86x (46336); 4 and 8 ran slower than 6 with the lean form. FP8 outputs keep 4 (the lean
# form ran 1.05x at 4 and lost at 6 / 8); fp32 rows have no lean form. perf/results/
# 2026-12-06-session49, call 2.
_CAPPED_GENERAL_NUMBA_LEAN = {"layernorm_fwd": (6, False), "rmsnorm_fwd": (6, False)}


def vector_general(
    key: NormKey, cols: int, alignment: int, backend: str | None = None
) -> NormConfig | None:
    """The measured one-CTA general entry of ``backend`` (None: NVRTC's) for rows of ``cols``
    taking 16-byte vectors (:data:`_VECTOR_GENERAL`, past it :data:`_WIDE_VECTOR_GENERAL`'s
    bands, and past those TE's entry under :func:`_general_cap`'s cap), or None where it has
    none."""
    lo, hi = _VECTOR_GENERAL_COLS
    if alignment < TUNED_ALIGNMENT or itemsize(key.input) != 2 or cols < lo:
        return None
    be = "numba" if backend == "numba" else "nvrtc"
    if cols <= hi:
        shape = _VECTOR_GENERAL[be].get(key.op)
    else:
        bands = _WIDE_VECTOR_GENERAL[be][key.op]
        if cols > bands[-1][0] and not key.fused_add:
            return _capped_general(key, cols, backend)
        band = next((b for b in bands if cols <= b[0]), None)
        shape = band and band[1:]
        if band and key.output in FP8_DTYPES:
            shape = _WIDE_VECTOR_GENERAL_FP8[be].get(key.op, {}).get(band[0], shape)
    if shape is None or shape[0] is None:
        return None
    return _one_cta_general(key, cols, TUNED_ALIGNMENT, *shape)


def _general_cap(key: NormKey, backend: str | None = None) -> tuple[int, bool] | None:
    """(min_ctas_per_sm, prefetch) of :func:`_capped_general` for ``key`` on ``backend``
    (None: NVRTC), or None: TE's uncapped entry."""
    if backend == "numba":
        rows16 = itemsize(key.input) == itemsize(key.output) == 2
        if rows16 and key.op in _CAPPED_GENERAL_NUMBA_LEAN:
            return _CAPPED_GENERAL_NUMBA_LEAN[key.op]
        return _CAPPED_GENERAL_NUMBA[key.op]
    if key.output in FP8_DTYPES:
        return _CAPPED_GENERAL_FP8[key.op]
    if key.input == key.output == "bf16" and key.op in _CAPPED_GENERAL_BF16:
        return _CAPPED_GENERAL_BF16[key.op]
    return _CAPPED_GENERAL[key.op]


def _capped_general(key: NormKey, cols: int, backend: str | None = None) -> NormConfig | None:
    """TE's general entry for ``key`` that serves ``cols`` with :func:`_general_cap`'s cap on
    ``backend``, or None where it is not a 16-byte one or the cap is None."""
    _, general = _index(True, measured=False)
    entries = general.get(key)
    if not entries:
        return None
    te = _general_serving(entries, cols)
    cap = _general_cap(key, backend)
    if cap is None or te.bytes_per_ldg != TUNED_ALIGNMENT:
        return None
    return _replace(te, origin="measured", min_ctas_per_sm=cap[0], prefetch=cap[1])


def select_norm(
    key: NormKey,
    cols: int,
    rows: int,
    alignment: int,
    *,
    allow_tuned: bool = True,
    generate: bool = True,
    measured: bool = True,
    backend: str | None = None,
) -> NormConfig:
    """Pick the configuration for one call, following TE's rules.

    Parameters
    ----------
    key : NormKey
        Op and dtypes of the call.
    cols, rows : int
        Row length and row count.
    alignment : int
        Largest power of two dividing every pointer and row pitch of the call, in bytes.
    allow_tuned : bool
        False forces the general path (used by tests and by backends without tuned support).
    generate : bool
        Where TE registers no tuned kernel for ``cols``, generate one (:func:`generated_tuned`)
        under the same alignment and row-count conditions.
    measured : bool
        False ignores the measured tables (:func:`measured_configs`, :func:`narrow_general`,
        :func:`vector_general`):
        TE's choice (tuners and tests compare against it).
    backend : str, optional
        The backend that will run it: its own measured entries (:data:`BACKEND_TABLES`) come
        first. None: the shared tables only.

    Raises
    ------
    UnsupportedError
        When no configuration serves these dtypes; the message lists what is supported.
    """
    _check_backend(backend)
    tuned, general = _index(True, measured, backend if backend in BACKEND_TABLES else None)
    if allow_tuned and alignment >= TUNED_ALIGNMENT and rows % TUNED_ROW_MULTIPLE == 0:
        cfg = tuned.get((key, cols))
        if cfg is None and generate and key in general:
            cfg = generated_tuned(key, cols, measured, narrow=backend != "numba")
        if cfg is not None:
            return cfg
    candidates = general.get(key)
    if not candidates:
        combos = ", ".join("/".join(c) for c in supported_norm_dtypes(key.op, key.fused_add))
        raise UnsupportedError(
            f"{key.op}: no kernel for weight={key.weight}, input={key.input}, "
            f"output={key.output}; supported (weight/input/output): {combos}"
        )
    if measured:
        one_cta = narrow_general(key, cols, alignment, backend) or vector_general(
            key, cols, alignment, backend
        )
        if one_cta is not None:
            return one_cta
    return _general_serving(candidates, cols)


def _general_serving(entries: list[NormConfig], cols: int) -> NormConfig:
    """TE's rule among general entries (sorted by hidden size): the smallest that covers
    ``cols`` in one CTA, else the largest (several CTAs a row)."""
    return next((c for c in entries if c.hidden_size >= cols), entries[-1])


def configs_for(op: str | Iterable[str] | None = None, include_fp8: bool = False):
    """Configurations filtered by op (for precompiling and for tests)."""
    ops = (op,) if isinstance(op, str) else tuple(op) if op is not None else NORM_OPS
    return tuple(c for c in norm_configs(include_fp8) if c.op in ops)


# --------------------------------------------------------------------------------------------
# Fused softmax
# --------------------------------------------------------------------------------------------

SOFTMAX_OPS = ("softmax_fwd", "softmax_bwd")
SOFTMAX_VARIANTS = ("scaled", "masked", "upper_triang", "aligned_causal")
SOFTMAX_DTYPES = ("fp32", "fp16", "bf16")
SOFTMAX_KINDS = ("warp", "block")


@dataclass(frozen=True)
class SoftmaxConfig:
    """One fused-softmax kernel configuration.

    ``warp`` entries give each row one warp (``warps_m`` rows per CTA); ``block`` entries give
    each row a whole CTA of ``warps_n`` warps. ``max_cols`` is the row length one CTA covers;
    longer rows use ``ceil(cols / max_cols)`` CTAs per row, as the general norm kernels do.
    The backward kernel is the same for every variant (masked positions have y == 0).
    ``min_ctas_per_sm`` is the kernel's ``__launch_bounds__`` minimum (a register cap).
    ``keys`` is 0 for the default table and, for entries of ``data/measured_softmax.json``, the
    key length the sweep timed them at (the entry serves rows up to that length). ``prefetch``
    is the software pipeline: the next row is loaded before this row's reductions (the Numba
    backward builds without it).

    ``chunk`` > 0 (block entries only) selects the streaming kernel: ``ceil(cols / max_cols)``
    CTAs a row, each streaming a contiguous part of any length with ``chunk`` vectors a thread
    at a time. It reads its part twice: the forward first for the (max, sum) online, then to
    write y; the backward (session 28) first for ``sum(dy * y)``, then to write dx. The second
    read hits L2 while few parts are in flight, so the row needs no registers to stay in and
    several CTAs share an SM (H200 run 164, bf16 forward prototype: 86% of the copy ceiling at
    32768 keys, 72% at 131072, against the held-row kernel's 77 / 57% in the same process; run
    175: at 131072 keys the backward on 2-4 parts a row, 1.04-1.12x over its held entries,
    where one CTA a row ran 0.82-0.96x). ``reverse`` (streaming entries only):
    the second pass walks the slice from its last chunk back, so it first reads the lines the
    first pass read last, the likeliest still in L2 when the rows in flight outgrow it.

    ``stage`` (streaming forward entries on the grid of all rows, one CTA or one cluster a row):
    the first pass also keeps the vectors it loads (and the masked variant their mask bytes) in
    dynamic shared memory, each thread its own (a CTA of a cluster its part of the row), and the
    second pass reads them from there instead of L2. The row is
    read from DRAM once and shared memory adds to the registers in holding it, so more rows
    are in flight an SM (H200 run 208, bf16 32768 keys on a grid of rows: a row held in shared
    memory 92.6-93.3% of the copy ceiling by plain loads, 89.3-93.1% by a TMA bulk copy, against
    27.0-77.9% held in registers and the library's streaming entry's 83.6-86.7%).
    Plans that need more shared memory than a CTA may have run the entry without it.
    """

    op: str
    kind: str
    max_cols: int
    dtype: str
    warps_m: int
    warps_n: int
    bytes_per_ldg: int = 16
    variant: str = "scaled"
    min_ctas_per_sm: int = 1
    keys: int = 0
    prefetch: bool = False
    grid: str = "persistent"
    chunk: int = 0
    reverse: bool = False
    stage: bool = False

    def __post_init__(self) -> None:
        if self.op not in SOFTMAX_OPS:
            raise ValueError(f"op: expected one of {SOFTMAX_OPS}, got {self.op!r}")
        if self.kind not in SOFTMAX_KINDS:
            raise ValueError(f"kind: expected one of {SOFTMAX_KINDS}, got {self.kind!r}")
        if self.dtype not in SOFTMAX_DTYPES:
            raise ValueError(f"dtype: expected one of {SOFTMAX_DTYPES}, got {self.dtype!r}")
        if self.variant not in SOFTMAX_VARIANTS:
            raise ValueError(f"variant: expected one of {SOFTMAX_VARIANTS}, got {self.variant!r}")
        if self.op == "softmax_bwd" and self.variant != "scaled":
            raise ValueError("softmax_bwd entries are variant-independent (use 'scaled')")
        if self.grid not in GRIDS:
            raise ValueError(f"grid: expected one of {GRIDS}, got {self.grid!r}")
        if self.kind == "warp" and self.warps_n != 1:
            raise ValueError("warp entries have warps_n == 1")
        if self.kind == "block" and self.warps_m != 1:
            raise ValueError("block entries have warps_m == 1")
        if not _pow2(self.bytes_per_ldg) or self.bytes_per_ldg > 16:
            raise ValueError(
                f"bytes_per_ldg must be a power of two <= 16, got {self.bytes_per_ldg}"
            )
        if self.bytes_per_ldg < itemsize(self.dtype):
            raise ValueError("bytes_per_ldg is smaller than one element")
        if self.max_cols % (self.warps_n * WARP_SIZE * self.num_elts):
            raise ValueError(
                f"max_cols {self.max_cols} is not a multiple of warps_n * 32 * {self.num_elts}"
            )
        if not 1 <= self.min_ctas_per_sm or self.threads * self.min_ctas_per_sm > (
            MAX_THREADS_PER_SM
        ):
            raise ValueError(
                f"min_ctas_per_sm must be >= 1 with threads * min_ctas_per_sm <= "
                f"{MAX_THREADS_PER_SM}, got {self.min_ctas_per_sm} x {self.threads} threads"
            )
        if not 0 <= self.chunk <= MAX_STREAM_CHUNK:
            raise ValueError(f"chunk must be in [0, {MAX_STREAM_CHUNK}], got {self.chunk}")
        if self.chunk and (self.kind != "block" or self.prefetch):
            raise ValueError("chunk (the streaming kernels) needs a block entry without prefetch")
        if self.reverse and not self.chunk:
            raise ValueError("reverse (the streaming second pass) needs chunk > 0")
        if self.stage and not (self.chunk and self.op == "softmax_fwd" and self.grid == "rows"):
            raise ValueError(
                "stage needs a streaming (chunk > 0) softmax_fwd entry on the grid of rows, got "
                f"{self.op} chunk {self.chunk} grid {self.grid!r}"
            )

    @property
    def threads(self) -> int:
        return self.warps_m * self.warps_n * WARP_SIZE

    @property
    def num_elts(self) -> int:
        return self.bytes_per_ldg // itemsize(self.dtype)

    @property
    def is_backward(self) -> bool:
        return self.op == "softmax_bwd"

    @property
    def stream(self) -> bool:
        """A streaming kernel (``chunk`` > 0): one CTA a row, the slice read twice."""
        return self.chunk > 0

    @property
    def origin(self) -> str:
        return "measured" if self.keys else "default"


# Warp-per-row kernels hold up to 2048 keys (64 fp32 registers a thread); past that a whole CTA
# shares a row. 128-thread CTAs for the warp kernels follow TE's fused softmax; the block sizes
# keep 16-32 elements a thread so the row stays in registers. Row lengths past 16384 use several
# CTAs per row (TE stops at 16384 keys).
_SOFTMAX_WARP_COLS = (32, 64, 128, 256, 512, 1024, 2048)
_SOFTMAX_BLOCK = ((4096, 8), (8192, 16), (16384, 16))  # (max_cols, warps_n)


def _default_softmax_configs() -> list[SoftmaxConfig]:
    out = []
    for op in SOFTMAX_OPS:
        variants = SOFTMAX_VARIANTS if op == "softmax_fwd" else ("scaled",)
        for variant in variants:
            for dtype in SOFTMAX_DTYPES:
                size = itemsize(dtype)
                for cols in _SOFTMAX_WARP_COLS:
                    elts = min(16 // size, cols // WARP_SIZE)
                    out.append(SoftmaxConfig(op, "warp", cols, dtype, 4, 1, elts * size, variant))
                for cols, warps_n in _SOFTMAX_BLOCK:
                    out.append(SoftmaxConfig(op, "block", cols, dtype, 1, warps_n, 16, variant))
    return out


def _softmax_from_json(raw: dict) -> SoftmaxConfig:
    """One entry of a measured softmax table (entries before a field existed take its default)."""
    return SoftmaxConfig(
        op=raw["op"],
        kind=raw["kind"],
        max_cols=int(raw["max_cols"]),
        dtype=raw["dtype"],
        warps_m=int(raw["warps_m"]),
        warps_n=int(raw["warps_n"]),
        bytes_per_ldg=int(raw["bytes_per_ldg"]),
        variant=raw["variant"],
        min_ctas_per_sm=int(raw["min_ctas_per_sm"]),
        keys=int(raw["keys"]),
        prefetch=bool(raw.get("prefetch", False)),
        grid=raw.get("grid", "persistent"),
        chunk=int(raw.get("chunk", 0)),
        reverse=bool(raw.get("reverse", False)),
        stage=bool(raw.get("stage", False)),
    )


@functools.cache
def measured_softmax_configs(backend: str | None = None) -> tuple[SoftmaxConfig, ...]:
    """Entries chosen by a timed sweep (``perf/tune_softmax.py``) on the GPU named in
    ``data/measured_softmax.json``, one per (op, variant, dtype, key length timed).

    The sweep timed the upper-triangular causal forward; the aligned causal one shares its
    entries (the two kernels differ only in where a row's causal limit falls). ``backend``
    "numba" gives that backend's own entries instead (``measured_softmax_numba.json``); each
    replaces the shared entry of its key length for that backend.
    """
    out = []
    for raw in _table_entries("measured_softmax", backend):
        cfg = _softmax_from_json(raw)
        out.append(cfg)
        if cfg.variant == "upper_triang":
            out.append(_replace(cfg, variant="aligned_causal"))
    return tuple(out)


@functools.cache
def softmax_configs(measured: bool = True, backend: str | None = None) -> tuple[SoftmaxConfig, ...]:
    """Every softmax configuration: per op, variant and dtype, warp then block kinds of the
    default table, then (``measured``) the measured entries: the shared ones, where ``backend``
    has its own entry for the same key length that one instead."""
    out = _default_softmax_configs()
    if measured:
        shared = measured_softmax_configs()
        own = measured_softmax_configs(backend) if backend in BACKEND_TABLES else ()
        mine = {(c.op, c.variant, c.dtype, c.keys) for c in own}
        out += [c for c in shared if (c.op, c.variant, c.dtype, c.keys) not in mine]
        out += own
    return tuple(out)


@functools.cache
def _softmax_index(backend: str | None = None) -> dict:
    index: dict[tuple[str, str, str, str], list[SoftmaxConfig]] = {}
    for cfg in softmax_configs(True, backend):
        index.setdefault((cfg.op, cfg.variant, cfg.dtype, cfg.origin), []).append(cfg)
    for entries in index.values():
        entries.sort(key=lambda c: (c.keys, c.max_cols))
    return index


def select_softmax(
    op: str,
    variant: str,
    dtype: str,
    cols: int,
    measured: bool = True,
    backend: str | None = None,
) -> SoftmaxConfig:
    """The configuration for rows of ``cols`` keys.

    Measured entries (``measured``) serve rows longer than half the shortest key length the
    sweep timed: the entry timed at the smallest length >= ``cols``, else the longest, with
    several CTAs a row where its ``max_cols`` is shorter (a streaming entry too: each CTA then
    streams at most ``max_cols`` keys, so the rows in flight stay what its sweep timed).
    Otherwise the default table: the entry with the smallest ``max_cols >= cols``, else the
    largest (several CTAs a row).
    ``backend``: the backend that will run it (its own measured entries replace shared ones).
    """
    if op == "softmax_bwd":
        variant = "scaled"
    _check_backend(backend)
    index = _softmax_index(backend if backend in BACKEND_TABLES else None)
    if measured:
        tuned = index.get((op, variant, dtype, "measured"))
        if tuned and 2 * cols > tuned[0].keys:
            for cfg in tuned:
                if cfg.keys >= cols:
                    return cfg
            return tuned[-1]
    candidates = index.get((op, variant, dtype, "default"))
    if not candidates:
        raise UnsupportedError(
            f"{op}: dtype {dtype!r} is not supported; expected one of {SOFTMAX_DTYPES}"
        )
    for cfg in candidates:
        if cfg.max_cols >= cols:
            return cfg
    return candidates[-1]
