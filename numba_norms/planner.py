"""The launch planner: configuration + device -> what to compile and how to launch it.

Planning is two steps because the grid depends on the compiled kernel's occupancy:

1. :func:`norm_spec` fixes everything that is compiled in (template parameters / closure
   constants): vector width, vectors per thread, warps, general or tuned, CTAs per row.
2. :func:`norm_plan` takes that spec, the problem size, the device limits and the kernel's
   occupancy, and returns the grid, block, shared memory, scratch layout (barrier, inter-CTA
   statistics, dgamma/dbeta partials) and whether the launch is cooperative.

Both backends compile from the same :class:`NormSpec` and launch from the same :class:`NormPlan`.
Pure arithmetic: no backend, no array library, testable with fake devices.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .registry import WARP_SIZE, NormConfig, SoftmaxConfig, itemsize

__all__ = [
    "DeviceLimits",
    "NormPlan",
    "NormSpec",
    "PlanError",
    "ResidencyError",
    "RowPlan",
    "SoftmaxSpec",
    "MAX_ROWS",
    "SCRATCH_ALIGN",
    "check_rows",
    "cluster_size",
    "finalize_shape",
    "norm_plan",
    "norm_spec",
    "row_plan",
    "softmax_plan",
    "softmax_spec",
    "vector_elements",
]

# Every scratch region starts on this boundary so any vector access inside it is aligned.
SCRATCH_ALIGN = 256
# Static shared memory a staged softmax CTA keeps beside its row (the per-warp reductions and
# cluster slots take a few hundred bytes).
STAGE_RESERVE = 1024
# The kernels index columns with 32-bit ints: the longest row the streaming softmax kernels
# serves leaves room for its column step (at most 2^17 columns a chunk) without overflow.
STREAM_MAX_COLS = 2**31 - 2**20
# Rows are counted in 32-bit ints on the device (row groups, trip counts, the last trip's row
# indices run past `rows` by up to a grid step of ~2^21): calls take at most this many rows.
MAX_ROWS = 2**30
# Programmatic dependent launch (griddepcontrol: DeviceLimits.dependent_launch, the kernels'
# prologue) needs compute capability 9.0; the CUDA C kernels test `__CUDA_ARCH__ >= 900`.
DEPENDENT_LAUNCH_CC = (9, 0)
# Thread-block clusters (sm_90+): the CTAs of a multi-CTA row run as one cluster and meet at
# `barrier.cluster` instead of the global arrival counter (DeviceLimits.clusters, RowPlan.cluster;
# the kernels test `%cluster_nctarank`). At most the portable cluster size: larger row groups
# keep the cooperative launch and the counter.
CLUSTER_CC = (9, 0)
MAX_CLUSTER = 8
# Finalize kernel (dgamma/dbeta partial reduction): a CTA of 32 columns x up to this many
# thread rows (the kernels' shared memory holds that many partial sums a column).
FINALIZE_MAX_ROWS = 32
# Partial rows each finalize thread aims to add: one batch of loads in flight (the kernels' BATCH).
FINALIZE_ROWS_PER_THREAD = 8


class PlanError(ValueError):
    """A problem the device cannot run with the chosen configuration."""


class ResidencyError(PlanError):
    """A row's CTAs cannot all be resident at once (they wait for each other): ``resident`` is
    how many of the kernel's CTAs the device holds. Planning again with ``max_ctas_per_row``
    at most that gives each CTA a longer part of the row (:func:`norm_spec`,
    :func:`softmax_spec`)."""

    def __init__(self, message: str, resident: int) -> None:
        super().__init__(message)
        self.resident = resident


@dataclass(frozen=True)
class DeviceLimits:
    """The device facts the planner needs.

    ``max_ctas_per_row`` is 1 where CTAs cannot wait for each other (Numba's CUDA simulator runs
    blocks one after another, so an inter-CTA barrier would never open). ``dependent_launch``:
    the device can start a kernel before the previous one in its stream has finished
    (programmatic dependent launch, compute capability 9.0 and later). ``clusters``: it can
    launch thread-block clusters (compute capability 9.0 and later). ``max_grid_y``: the
    largest grid y dimension (row groups of a launch; CUDA's limit is 65535).
    """

    sm_count: int
    max_threads_per_block: int = 1024
    max_shared_per_block_optin: int = 227 * 1024
    cooperative: bool = True
    max_ctas_per_row: int = 1 << 16
    dependent_launch: bool = False
    clusters: bool = False
    max_grid_y: int = 65535
    name: str = ""

    def __post_init__(self) -> None:
        if self.sm_count < 1:
            raise ValueError(f"sm_count must be >= 1, got {self.sm_count}")
        if self.max_ctas_per_row < 1:
            raise ValueError("max_ctas_per_row must be >= 1")
        if self.max_grid_y < 1:
            raise ValueError(f"max_grid_y must be >= 1, got {self.max_grid_y}")

    @classmethod
    def simulator(cls) -> DeviceLimits:
        """Limits of Numba's CUDA simulator: a few SMs, no inter-CTA waiting."""
        return cls(sm_count=2, cooperative=False, max_ctas_per_row=1, name="cudasim")


def cluster_size(ctas_per_row: int, limits: DeviceLimits) -> int:
    """CTAs per thread-block cluster for rows of ``ctas_per_row`` CTAs (1: no cluster).

    A row group becomes one cluster where the device has clusters and the group fits the
    portable cluster size (MAX_CLUSTER).
    """
    if limits.clusters and 1 < ctas_per_row <= MAX_CLUSTER:
        return ctas_per_row
    return 1


def _align(n: int, a: int = SCRATCH_ALIGN) -> int:
    return (n + a - 1) // a * a


def check_rows(rows: int, name: str = "x") -> None:
    """Raise ValueError for more rows than the kernels index (:data:`MAX_ROWS`)."""
    if rows > MAX_ROWS:
        raise ValueError(
            f"{name}: {rows} rows; the kernels take at most {MAX_ROWS} rows a call "
            "(32-bit row indices): split the call"
        )


def vector_elements(alignments_and_sizes: list[tuple[int, int]], limit: int) -> int:
    """Largest power-of-two vector length (elements) every array allows, at most ``limit``.

    Each pair is (alignment in bytes of the array's pointer and row pitch, its itemsize): a
    vector of ``n`` elements needs ``n * itemsize`` bytes of alignment.
    """
    n = limit
    while n > 1 and any(align % (n * size) for align, size in alignments_and_sizes):
        n //= 2
    return max(n, 1)


class _RowSpec:
    """What norm and softmax specs share: the config's thread mapping, read through."""

    __slots__ = ()
    config: Any
    num_elts: int
    ldgs: int
    ctas_per_row: int

    @property
    def op(self) -> str:
        return self.config.op

    @property
    def threads(self) -> int:
        return self.config.threads

    @property
    def warps_m(self) -> int:
        return self.config.warps_m

    @property
    def warps_n(self) -> int:
        return self.config.warps_n

    @property
    def cols_per_row_pass(self) -> int:
        """Columns covered by all CTAs of a row: the kernel handles rows up to this length."""
        return self.ctas_per_row * self.config.warps_n * WARP_SIZE * self.num_elts * self.ldgs

    @property
    def multi_cta(self) -> bool:
        """Several CTAs share a row. Both backends compile it in (the inter-CTA exchange), so it
        is part of ``kernel_key``; the CTA count itself is a run-time value."""
        return self.ctas_per_row > 1

    @property
    def ctas_per_sm_cap(self) -> int | None:
        """At most this many CTAs an SM in the grid (None: as many as are resident)."""
        return None

    @property
    def grid_of_rows(self) -> bool:
        """Launch a row group per CTA instead of the persistent grid (the config's ``grid``)
        where a row takes one CTA (a general entry's longer rows take several: those keep the
        persistent grid, unless :func:`row_plan` launches each row as one cluster)."""
        return self.config.grid == "rows" and self.ctas_per_row == 1

    @property
    def cluster_rows_grid(self) -> bool:
        """Rows of several CTAs may take the grid of all rows, a cluster a row, where the plan
        launches them as clusters (softmax entries timed so; norm entries never)."""
        return False

    def stage_bytes(self, cols: int) -> int:
        """Dynamic shared memory a CTA stages its row in (0: none; softmax ``stage``)."""
        return 0


@dataclass(frozen=True)
class NormSpec(_RowSpec):
    """What one compiled norm kernel is specialised on (both backends)."""

    config: NormConfig
    num_elts: int  # elements per vector access
    ldgs: int  # vector accesses per thread per row
    general: bool  # bounds-checked columns (any row length)
    ctas_per_row: int

    @property
    def n_partials(self) -> int:
        """fp32 partial-sum arrays the backward writes (dgamma, and dbeta for LayerNorm)."""
        if not self.config.is_backward:
            return 0
        return 1 if self.config.is_rms else 2

    @property
    def kernel_key(self) -> tuple:
        """Everything a compiled kernel depends on (of ctas_per_row only ``multi_cta``)."""
        c = self.config
        return (
            c.op,
            c.weight,
            c.input,
            c.output,
            c.warps_m,
            c.warps_n,
            self.num_elts,
            self.ldgs,
            self.general,
            c.fused_add,
            c.min_ctas_per_sm,
            c.prefetch,
            c.wgrad_smem,
            c.fold,
            self.multi_cta,
        )


def norm_spec(config: NormConfig, cols: int, vec_elts: int, limits: DeviceLimits) -> NormSpec:
    """Specialise ``config`` for rows of ``cols`` whose arrays allow ``vec_elts``-wide vectors.

    Tuned entries keep their shape (the caller selected them only when aligned). General entries
    use as many CTAs per row as TE would (``ceil(cols / hidden_size)``); where the device allows
    fewer (``limits.max_ctas_per_row``: 1 where CTAs cannot wait for each other, or what is
    resident on a small GPU), that many CTAs cover the row with more vectors per thread.
    """
    if cols < 1:
        raise PlanError(f"hidden size must be >= 1, got {cols}")
    num_elts = min(config.num_elts, vec_elts)
    lanes = config.warps_n * WARP_SIZE
    if config.kind == "tuned":
        if num_elts != config.num_elts:
            raise PlanError("tuned configuration needs full-width vector alignment")
        if config.hidden_size != cols:
            raise PlanError(f"tuned entry for {config.hidden_size} used for {cols} columns")
        if config.ctas_per_row > limits.max_ctas_per_row:
            raise PlanError(f"this device cannot run {config.ctas_per_row} CTAs per row")
        ldgs = cols // (config.ctas_per_row * lanes * num_elts)
        return NormSpec(config, num_elts, ldgs, False, config.ctas_per_row)
    ctas_per_row = math.ceil(cols / config.hidden_size)
    if ctas_per_row <= limits.max_ctas_per_row:
        ldgs = math.ceil(config.hidden_size / (lanes * num_elts))
    else:  # as many CTAs as may share a row, each with a longer part of it
        ctas_per_row = limits.max_ctas_per_row
        ldgs = math.ceil(cols / (ctas_per_row * lanes * num_elts))
    return NormSpec(config, num_elts, ldgs, True, ctas_per_row)


@dataclass(frozen=True)
class RowPlan:
    """A launch of one row kernel (norm or softmax; for norm backward also its finalize kernel).

    Scratch layout (byte offsets into one device buffer of ``scratch_bytes``):

    * ``barrier``: one int32 arrival counter per row group, zeroed before every launch
      (only with ``ctas_per_row > 1`` and no cluster);
    * ``stats``: inter-CTA exchange, ``[2 buffers][ctas_per_col][warps_m][ctas_per_row][2]`` fp32
      (only with ``ctas_per_row > 1``);
    * ``partials`` (backward): dgamma then dbeta partial sums, each ``[partial_rows, cols]`` fp32,
      row ``blockIdx.y * warps_m + warp_m``; the finalize kernel sums the rows in order.

    ``dependent`` / ``finalize_dependent``: launch the main kernel / the finalize kernel as a
    programmatic dependent of the stream's previous kernel (where the device has it; the main
    kernel only with one CTA a row, never cooperatively). Its CTAs are scheduled on the SMs the
    previous kernel leaves and wait in the kernel (``griddepcontrol.wait``, before any memory
    access) until that kernel has finished: the ~1.5 us gap between two launches is hidden
    (run 65: the finalize after the main kernel, 1.3-1.9 us a backward). Not for a grid capped
    below the kernel's residency (streaming softmax entries): placed beside a running kernel,
    some SMs get more of its CTAs than the cap, and as rows are dealt out to CTAs in a fixed
    order those SMs finish last (run 180: the bf16 streaming forward at 32768 keys, 3 CTAs an SM
    where 4 fit, ran 1.13-1.16x slower back to back than launched after a finished kernel).

    ``shared_bytes``: dynamic shared memory a CTA (a staged softmax row, ``SoftmaxConfig.stage``;
    0 otherwise).

    ``cluster``: CTAs per thread-block cluster (1: none). A multi-CTA row group launched as a
    cluster synchronises with ``barrier.cluster`` (hardware, within a GPC) instead of the
    arrival counter in global memory; it needs no cooperative launch and no counter memset, and
    its grid holds as many row groups as clusters can be resident (``max_active_clusters``).
    """

    spec: NormSpec | SoftmaxSpec
    rows: int
    cols: int
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int
    ctas_per_row: int
    ctas_per_col: int
    cooperative: bool
    barrier_offset: int
    barrier_bytes: int
    stats_offset: int
    stats_bytes: int
    partial_offset: int
    partial_rows: int
    partial_bytes: int
    scratch_bytes: int
    finalize_grid: tuple[int, int, int]
    finalize_block: tuple[int, int, int]
    dependent: bool = False
    finalize_dependent: bool = False
    cluster: int = 1

    @property
    def dbeta_partial_offset(self) -> int:
        return self.partial_offset + self.partial_bytes

    @property
    def row_iterations(self) -> int:
        """Row-loop trips of every CTA (the same for all CTAs of one row group)."""
        return math.ceil(self.rows / (self.ctas_per_col * self.spec.warps_m))


def row_plan(
    spec: NormSpec | SoftmaxSpec,
    rows: int,
    cols: int,
    limits: DeviceLimits,
    max_active_per_sm: int,
    max_active_clusters: int | None = None,
) -> RowPlan:
    """Grid, block and scratch for ``rows`` x ``cols`` with a kernel of ``max_active_per_sm``.

    TE's formulae: a persistent grid of ``sm_count * occupancy / ctas_per_row`` row groups
    (tuned) or that many but at most one per ``warps_m`` rows (general). We cap the tuned grid at
    the row count too: idle CTAs only add dgamma/dbeta partial rows. Row groups launched as
    clusters (:func:`cluster_size`) number at most ``max_active_clusters`` (the driver's count
    for this kernel and cluster size; GPCs can leave SMs over), so that every group of the
    persistent grid is resident at once; without it the occupancy's figure is used (at most the
    spec's ``ctas_per_sm_cap`` an SM: streaming softmax entries). A spec with ``grid_of_rows``
    gets one row group per ``warps_m`` rows instead (at most ``limits.max_grid_y``; its CTAs
    then loop over the rest as the persistent ones do), and so does a softmax entry timed on
    the grid of rows with rows of several CTAs, where they launch as one cluster (uncapped: the
    hardware places clusters as they fit).
    """
    if rows < 1 or cols < 1:
        raise PlanError(f"rows and cols must be >= 1, got {rows} x {cols}")
    if cols > spec.cols_per_row_pass:
        raise PlanError(f"{cols} columns exceed this kernel's {spec.cols_per_row_pass}")
    if spec.threads > limits.max_threads_per_block:
        raise PlanError(
            f"{spec.threads} threads exceed the device's {limits.max_threads_per_block}"
        )
    if max_active_per_sm < 1:
        raise PlanError("the kernel cannot be resident on this device (occupancy 0)")
    shared = spec.stage_bytes(cols)
    if shared and shared + STAGE_RESERVE > limits.max_shared_per_block_optin:
        raise PlanError(
            f"a staged row of {cols} columns needs {shared} bytes of shared memory; a CTA may "
            f"have {limits.max_shared_per_block_optin - STAGE_RESERVE}"
        )
    warps_m = spec.warps_m
    ctas_per_row = spec.ctas_per_row
    cluster = cluster_size(ctas_per_row, limits)
    if cluster > 1 and max_active_clusters is not None and max_active_clusters < 1:
        cluster = 1  # the driver cannot place such a cluster: the counter path
    # A cluster is placed whole and waits for nothing outside it, so its rows can take the grid
    # of all rows; the counter path's CTAs wait for each other across the grid and must all be
    # resident (the persistent grid).
    rows_grid = spec.grid_of_rows or (spec.cluster_rows_grid and cluster > 1)
    # A staged row's shared memory is not in max_active_per_sm; only the grid of rows, which
    # sizes nothing from it, may launch one (one CTA a row, or a cluster a row: the counter
    # path's CTAs must all be resident). max_active_clusters, queried without it, only decides
    # whether a cluster can be placed at all: one CTA an SM, at most MAX_CLUSTER of them, is
    # within a GPC.
    if shared and not rows_grid:
        raise PlanError("a staged row needs the grid of rows, one CTA or one cluster a row")
    cap = None if rows_grid else spec.ctas_per_sm_cap
    resident = limits.sm_count * (max_active_per_sm if cap is None else min(cap, max_active_per_sm))
    if ctas_per_row > resident:
        raise ResidencyError(
            f"{ctas_per_row} CTAs per row cannot all be resident ({resident} fit)", resident
        )
    groups = limits.max_grid_y if rows_grid else resident // ctas_per_row
    capped = cap is not None and cap < max_active_per_sm  # (no dependent launch: see above)
    if cluster > 1 and max_active_clusters is not None and not rows_grid:
        groups = min(groups, max_active_clusters)
    ctas_per_col = max(1, min(groups, math.ceil(rows / warps_m), limits.max_grid_y))
    multi = ctas_per_row > 1
    counter = multi and cluster == 1
    cooperative = counter and limits.cooperative

    offset = 0
    barrier_offset, barrier_bytes = offset, (ctas_per_col * 4 if counter else 0)
    offset = _align(offset + barrier_bytes)
    stats_offset = offset
    stats_bytes = 2 * ctas_per_col * warps_m * ctas_per_row * 2 * 4 if multi else 0
    offset = _align(offset + stats_bytes)
    partial_offset = offset
    n_partials = spec.n_partials
    partial_rows = ctas_per_col * warps_m if n_partials else 0
    partial_bytes = _align(partial_rows * cols * 4) if n_partials else 0
    offset += n_partials * partial_bytes

    fin_grid, fin_block = finalize_shape(partial_rows, cols) if n_partials else ((0,) * 3,) * 2
    return NormPlan(
        spec=spec,
        rows=rows,
        cols=cols,
        grid=(ctas_per_row, ctas_per_col, 1),
        block=(spec.threads, 1, 1),
        shared_bytes=shared,
        ctas_per_row=ctas_per_row,
        ctas_per_col=ctas_per_col,
        cooperative=cooperative,
        barrier_offset=barrier_offset,
        barrier_bytes=barrier_bytes,
        stats_offset=stats_offset,
        stats_bytes=stats_bytes,
        partial_offset=partial_offset,
        partial_rows=partial_rows,
        partial_bytes=partial_bytes,
        scratch_bytes=offset,
        finalize_grid=fin_grid,
        finalize_block=fin_block,
        dependent=limits.dependent_launch and not multi and not capped,
        finalize_dependent=bool(n_partials) and limits.dependent_launch,
        cluster=cluster,
    )


def finalize_shape(
    partial_rows: int, cols: int
) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Grid and block of the dgamma/dbeta finalize: 32 columns a CTA, ``ty`` thread rows.

    ``ty`` is the power of two (<= FINALIZE_MAX_ROWS) that gives each thread about one batch of
    FINALIZE_ROWS_PER_THREAD partial rows, so the loads of a column are spread over the CTA
    instead of one thread's serial loop (which left a 4096-column finalize on 16 CTAs, each
    thread adding 264 rows one batch after another).
    """
    if partial_rows < 1 or cols < 1:
        raise PlanError(f"finalize needs partial rows and columns, got {partial_rows} x {cols}")
    want = math.ceil(partial_rows / FINALIZE_ROWS_PER_THREAD)
    ty = min(FINALIZE_MAX_ROWS, 1 << (want - 1).bit_length())
    return (math.ceil(cols / WARP_SIZE), 1, 1), (WARP_SIZE, ty, 1)


# Every row kernel launches from the same plan type.
NormPlan = RowPlan


def norm_plan(
    spec: NormSpec,
    rows: int,
    cols: int,
    limits: DeviceLimits,
    max_active_per_sm: int,
    max_active_clusters: int | None = None,
) -> RowPlan:
    """The plan of a norm kernel (see :func:`row_plan`)."""
    return row_plan(spec, rows, cols, limits, max_active_per_sm, max_active_clusters)


@dataclass(frozen=True)
class SoftmaxSpec(_RowSpec):
    """What one compiled softmax kernel is specialised on (both backends).

    The thread mapping is the norms' (docs/design.md): warp entries are ``warps_m`` rows of one
    warp, block entries one row of ``warps_n`` warps. Columns are always bounds-checked.
    """

    config: SoftmaxConfig
    num_elts: int
    ldgs: int
    ctas_per_row: int
    general: bool = True
    n_partials: int = 0

    @property
    def variant(self) -> str:
        return self.config.variant

    @property
    def stream(self) -> bool:
        """A streaming kernel (``config.chunk``): ``ldgs`` vectors a thread at a time, each CTA
        of a row streaming a contiguous part of any length."""
        return self.config.chunk > 0

    @property
    def ctas_per_sm_cap(self) -> int | None:
        """A streaming entry's ``min_ctas_per_sm`` also caps its persistent grid: the rows in
        flight are what the second read finds in L2 (run 164's prototype: 3 CTAs of 512 threads
        an SM at 32768 bf16 keys beat 4). On the grid of all rows the hardware deals rows to
        SMs as they free up, as many CTAs an SM as are resident (run 197: 1.03-1.16x over the
        persistent grid at 8192-32768 keys; a persistent row copy ran 91.6% of the copy
        ceiling where the same copy on a grid of rows ran 96.5%, run 196)."""
        return self.config.min_ctas_per_sm if self.stream and not self.grid_of_rows else None

    @property
    def cluster_rows_grid(self) -> bool:
        """An entry timed on the grid of rows with rows of several CTAs (``keys > max_cols``,
        run 201); entries timed on one CTA a row keep the persistent grid for longer rows."""
        c = self.config
        return c.grid == "rows" and self.ctas_per_row > 1 and c.keys > c.max_cols

    def stage_bytes(self, cols: int) -> int:
        """``config.stage``: a CTA's part of the row as loaded (the kernels' ``RowPart``: the
        row, or ``ceil(cols / ctas)`` rounded up to a vector), every vector of it (the last one
        whole), each in at least a 32-bit word (the Numba kernels stage words); the masked
        variant adds the vectors' mask bytes, a word per 4 columns, after a 16-byte boundary."""
        if not self.config.stage:
            return 0
        n, ctas = self.num_elts, self.ctas_per_row
        vectors = -(-cols // n) if ctas == 1 else -(-cols // (ctas * n))
        x_bytes = vectors * max(n * itemsize(self.config.dtype), 4)
        if self.config.variant != "masked":
            return x_bytes
        return -(-x_bytes // 16) * 16 + vectors * 4 * -(-n // 4)

    @property
    def cols_per_row_pass(self) -> int:
        if self.stream:
            return STREAM_MAX_COLS  # the kernel loops over the row
        return super().cols_per_row_pass

    @property
    def kernel_key(self) -> tuple:
        """Everything a Numba kernel depends on (of ctas_per_row only ``multi_cta``); the NVRTC
        backend builds a module per CTA count besides (``SOFTMAX_ROW_CTAS``)."""
        c = self.config
        return (
            c.op, c.variant, c.dtype, c.warps_m, c.warps_n, self.num_elts, self.ldgs,
            c.min_ctas_per_sm, c.prefetch, self.stream, c.reverse, c.stage, self.multi_cta,
        )  # fmt: skip


def softmax_spec(
    config: SoftmaxConfig, cols: int, vec_elts: int, limits: DeviceLimits
) -> SoftmaxSpec:
    """Specialise ``config`` for rows of ``cols`` whose arrays allow ``vec_elts``-wide vectors.

    Narrower vectors keep the columns a CTA covers (more vector accesses per thread); rows longer
    than ``max_cols`` get several CTAs (``ceil(cols / max_cols)``), or where the device allows
    fewer (``limits.max_ctas_per_row``: 1 where CTAs cannot wait for each other, or what is
    resident on a small GPU) that many with more registers. A streaming entry
    (``config.chunk``) takes ``chunk`` vectors a thread a step, whatever the vector width, its
    CTAs of a row each streaming a contiguous part of any length.
    """
    if cols < 1:
        raise PlanError(f"key length must be >= 1, got {cols}")
    num_elts = min(config.num_elts, vec_elts)
    ctas_per_row = math.ceil(cols / config.max_cols)
    fits = ctas_per_row <= limits.max_ctas_per_row
    if not fits:
        ctas_per_row = limits.max_ctas_per_row
    if config.chunk:  # a streaming CTA loops over its part, whatever its length
        return SoftmaxSpec(config, num_elts, config.chunk, ctas_per_row)
    lanes = config.warps_n * WARP_SIZE
    if fits:
        ldgs = math.ceil(config.max_cols / (lanes * num_elts))
    else:  # each CTA holds a longer part of the row
        ldgs = math.ceil(cols / (ctas_per_row * lanes * num_elts))
    return SoftmaxSpec(config, num_elts, ldgs, ctas_per_row)


def softmax_plan(
    spec: SoftmaxSpec,
    rows: int,
    cols: int,
    limits: DeviceLimits,
    max_active_per_sm: int,
    max_active_clusters: int | None = None,
) -> RowPlan:
    """The plan of a softmax kernel (see :func:`row_plan`)."""
    return row_plan(spec, rows, cols, limits, max_active_per_sm, max_active_clusters)
