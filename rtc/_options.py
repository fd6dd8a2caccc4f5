"""Translate raw NVRTC command-line flags into ``cuda.core.ProgramOptions`` fields.

``cuda.core.ProgramOptions`` has no pass-through for arbitrary flags, so every flag that
``rtc.compile(options=...)`` accepts is mapped onto a typed field here. Unknown or unsafe flags
raise ``ValueError`` instead of being silently dropped (a dropped flag would be a silent
miscompile and would also be missing from the disk-cache key).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["parse_nvrtc_flags"]

_TRUE = {"true", "1", "on", "yes"}
_FALSE = {"false", "0", "off", "no"}


def _as_bool(flag: str, value: str | None) -> bool:
    if value is None:
        return True
    v = value.strip().lower()
    if v in _TRUE:
        return True
    if v in _FALSE:
        return False
    raise ValueError(f"NVRTC option {flag!r}: expected true/false, got {value!r}")


def _as_int(flag: str, value: str | None) -> int:
    try:
        return int(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"NVRTC option {flag!r}: expected an integer, got {value!r}") from None


def _as_str(flag: str, value: str | None) -> str:
    if not value:
        raise ValueError(f"NVRTC option {flag!r} needs a value")
    return value


def _as_ofast(flag: str, value: str | None) -> str:
    v = _as_str(flag, value)
    if v not in ("0", "min", "mid", "max"):
        raise ValueError(f"NVRTC option {flag!r}: expected 0, min, mid or max, got {value!r}")
    return v


# kinds: "flag" (no value, sets True), "bool", "int", "str", "list" (accumulates str),
# "intlist" (accumulates comma-separated ints), "define" (accumulates -D values)
_Kind = str
_SPEC: dict[str, tuple[str, _Kind, Callable[[str, str | None], Any] | None]] = {}


def _add(names: Sequence[str], field: str, kind: _Kind, conv=None) -> None:
    for n in names:
        _SPEC[n] = (field, kind, conv)


_add(["ftz"], "ftz", "bool", _as_bool)
_add(["prec-sqrt"], "prec_sqrt", "bool", _as_bool)
_add(["prec-div"], "prec_div", "bool", _as_bool)
_add(["fmad"], "fma", "bool", _as_bool)
_add(["use_fast_math", "use-fast-math"], "use_fast_math", "flag")
_add(["extra-device-vectorization"], "extra_device_vectorization", "flag")
_add(["maxrregcount"], "max_register_count", "int", _as_int)
_add(["lineinfo", "generate-line-info"], "lineinfo", "flag")
_add(["G", "device-debug"], "debug", "flag")
_add(["dopt"], "device_code_optimize", "bool", _as_bool)
_add(["Xptxas", "ptxas-options"], "ptxas_options", "list")
_add(["Ofast-compile", "ofast-compile"], "ofast_compile", "str", _as_ofast)
_add(["split-compile"], "split_compile", "int", _as_int)
_add(["minimal"], "minimal", "flag")
_add(["restrict"], "restrict", "flag")
_add(["w", "disable-warnings"], "disable_warnings", "flag")
_add(
    ["default-device", "device-as-default-execution-space"],
    "device_as_default_execution_space",
    "flag",
)
_add(["device-int128"], "device_int128", "flag")
_add(["device-float128"], "device_float128", "flag")
_add(["frandom-seed"], "frandom_seed", "str", _as_str)
_add(["diag-suppress"], "diag_suppress", "intlist")
_add(["diag-error"], "diag_error", "intlist")
_add(["diag-warn"], "diag_warn", "intlist")
_add(["brief-diag", "brief-diagnostics"], "brief_diagnostics", "bool", _as_bool)
_add(["no-err-no", "no-display-error-number"], "no_display_error_number", "flag")
_add(["builtin-move-forward"], "builtin_move_forward", "bool", _as_bool)
_add(["builtin-initializer-list"], "builtin_initializer_list", "bool", _as_bool)
_add(["D", "define-macro"], "define_macro", "define")
_add(["U", "undefine-macro"], "undefine_macro", "list")
_add(["std"], "std", "str", _as_str)
_add(["rdc", "relocatable-device-code"], "relocatable_device_code", "bool", _as_bool)
_add(["ewp", "extensible-whole-program"], "extensible_whole_program", "flag")
_add(["opt-info", "optimization-info"], "optimization_info", "str", _as_str)
_add(["no-source-include"], "no_source_include", "flag")
_add(["no-cache"], "no_cache", "flag")
_add(["numba-debug"], "numba_debug", "flag")

# Flags we refuse, with the reason shown to the caller.
_REJECT: dict[str, str] = {
    "arch": "pass arch= to rtc.compile instead",
    "gpu-architecture": "pass arch= to rtc.compile instead",
    "I": "pass include_dirs= so the headers are part of the cache key",
    "include-path": "pass include_dirs= so the headers are part of the cache key",
    "include": "pre-included headers are not covered by the cache key; #include them instead",
    "pre-include": "pre-included headers are not covered by the cache key; #include them instead",
    "dlto": "LTO-IR output is not supported (rtc produces CUBIN)",
    "dlink-time-opt": "LTO-IR output is not supported (rtc produces CUBIN)",
    "time": "has a file side effect that a cache hit would skip",
    "fdevice-time-trace": "has a file side effect that a cache hit would skip",
    "create-pch": "has a file side effect that a cache hit would skip",
    "pch": "precompiled headers are not covered by the cache key",
    "use-pch": "precompiled headers are not covered by the cache key",
    "pch-dir": "precompiled headers are not covered by the cache key",
}

# Short single-dash flags whose value may be glued on: -DFOO=1, -UFOO, -Iinc
_GLUED = ("D", "U", "I")


def _split(token: str) -> tuple[str, str | None]:
    body = token.lstrip("-")
    for g in _GLUED:
        if token.startswith("-" + g) and not token.startswith("--") and len(body) > 1:
            if body[0] == g and body[1:2] != "=":
                return g, body[1:]
    if "=" in body:
        name, value = body.split("=", 1)
        return name, value
    return body, None


def parse_nvrtc_flags(flags: Sequence[str]) -> dict[str, Any]:
    """Map raw NVRTC flags to ``ProgramOptions`` keyword arguments.

    Parameters
    ----------
    flags : sequence of str
        Flags as given on an ``nvrtc`` command line, e.g. ``"-ftz=true"``,
        ``"--use_fast_math"``, ``"-ofast-compile=max"``, ``"-DNAME=1"``, ``"-Xptxas=-v"``.
        A flag that needs a value may also take it from the next element (``"-Xptxas", "-v"``).

    Returns
    -------
    dict
        Keyword arguments for ``cuda.core.ProgramOptions``; list-valued fields accumulate,
        scalar fields keep the last value. ``define_macro`` entries are ``(name, value)`` tuples
        or bare names.

    Raises
    ------
    ValueError
        For unknown flags, malformed values, or flags that would make caching unsound.
    """
    if isinstance(flags, str):
        flags = [flags]
    out: dict[str, Any] = {}
    # -D / -U act in command-line order, but cuda.core emits all defines before all undefines:
    # keep each macro's last action only (re-inserted, so the order of the rest is kept).
    macros: dict[str, Any] = {}
    toks = list(flags)
    i = 0
    while i < len(toks):
        tok = toks[i]
        i += 1
        if not isinstance(tok, str) or not tok.startswith("-"):
            raise ValueError(f"NVRTC options must be strings starting with '-', got {tok!r}")
        name, value = _split(tok)
        if name in _REJECT:
            raise ValueError(f"NVRTC option {tok!r} is not accepted by rtc: {_REJECT[name]}")
        spec = _SPEC.get(name)
        if spec is None:
            raise ValueError(
                f"unsupported NVRTC option {tok!r}; supported: "
                + ", ".join(sorted({"-" + k for k in _SPEC}))
            )
        field, kind, conv = spec
        needs_value = kind in ("int", "str", "list", "intlist", "define")
        if needs_value and value is None:
            if i >= len(toks):
                raise ValueError(f"NVRTC option {tok!r} needs a value")
            value = toks[i]
            i += 1
        if kind == "flag":
            if value is not None:
                out[field] = _as_bool(tok, value)
            else:
                out[field] = True
        elif kind in ("bool", "int", "str"):
            assert conv is not None
            out[field] = conv(tok, value)
        elif field == "undefine_macro":
            v = _as_str(tok, value)
            macros.pop(v, None)
            macros[v] = None
        elif kind == "list":
            out.setdefault(field, []).append(_as_str(tok, value))
        elif kind == "intlist":
            vals = [_as_int(tok, v) for v in _as_str(tok, value).split(",") if v.strip()]
            out.setdefault(field, []).extend(vals)
        elif kind == "define":
            v = _as_str(tok, value)
            k = v.split("=", 1)[0]
            macros.pop(k, None)
            macros[k] = (k, v.split("=", 1)[1]) if "=" in v else v
    for k, action in macros.items():
        if action is None:
            out.setdefault("undefine_macro", []).append(k)
        else:
            out.setdefault("define_macro", []).append(action)
    return out
