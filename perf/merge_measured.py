"""Merge the winners of a tuning run into a measured table of ``numba_norms/data``.

``perf/tune_norms.py``'s ``measured_norms.json`` goes into ``measured_norms.json`` (entries of the
same op, hidden size and dtypes are replaced); ``perf/tune_softmax.py``'s ``measured_softmax.json``
into ``measured_softmax.json`` (same op, variant, dtype and key length; the file name picks the
table). Each merged entry records the run it came from (``run``), and the table's
``source.later`` lists the merged runs. ``--min-gain`` keeps only winners that beat the sweep's
baseline by that fraction (tune_softmax writes one entry per problem, winner or not).

    python3 perf/merge_measured.py OUT/refine/measured_norms.json --run perf/results/...-runN
    python3 perf/merge_measured.py OUT/sm/measured_softmax.json --run ... --min-gain 0.03
"""

from __future__ import annotations

import argparse
import json
import os
import sys

DATA = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "numba_norms", "data"
)


def _key(e: dict) -> tuple:
    if "variant" in e:  # a softmax entry
        return (e["op"], e["variant"], e["dtype"], e["keys"])
    return (e["op"], e["hidden_size"], e["weight"], e["input"], e["output"])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("winners", help="measured_norms.json written by tune_norms.py")
    p.add_argument("--run", required=True, help="where the run's files are kept")
    p.add_argument("--table", default=None, help="default: the data file of the winners' name")
    p.add_argument("--min-gain", type=float, default=0.0, help="over the sweep's baseline")
    args = p.parse_args()
    table_path = args.table or os.path.join(DATA, os.path.basename(args.winners))
    with open(table_path) as fh:
        table = json.load(fh)
    with open(args.winners) as fh:
        new = json.load(fh)
    fresh = {
        _key(e): dict(e, run=args.run)
        for e in new["entries"]
        if e["gbs"] > (1.0 + args.min_gain) * e.get("baseline_gbs", 0.0)
    }
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
    with open(table_path, "w") as fh:
        json.dump(table, fh, indent=1)
        fh.write("\n")
    print(f"{replaced} entries replaced, {len(fresh)} added -> {table_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
