"""Shared argument handling of the LayerNorm and RMSNorm entry points."""

from __future__ import annotations

from .. import arrays, dispatch, planner, registry
from ..backends.common import FP32_MAX, NormBwdArgs, NormFwdArgs
from . import _fast, _out
from ._scalars import as_flag, as_real

__all__ = ["norm_bwd", "norm_fwd"]

FLOATS = ("fp32", "fp16", "bf16")


def _check_eps(eps: float) -> float:
    eps = as_real(eps, "eps")
    if eps < 0:
        raise ValueError(f"eps: expected a finite value >= 0, got {eps}")
    if eps > FP32_MAX:  # the kernels take it as fp32: inf there (y = beta, rsigma = 0)
        raise ValueError(f"eps: expected eps <= {FP32_MAX!r} (fp32's largest), got {eps!r}")
    return eps


def _check_vector(t, name: str, cols: int, dtype: str | None = None) -> None:
    if t.shape != (cols,):
        raise ValueError(
            f"{name}: expected shape ({cols},) to match x's hidden size, got {t.shape}"
        )
    if dtype is not None and t.dtype != dtype:
        raise TypeError(f"{name}: expected dtype {dtype} (as gamma), got {t.dtype}")
    t.check_contiguous()  # the kernels take the base pointer alone


def _check_same(t, name: str, ref, ref_name: str, dtype: str | None = None) -> None:
    if t.shape != ref.shape:
        raise ValueError(f"{name}: expected shape {ref.shape} (as {ref_name}), got {t.shape}")
    if dtype is not None and t.dtype != dtype:
        raise TypeError(f"{name}: expected dtype {dtype}, got {t.dtype}")


def _check_combo(op: str, key: registry.NormKey) -> None:
    if registry.is_supported(key):
        return
    combos = registry.supported_norm_dtypes(op, key.fused_add)
    listed = ", ".join("/".join(c) for c in combos)
    raise registry.UnsupportedError(
        f"{op}: no kernel for weight={key.weight}, input={key.input}, output={key.output}; "
        f"supported (weight/input/output): {listed}"
    )


FP8 = ("fp8e4m3", "fp8e5m2")


def _scalar(call, obj, name: str, *, writes: bool):
    """A one-element float32 array on the call's device (FP8 scale, amax, scale_inv)."""
    if obj is None:
        return None
    t = (call.inout if writes else call.input)(obj, name, dtypes=("fp32",))
    if t.size != 1:
        raise ValueError(f"{name}: expected a float32 array of one element, got shape {t.shape}")
    return t


def norm_fwd(
    kind,
    x,
    gamma,
    beta,
    eps,
    zero_centered_gamma,
    out_dtype,
    stream,
    scale=None,
    amax=None,
    scale_inv=None,
    out=None,
):
    """Forward of ``kind`` ("layernorm" or "rmsnorm"); returns the caller-kind outputs."""
    plain = stream is None and scale is None and amax is None and scale_inv is None
    if plain:
        outs = _fast.norm_fwd(kind, x, gamma, beta, eps, zero_centered_gamma, out_dtype, out)
        if outs is not None:
            return outs
    op = f"{kind}_fwd"
    eps = _check_eps(eps)
    zc = as_flag(zero_centered_gamma, "zero_centered_gamma")
    call = arrays.Call(stream)
    xt = call.input(x, "x", dtypes=FLOATS, min_ndim=1)
    gt = call.input(gamma, "gamma", dtypes=FLOATS, ndim=1)
    bt = call.input(beta, "beta", dtypes=FLOATS, ndim=1) if kind == "layernorm" else None
    rows, cols, _ = xt.rows_cols()
    if cols == 0:
        raise ValueError(f"x: hidden size (last dimension) must be > 0, got shape {xt.shape}")
    planner.check_rows(rows)
    _check_vector(gt, "gamma", cols)
    if bt is not None:
        _check_vector(bt, "beta", cols, gt.dtype)
    yd = gt.dtype if out_dtype is None else arrays.dtype_name(out_dtype, "out_dtype")
    key = registry.NormKey(op, gt.dtype, xt.dtype, yd)
    _check_combo(op, key)
    st = _scalar(call, scale, "scale", writes=False)
    at = _scalar(call, amax, "amax", writes=True)
    sit = _scalar(call, scale_inv, "scale_inv", writes=True)
    if yd in FP8:
        if st is None:
            raise ValueError(f"scale: required with an FP8 out_dtype ({yd})")
    elif st is not None or sit is not None:
        name = "scale" if st is not None else "scale_inv"
        raise ValueError(f"{name}: only used with an FP8 out_dtype, but y is {yd}")

    stats = [("mu", (rows,), "fp32")] if kind == "layernorm" else []
    specs = [("y", xt.shape, yd), *stats, ("rsigma", (rows,), "fp32")]
    made = _out.outputs(call, out, specs, [xt, gt, bt, st, at, sit])
    written = [t for t in (at, sit) if t is not None]
    if written:  # updated while every CTA reads scale and the inputs
        _out.check_disjoint(written, [xt, gt, bt, st, *made])
    y, rsigma = made[0], made[-1]
    mu = made[1] if kind == "layernorm" else None
    if rows:
        args = NormFwdArgs(xt, gt, bt, y, mu, rsigma, eps, zc, None, st, at, sit)
        used = [xt, gt, y] + ([bt] if bt is not None else [])
        pairs = [(t.alignment(), t.itemsize) for t in used]
        dispatch.run_norm(kind, key, call, args, rows, cols, pairs)
    outs = call.finish(*((y, mu, rsigma) if kind == "layernorm" else (y, rsigma)))
    if plain and call.kind == "torch":
        _fast.remember_fwd(kind, x, gamma, beta, zero_centered_gamma, out_dtype, out, outs, y,
                           rows, cols, xt)  # fmt: skip
    return outs


