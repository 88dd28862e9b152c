"""Re-make the archive-backed tables of docs/results.md in place, between their marker comments.

Each section ``<!-- NAME -->`` … ``<!-- /NAME -->`` of docs/results.md holds exactly what one table script prints
(the prose around it is written by hand and stays). Run it after new runs are archived; the tests
(``tests/test_results_archive.py``, ``tests/test_curve_tables.py``) then hold every cell to the archive.

    python experiments/refresh_results_tables.py                  # every section below
    python experiments/refresh_results_tables.py trees glue       # some of them

Sections: ``glue`` (GLUE-MAIN-TABLE, GLUE-TESTS-TABLE: ``glue_tables.py --later-replaces``), ``trees``
(TREES-TABLE: ``curve_tables.py --table trees``), ``curves`` (CURVES-GPU-TABLES: ``curve_tables.py --table curves
--preset gpu``), ``translation`` (TRANSLATION-TABLES: ``translation.py summarize`` of the archive in
docs/results/runs/translation/). The BLiMP tables (``blimp_tables.py``) are pasted by hand.

The GLUE tables join ``docs/results/glue_sweep.json`` (the per-seed scores recorded before the archive existed) with
the archive's summary, which this script writes first (``sgnet_glue.py summarize`` of docs/results/runs/glue_sweep
into docs/results/glue_sweep_archived.json).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "results.md"


def _run(*args: str) -> str:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout


def _tables(text: str) -> list[str]:
    """The Markdown tables (runs of ``|`` lines) in ``text``, each as one string."""
    return [m.group(0).strip() for m in re.finditer(r"(?m)(^\|.*\n?)+", text)]


def _put(doc: str, name: str, body: str) -> str:
    start, end = f"<!-- {name} -->", f"<!-- /{name} -->"
    if doc.count(start) != 1 or doc.count(end) != 1:
        raise SystemExit(f"{DOC}: expected one '{start}' … '{end}' pair")
    i, j = doc.index(start) + len(start), doc.index(end)
    return doc[:i] + "\n" + body.strip() + "\n" + doc[j:]


def glue(doc: str) -> str:
    _run(
        "experiments/sgnet_glue.py",
        "summarize",
        "--out",
        "docs/results/runs/glue_sweep",
        "--json",
        "docs/results/glue_sweep_archived.json",
    )
    out = _run(
        "experiments/glue_tables.py",
        "--later-replaces",
        "--main",
        "docs/results/glue_sweep.json,docs/results/glue_sweep_archived.json",
    )
    main, tests = _tables(out)[:2]
    return _put(_put(doc, "GLUE-MAIN-TABLE", main), "GLUE-TESTS-TABLE", tests)


def trees(doc: str) -> str:
    return _put(doc, "TREES-TABLE", _tables(_run("experiments/curve_tables.py", "--table", "trees"))[0])


def curves(doc: str) -> str:
    out = _run("experiments/curve_tables.py", "--table", "curves", "--preset", "gpu")
    cola, sst2 = re.split(r"\n\n(?=\*\*SST-2)", out)
    blocks = []
    for label, chunk in (("CoLA (Matthews correlation):", cola), ("SST-2 (accuracy):", sst2)):
        notes = [line for line in chunk.splitlines() if line.startswith("* ")]
        blocks.append("\n\n".join([label, *_tables(chunk)[:1], *(["\n".join(notes)] if notes else [])]))
    return _put(doc, "CURVES-GPU-TABLES", "\n\n".join(blocks))


def translation(doc: str) -> str:
    return _put(doc, "TRANSLATION-TABLES", _run("experiments/translation.py", "summarize", "--json", ""))


SECTIONS = {"glue": glue, "trees": trees, "curves": curves, "translation": translation}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sections", nargs="*", metavar="SECTION", help=f"some of {', '.join(SECTIONS)} (default: all)")
    args = parser.parse_args()
    unknown = sorted(set(args.sections) - set(SECTIONS))
    if unknown:
        parser.error(f"unknown section(s) {', '.join(unknown)}; choose from {', '.join(SECTIONS)}")
    doc = DOC.read_text(encoding="utf-8")
    for name in args.sections or SECTIONS:
        doc = SECTIONS[name](doc)
    tmp = DOC.with_suffix(".md.tmp")
    tmp.write_text(doc, encoding="utf-8")
    tmp.replace(DOC)


if __name__ == "__main__":
    main()
