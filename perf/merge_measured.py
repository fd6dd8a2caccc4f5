"""Merge the winners of a ``perf/tune_norms.py`` run into ``numba_norms/data/measured_norms.json``.

Entries of the same op, hidden size and dtypes are replaced; each merged entry records the run
it came from (``run``), and the table's ``source.later`` lists the merged runs.

    python3 perf/merge_measured.py OUT/refine/measured_norms.json --run perf/results/...-runN
"""

from __future__ import annotations

import argparse
import json
import os
import sys

TABLE = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    "numba_norms", "data", "measured_norms.json",
)  # fmt: skip


def _key(e: dict) -> tuple:
    return (e["op"], e["hidden_size"], e["weight"], e["input"], e["output"])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("winners", help="measured_norms.json written by tune_norms.py")
    p.add_argument("--run", required=True, help="where the run's files are kept")
    p.add_argument("--table", default=TABLE)
    args = p.parse_args()
    with open(args.table) as fh:
        table = json.load(fh)
    with open(args.winners) as fh:
        new = json.load(fh)
    fresh = {_key(e): dict(e, run=args.run) for e in new["entries"]}
    entries, replaced = [], 0
    for e in table["entries"]:
        if _key(e) in fresh:
            entries.append(fresh.pop(_key(e)))
            replaced += 1
        else:
            entries.append(e)
    entries.extend(fresh.values())
    table["entries"] = entries
    src = new["source"]
    table["source"].setdefault("later", []).append(
        {
            "run": args.run,
            "command": src.get("command"),
            "copy_ceiling_gbs": src.get("copy_ceiling_gbs"),
        }
    )
    with open(args.table, "w") as fh:
        json.dump(table, fh, indent=1)
        fh.write("\n")
    print(f"{replaced} entries replaced, {len(fresh)} added -> {args.table}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
