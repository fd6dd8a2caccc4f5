"""The ``numba-norms`` command (also ``python -m numba_norms``)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from importlib import metadata

__all__ = ["main"]


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def _human(nbytes: int) -> str:
    size = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"


def info_lines() -> list[tuple[str, str]]:
    """What ``numba-norms info`` prints, as (label, value) pairs."""
    import rtc

    from . import __version__, dispatch
    from .planner import MAX_CLUSTER

    rows: list[tuple[str, str]] = [("numba-norms", __version__)]
    if dispatch.simulator_enabled():
        rows.append(("device", "Numba CUDA simulator (NUMBA_ENABLE_CUDASIM=1)"))
    else:
        dev = rtc.device_info()
        if dev is None:
            rows.append(("device", "no GPU: compile-only"))
        else:
            rows.append(("device", f"{dev.name} ({dev.sm_count} SMs, {dev.arch})"))
            limits = dispatch.device_limits(dev.ordinal)
            chained = limits.dependent_launch
            rows.append(
                ("launches", "chained (programmatic dependents, sm_90+)" if chained else "plain")
            )
            multi = "clusters (barrier.cluster, sm_90+)" if limits.clusters else "cooperative"
            rows.append(("multi-CTA rows", f"{multi}; counter barrier above {MAX_CLUSTER} CTAs"))
    drv = rtc.driver_version()
    rows.append(("driver", "none" if drv is None else f"CUDA {drv[0]}.{drv[1]}"))
    ok, detail = dispatch.nvrtc_status()
    rows.append(("nvrtc", detail if ok else f"unavailable ({detail})"))
    for dist in ("numba", "numba-cuda", "cuda-core", "cuda-bindings", "numpy", "ml_dtypes"):
        rows.append((dist, _version(dist)))
    choice = dispatch.choose_backend()
    rows.append(("backend", f"{choice.name} ({choice.reason})"))
    where = rtc.cache_dir()
    if rtc.disk_cache_enabled():
        rows.append(("cache", f"{where} ({_human(rtc.cache_size_bytes())})"))
    else:
        rows.append(("cache", f"disabled (NUMBA_NORMS_DISABLE_DISK_CACHE); would be {where}"))
    return rows


def cmd_info(_args: argparse.Namespace) -> int:
    rows = info_lines()
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")
    return 0


def _has_gpu() -> bool:
    import rtc

    from . import dispatch

    return not dispatch.simulator_enabled() and rtc.has_gpu()


def _print_check_table(rows) -> None:
    print(f"{'op':<24} {'backend':<7} {'dtype':<5} {'shape':<20} {'worst/tol':>9}  result")
    for r in rows:
        worst = "-" if r.error else f"{r.worst:9.3f}"
        verdict = "pass" if r.passed else f"FAIL {r.error}".rstrip()
        shape = "x".join(map(str, r.shape))
        print(f"{r.op:<24} {r.backend:<7} {r.dtype:<5} {shape:<20} {worst:>9}  {verdict}")


def cmd_check(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from . import check, dispatch

    if dispatch.simulator_enabled():
        rows = check.run_checks(("numba",), small=True)
        _print_check_table(rows)
        failed = sum(not r.passed for r in rows)
        print(f"simulator: {len(rows) - failed} passed, {failed} failed")
        return 1 if failed else 0
    if not _has_gpu():
        print("no GPU: running the Numba path under the CUDA simulator at tiny sizes, and")
        print(f"compiling (not running) its NVRTC kernels for {args.arch}")
        env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
        status = subprocess.call([sys.executable, "-m", "numba_norms", "check"], env=env)
        from .precompile import precompile

        result = precompile("nvrtc", (), args.arch, specs=check.check_specs())
        print(
            f"nvrtc: compiled {result.compiled} kernels ({result.cached} already cached) "
            f"for {args.arch} in {result.seconds:.1f} s (the kernels a GPU check would run)"
        )
        return status
    cases = len(list(check.check_cases(small=False)))
    with tqdm(total=2 * cases, desc="check", disable=not sys.stderr.isatty()) as bar:
        rows = check.run_checks(("nvrtc", "numba"), small=False, progress=bar)
    _print_check_table(rows)
    failed = sum(not r.passed for r in rows)
    print(f"{len(rows) - failed} passed, {failed} failed")
    return 1 if failed else 0


def check_ops() -> list[str]:
    from .precompile import OP_GROUPS

    return list(OP_GROUPS)


def _precompile(backend: str, args: argparse.Namespace):
    from tqdm import tqdm

    from .precompile import all_specs, precompile, size_specs

    if args.hidden or args.keys:
        specs = size_specs(backend, args.hidden or (), args.keys or (), args.ops)
    else:
        specs = list(all_specs(args.ops, backend))
    with tqdm(
        total=len(specs), desc=f"{backend} precompile", disable=not sys.stderr.isatty()
    ) as bar:
        return precompile(backend, args.ops, args.arch, progress=bar, specs=specs)


def cmd_precompile(args: argparse.Namespace) -> int:
    if args.arch is None and not _has_gpu():
        print("precompile: no GPU here; give --arch (e.g. --arch sm_90)", file=sys.stderr)
        return 2
    import rtc

    if not rtc.disk_cache_enabled():
        print(
            "precompile: the disk cache is disabled (NUMBA_NORMS_DISABLE_DISK_CACHE is set): "
            "nothing compiled now would be kept",
            file=sys.stderr,
        )
        return 2
    where = rtc.cache_dir()
    problem = rtc.disk_cache_problem()
    if problem:
        print(
            f"precompile: the cache directory {where} is not writable ({problem})", file=sys.stderr
        )
        return 2
    backends = ("nvrtc", "numba") if args.backend == "all" else (args.backend,)
    start = time.perf_counter()
    # What this process holds in memory would count as cached without reaching this directory.
    rtc.clear_cache(memory=True, disk=False)
    before = _entry_stamps()
    compiled = cached = 0
    for backend in backends:
        result = _precompile(backend, args)
        compiled += result.compiled
        cached += result.cached
    print(
        f"compiled {compiled} kernels ({cached} already cached) "
        f"in {time.perf_counter() - start:.1f} s"
    )
    # written = new entries or rewritten ones (a damaged entry is compiled again in its place);
    # the Numba builds run in worker processes, so this process's write counter does not know
    if compiled and not any(before.get(p) != s for p, s in _entry_stamps().items()):
        print(f"precompile: nothing compiled was stored in {where}", file=sys.stderr)
        return 2
    rtc.share_entries()
    return 0


def _entry_stamps() -> dict:
    """Each disk entry's (inode, mtime): an entry written again (os.replace) gets new ones."""
    import rtc

    stamps = {}
    for path, _ in rtc.cache_entries():
        try:
            st = path.stat()
        except OSError:
            continue
        stamps[path] = (st.st_ino, st.st_mtime_ns)
    return stamps


