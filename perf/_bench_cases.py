"""Benchmark cases, shape sets and byte formulas (pure Python: no torch, no GPU).

Every throughput number of ``perf/bench.py`` is ``bytes / median time`` where ``bytes`` comes
from the small formulas below: the fewest bytes an op must move through device memory (each
input read once, each output written once). Traffic a real kernel adds on top (the norm
backward's fp32 partial sums, the mask re-read once per head, the scratch barrier memset, L2
misses on re-reads) is *not* counted, so a kernel that moves extra bytes shows a lower GB/s.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "ALL_OPS",
    "DTYPE_SIZES",
    "NORM_OPS",
    "SOFTMAX_OPS",
    "Case",
    "build_cases",
    "expand_ops",
    "norm_bwd_bytes",
    "norm_bwd_partial_bytes",
    "norm_fwd_bytes",
    "sets_needed",
    "softmax_bwd_bytes",
    "softmax_dims",
    "softmax_fwd_bytes",
]

DTYPE_SIZES = {"fp32": 4, "fp16": 2, "bf16": 2}
STAT_SIZE = 4  # mu and rsigma are fp32, one per row

NORM_OPS = ("layernorm_fwd", "layernorm_bwd", "rmsnorm_fwd", "rmsnorm_bwd")
# Forward with an FP8 (e4m3) output: y = fp8(normalised * scale), amax updated; 1 byte per y.
FP8_OPS = ("layernorm_fwd_fp8", "rmsnorm_fwd_fp8")
# The backward kernel is the same for every softmax variant (masked positions have y == 0), so
# only the scaled one is timed.
SOFTMAX_OPS = (
    "softmax_fwd",
    "softmax_bwd",
    "masked_softmax_fwd",
    "upper_triang_softmax_fwd",
    "aligned_causal_softmax_fwd",
)
ALL_OPS = NORM_OPS + FP8_OPS + SOFTMAX_OPS
OP_GROUPS = {
    "all": ALL_OPS,
    "norms": NORM_OPS + FP8_OPS,
    "layernorm": NORM_OPS[:2] + FP8_OPS[:1],
    "rmsnorm": NORM_OPS[2:] + FP8_OPS[1:],
    "fp8": FP8_OPS,
    "softmax": SOFTMAX_OPS,
    "fwd": tuple(op for op in ALL_OPS if "_fwd" in op),
    "bwd": tuple(op for op in ALL_OPS if op.endswith("_bwd")),
}

NORM_ROWS = 16384

# Hidden sizes (norms) and key lengths (softmax) per set. "full" is the whole matrix.
NORM_HIDDEN = {
    "quick": (4096, 5003),
    "default": (1024, 4096, 5003, 8192, 16384, 65536),
    "full": (
        768, 1000, 1024, 2048, 2560, 3584, 4096, 5003, 5120, 7168,
        8192, 12288, 16384, 32768, 65536,
    ),
}  # fmt: skip
SOFTMAX_KEYS = {
    "quick": (512, 4096),
    "default": (128, 512, 2048, 4096, 16384, 32768),
    "full": (128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 131072),
}
DTYPES = {"quick": ("bf16",), "default": ("bf16",), "full": ("bf16", "fp16", "fp32")}

# Softmax problems keep the b=4, h=32, sq=sk while x has at most SOFTMAX_ELEMS elements
# (256 MiB in bf16); past that b*h shrinks (down to 1) and, beyond sk=16384, sq shrinks too. The
# row says so in its "extra" column.
SOFTMAX_B, SOFTMAX_H = 4, 32
SOFTMAX_ELEMS = 1 << 27
SOFTMAX_MAX_ELEMS = 1 << 30  # a square causal problem larger than this is skipped
SQUARE_MAX_SK = 16384  # up to here sq == sk; longer rows use sq = SOFTMAX_ELEMS // sk


# --------------------------------------------------------------------------------------------
# byte formulas
# --------------------------------------------------------------------------------------------


def norm_fwd_bytes(rows: int, cols: int, x_size: int, y_size: int, w_size: int, rms: bool) -> int:
    """Bytes of one norm forward: x read + y written + gamma (and beta) read + rsigma (and mu)
    written.

    ``rows * cols * (x_size + y_size) + cols * w_size * (1 if rms else 2)
    + rows * 4 * (1 if rms else 2)`` (statistics are fp32).
    """
    vectors = 1 if rms else 2
    return rows * cols * (x_size + y_size) + cols * w_size * vectors + rows * STAT_SIZE * vectors


def norm_bwd_bytes(rows: int, cols: int, x_size: int, dy_size: int, w_size: int, rms: bool) -> int:
    """Bytes of one norm backward: x and dy read + dx written + gamma read + rsigma (and mu)
    read + dgamma (and dbeta) written.

    ``rows * cols * (dy_size + 2 * x_size) + cols * w_size * (1 + (1 if rms else 2))
    + rows * 4 * (1 if rms else 2)``. dx has x's dtype. The fp32 partial sums the kernel writes
    and the finalize kernel reads back are extra traffic, not counted here
    (:func:`norm_bwd_partial_bytes`).
    """
    vectors = 1 if rms else 2
    return (
        rows * cols * (dy_size + 2 * x_size)
        + cols * w_size * (1 + vectors)
        + rows * STAT_SIZE * vectors
    )


def norm_bwd_partial_bytes(partial_rows: int, cols: int, rms: bool) -> int:
    """Extra traffic of the backward's fp32 partials: written once and read once by finalize.

    ``2 * partial_rows * cols * 4 * (1 if rms else 2)`` -- reported, never counted in GB/s.
    """
    return 2 * partial_rows * cols * 4 * (1 if rms else 2)


def softmax_fwd_bytes(rows: int, cols: int, size: int, mask_bytes: int = 0) -> int:
    """Bytes of one softmax forward: x read + y written (+ the uint8 mask read once).

    ``rows * cols * 2 * size + mask_bytes``. The mask ``[b or 1, 1, sq, sk]`` is counted once
    although the kernel reads it once per head (the repeats may hit L2). The causal variants
    count the full x although a kernel may skip reading the excluded triangle; y is written in
    full (zeros included).
    """
    return rows * cols * 2 * size + mask_bytes


def softmax_bwd_bytes(rows: int, cols: int, size: int) -> int:
    """Bytes of one softmax backward: dy and y read + dx written: ``rows * cols * 3 * size``."""
    return rows * cols * 3 * size


# --------------------------------------------------------------------------------------------
# cases
# --------------------------------------------------------------------------------------------


def softmax_dims(op: str, sk: int, heads_first: bool = False) -> tuple[int, int, int, str] | None:
    """(b, h, sq, note) of the softmax problem with ``sk`` keys, or None if it is too large.

    ``upper_triang`` is square (``sq == sk``) at every length; the other variants are square up
    to :data:`SQUARE_MAX_SK` keys and use fewer query rows beyond. Where ``b * h`` must shrink,
    the batch is kept (``b = 4``) and heads go, unless ``heads_first`` (then ``b`` goes first:
    the masked forward's mask ``[b, 1, sq, sk]`` is shared by more heads).
    """
    square = op.startswith("upper_triang") or sk <= SQUARE_MAX_SK
    sq = sk if square else max(1, SOFTMAX_ELEMS // sk)
    full_bh = SOFTMAX_B * SOFTMAX_H
    bh = max(1, min(full_bh, SOFTMAX_ELEMS // (sq * sk)))
    if bh * sq * sk > SOFTMAX_MAX_ELEMS:
        return None
    if heads_first:
        h = min(SOFTMAX_H, bh)
        b = bh // h
    else:
        b = min(SOFTMAX_B, bh)
        h = bh // b
    notes = []
    if b * h != full_bh:
        notes.append(f"b*h reduced to {b * h} (from {full_bh})")
    if sq != sk:
        notes.append(f"sq={sq} < sk")
    return b, h, sq, "; ".join(notes)


@dataclass(frozen=True)
class Case:
    """One problem: an op, a dtype and a shape (rows x cols after flattening).

    Norms: ``x`` is ``[rows, cols]`` (cols = hidden). Softmax: ``x`` is ``[b, h, sq, sk]``
    (``[b*h, sq, sq]`` for upper_triang), rows = ``b*h*sq``, cols = ``sk``.
    """

    op: str
    dtype: str
    rows: int
    cols: int
    b: int = 0
    h: int = 0
    sq: int = 0
    note: str = ""

    @property
    def is_norm(self) -> bool:
        return self.op in NORM_OPS or self.op in FP8_OPS

    @property
    def is_fp8(self) -> bool:
        return self.op in FP8_OPS

    @property
    def is_rms(self) -> bool:
        return self.op.startswith("rmsnorm")

    @property
    def is_backward(self) -> bool:
        return self.op.endswith("_bwd")

    @property
    def size(self) -> int:
        return DTYPE_SIZES[self.dtype]

    @property
    def elements(self) -> int:
        return self.rows * self.cols

    @property
    def x_shape(self) -> tuple[int, ...]:
        if self.is_norm:
            return (self.rows, self.cols)
        if self.op.startswith("upper_triang"):
            return (self.b * self.h, self.sq, self.cols)
        return (self.b, self.h, self.sq, self.cols)

    @property
    def mask_bytes(self) -> int:
        return self.b * self.sq * self.cols if self.op.startswith("masked") else 0

    def nbytes(self) -> int:
        """Bytes moved by one call, from the formula of this op (same for every impl)."""
        s = self.size
        if self.op.endswith("norm_fwd"):
            return norm_fwd_bytes(self.rows, self.cols, s, s, s, self.is_rms)
        if self.is_fp8:  # + the scale read and the amax update, 8 bytes: noise
            return norm_fwd_bytes(self.rows, self.cols, s, 1, s, self.is_rms)
        if self.op.endswith("norm_bwd"):
            return norm_bwd_bytes(self.rows, self.cols, s, s, s, self.is_rms)
        if self.op == "softmax_bwd":
            return softmax_bwd_bytes(self.rows, self.cols, s)
        return softmax_fwd_bytes(self.rows, self.cols, s, self.mask_bytes)

    def extra(self) -> str:
        """Shape description for the CSV's ``extra`` column."""
        if self.is_norm:
            return ""
        text = f"b={self.b} h={self.h} sq={self.sq} sk={self.cols}"
        return f"{text} ({self.note})" if self.note else text

    def label(self) -> str:
        return f"{self.rows}x{self.cols}"


def expand_ops(names: Iterable[str]) -> tuple[str, ...]:
    """Op names and group names (all, norms, layernorm, rmsnorm, softmax, fwd, bwd) -> ops."""
    out: list[str] = []
    for name in names:
        name = name.strip()
        if not name:
            continue
        group = OP_GROUPS.get(name)
        ops = group if group is not None else (name,)
        for op in ops:
            if op not in ALL_OPS:
                raise ValueError(f"unknown op {op!r}; expected {', '.join(ALL_OPS)} or a group")
            if op not in out:
                out.append(op)
    return tuple(out)


def build_cases(
    shape_set: str,
    ops: Sequence[str],
    dtypes: Sequence[str],
    sizes: Sequence[int] | None = None,
    norm_rows: int = NORM_ROWS,
    heads_first: bool = False,
) -> tuple[list[Case], list[str]]:
    """The cases of a run, and notes on the problems left out.

    Ordered round-robin over the size rank (smallest sizes of every op first), so a run cut
    short by its time budget still has every op at a few sizes.
    """
    ranked: list[tuple[int, int, int, Case]] = []
    skipped: list[str] = []
    for di, dtype in enumerate(dtypes):
        if dtype not in DTYPE_SIZES:
            raise ValueError(f"unknown dtype {dtype!r}; expected {', '.join(DTYPE_SIZES)}")
        for oi, op in enumerate(ops):
            norm = op in NORM_OPS or op in FP8_OPS
            table = NORM_HIDDEN if norm else SOFTMAX_KEYS
            chosen = tuple(sizes) if sizes else table[shape_set]
            for rank, n in enumerate(chosen):
                if norm:
                    case = Case(op, dtype, norm_rows, n)
                else:
                    dims = softmax_dims(op, n, heads_first)
                    if dims is None:
                        skipped.append(f"{op} {dtype} sk={n}: square problem too large")
                        continue
                    b, h, sq, note = dims
                    case = Case(op, dtype, b * h * sq, n, b, h, sq, note)
                ranked.append((rank, di, oi, case))
    ranked.sort(key=lambda t: t[:3])
    return [t[3] for t in ranked], skipped


def sets_needed(set_bytes: int, l2_bytes: int, factor: int = 3, cap: int = 64) -> int:
    """Independent input/output sets to rotate so the working set exceeds ``factor`` x L2."""
    if set_bytes <= 0:
        return 1
    return max(1, min(cap, factor * l2_bytes // set_bytes + 1))
