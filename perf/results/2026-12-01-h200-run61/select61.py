"""How run 60's backward winners were kept (session 10), from run 61's same-run A/B.

Per (op, dtype, hidden) of the winners: the shared entry is kept where NVRTC ran >= 1.02x faster
with it. Where the Numba path (no Numba-own entry yet) then ran < 0.97x, the old shared entry
becomes a Numba-own entry; where the shared entry was not kept but Numba ran >= 1.05x with it,
the new one becomes a Numba-own entry. Run from the repository root on the tables before:

    python3 select61.py BEFORE.csv CANDIDATE.csv CANDIDATE_TABLE.json
"""

from __future__ import annotations

import csv
import json
import sys

RUN = "perf/results/2026-12-01-h200-run61"
SWEEP = "perf/results/2026-12-01-h200-run60"
SHARED = "numba_norms/data/measured_norms.json"
OWN = "numba_norms/data/measured_norms_numba.json"


def key(e: dict) -> tuple:
    return (e["op"], e["weight"], e["hidden_size"])


def plain(e: dict) -> bool:
    return e["input"] == e["weight"] == e["output"]


def medians(path: str) -> dict:
    with open(path) as fh:
        return {
            (r["op"], r["dtype"], int(r["cols"]), r["impl"]): float(r["median_us"])
            for r in csv.DictReader(fh)
            if r["impl"] in ("nvrtc", "numba")
        }


def main(before_csv: str, cand_csv: str, cand_table: str) -> None:
    before, after = medians(before_csv), medians(cand_csv)
    cur = json.load(open(SHARED))
    cand = {key(e): e for e in json.load(open(cand_table))["entries"]}
    own = json.load(open(OWN))
    old = {key(e): e for e in cur["entries"] if plain(e)}
    has_own = {key(e) for e in own["entries"] if plain(e)}
    keep, add = [], []
    for k in (key(e) for e in json.load(open(f"{SWEEP}/measured_norms.json"))["entries"]):
        gain_nv = before[k + ("nvrtc",)] / after[k + ("nvrtc",)]
        gain_nb = before[k + ("numba",)] / after[k + ("numba",)]
        if gain_nv >= 1.02:
            keep.append(k)
            if k not in has_own and gain_nb < 0.97 and k in old:
                add.append(dict(old[k], run=RUN, baseline="the shared entry before run 60"))
        elif k not in has_own and gain_nb >= 1.05:
            add.append(dict(cand[k], run=RUN, baseline="run 60 winner, faster on Numba only"))
        print(k, round(gain_nv, 3), round(gain_nb, 3), "keep" if k in keep else "-")
    cur["entries"] = [cand[key(e)] if plain(e) and key(e) in keep else e for e in cur["entries"]]
    cur["entries"] += [cand[k] for k in keep if k not in old]
    own["entries"] += add
    json.dump(cur, open(SHARED, "w"), indent=1)
    json.dump(own, open(OWN, "w"), indent=1)
    print(f"{len(keep)} shared entries kept, {len(add)} Numba-own entries added")


if __name__ == "__main__":
    main(*sys.argv[1:4])