def norm_bwd(kind, dy, x, mu, rsigma, gamma, zero_centered_gamma, add, stream, out=None):
    """Backward of ``kind``; returns (dx, dgamma, dbeta) or (dx, dgamma)."""
    plain = stream is None and add is None
    if plain:
        grads = _fast.norm_bwd(kind, dy, x, mu, rsigma, gamma, zero_centered_gamma, out)
        if grads is not None:
            return grads
    op = f"{kind}_bwd"
    zc = as_flag(zero_centered_gamma, "zero_centered_gamma")
    call = arrays.Call(stream)
    dyt = call.input(dy, "dy", dtypes=FLOATS, min_ndim=1)
    xt = call.input(x, "x", dtypes=FLOATS, min_ndim=1)
    mut = call.input(mu, "mu", dtypes=("fp32",)) if kind == "layernorm" else None
    rst = call.input(rsigma, "rsigma", dtypes=("fp32",))
    gt = call.input(gamma, "gamma", dtypes=FLOATS, ndim=1)
    addt = call.input(add, "add", dtypes=FLOATS, optional=True) if add is not None else None
    rows, cols, _ = xt.rows_cols()
    if cols == 0:
        raise ValueError(f"x: hidden size (last dimension) must be > 0, got shape {xt.shape}")
    planner.check_rows(rows)
    _check_same(dyt, "dy", xt, "x")
    dyt.rows_cols()
    # one statistic per row: the forward's (rows,), x's leading shape, or that with a trailing
    # 1 (torch.native_layer_norm's mean / rstd)
    lead = tuple(xt.shape[:-1])
    shapes = list(dict.fromkeys([(rows,), lead, (*lead, 1)]))  # (rows,) is lead for 2-D x
    for t, name in ((mut, "mu"), (rst, "rsigma")):
        if t is not None and tuple(t.shape) not in shapes:
            listed = ", ".join(map(str, shapes[:-1])) + f" or {shapes[-1]}"
            raise ValueError(
                f"{name}: expected one value per row of x, shape {listed}; got {tuple(t.shape)}"
            )
        if t is not None:
            t.check_contiguous()
    _check_vector(gt, "gamma", cols)
    if addt is not None:
        _check_same(addt, "add", xt, "x (add has dx's shape and dtype)", xt.dtype)
        addt.rows_cols()
    key = registry.NormKey(op, gt.dtype, xt.dtype, dyt.dtype, addt is not None)
    _check_combo(op, key)

    specs = [("dx", xt.shape, xt.dtype), ("dgamma", (cols,), gt.dtype)]
    if kind == "layernorm":
        specs.append(("dbeta", (cols,), gt.dtype))
    made = _out.outputs(call, out, specs, [dyt, xt, mut, rst, gt, addt])
    dx, dgamma = made[0], made[1]
    dbeta = made[2] if kind == "layernorm" else None
    if rows:
        args = NormBwdArgs(dyt, xt, mut, rst, gt, dx, addt, dgamma, dbeta, zc)
        used = [dyt, xt, gt, dx] + ([addt] if addt is not None else [])
        pairs = [(t.alignment(), t.itemsize) for t in used]
        dispatch.run_norm(kind, key, call, args, rows, cols, pairs)
    else:
        _zero_fill(call, dgamma, dbeta)
    outs = call.finish(*((dx, dgamma, dbeta) if kind == "layernorm" else (dx, dgamma)))
    if plain and call.kind == "torch":
        _fast.remember_bwd(kind, dy, x, mu, rsigma, gamma, zero_centered_gamma, out, outs, dx,
                           dyt, xt, rows, cols)  # fmt: skip
    return outs


def _zero_fill(call, *tensors) -> None:
    """With no rows the parameter gradients are exactly zero."""
    for t in tensors:
        if t is not None:
            call.fill_zero(t)