def cmd_cache(args: argparse.Namespace) -> int:
    import rtc

    root = rtc.cache_dir()
    if root.exists() and not root.is_dir():
        print(f"cache: {root} is not a directory (NUMBA_NORMS_CACHE_DIR?)", file=sys.stderr)
        return 2
    if args.action == "list":
        entries = rtc.cache_entries()
        for path, size in entries:
            print(f"{_human(size):>10}  {path}")
        print(f"{len(entries)} entries, {_human(sum(s for _, s in entries))} in {rtc.cache_dir()}")
    else:
        removed = rtc.clear_cache(memory=True, disk=True)
        print(f"removed {removed} entries from {rtc.cache_dir()}")
        left = len(rtc.cache_entries())
        if left:
            print(f"cache clear: {left} entries could not be removed", file=sys.stderr)
            return 1
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    if not _has_gpu():
        print("bench: needs a CUDA GPU", file=sys.stderr)
        return 2
    from pathlib import Path

    script = Path(__file__).resolve().parent.parent / "perf" / "bench.py"
    if not script.exists():
        print(
            "bench: perf/bench.py is part of the source tree; run from a checkout", file=sys.stderr
        )
        return 2
    size = [] if {"--quick", "--full"} & set(args.extra) else ["--quick"]
    return subprocess.call([sys.executable, str(script), *size, *args.extra])


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return n


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="numba-norms",
        description="LayerNorm, RMSNorm and fused softmax kernels (NVRTC or Numba).",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="device, versions, backend and cache").set_defaults(func=cmd_info)
    p = sub.add_parser("check", help="every op on both backends against float64 references")
    p.add_argument("--arch", default="sm_90", help="arch to compile for without a GPU")
    p.set_defaults(func=cmd_check)
    p = sub.add_parser("precompile", help="compile every registry entry into the disk cache")
    p.add_argument("--arch", default=None, help="e.g. sm_90 (required without a GPU)")
    p.add_argument("--backend", choices=("nvrtc", "numba", "all"), default="nvrtc")
    p.add_argument("--ops", nargs="+", choices=check_ops(), default=check_ops())
    p.add_argument(
        "--hidden",
        nargs="+",
        type=_positive,
        metavar="N",
        help="instead of the registry: the norm kernels for these hidden sizes (every dtype)",
    )
    p.add_argument(
        "--keys",
        nargs="+",
        type=_positive,
        metavar="N",
        help="instead of the registry: the softmax kernels for these key lengths",
    )
    p.set_defaults(func=cmd_precompile)
    p = sub.add_parser("cache", help="list or clear the kernel cache")
    p.add_argument("action", choices=("list", "clear"))
    p.set_defaults(func=cmd_cache)
    p = sub.add_parser(
        "bench",
        help="a throughput table (needs a GPU); every later argument goes to perf/bench.py",
        add_help=False,
    )
    p.add_argument("extra", nargs="*", help="arguments for perf/bench.py (--quick by default)")
    p.set_defaults(func=cmd_bench)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``numba-norms`` command."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["bench"]:  # the rest, options included, is perf/bench.py's (in order)
        return int(cmd_bench(argparse.Namespace(extra=argv[1:])) or 0)
    args = build_parser().parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
