"""Attachment scores (UAS / LAS) of predicted dependency trees against gold trees.

* **UAS**: fraction of words whose predicted head equals the gold head (roots: both -1).
* **LAS**: fraction with the right head *and* the right label. Labels are compared only when gold and
  prediction use the same label scheme: UD (``nsubj``, ``obj``, ``obl``, ``root`` ...) and spaCy's English
  ClearNLP scheme (``nsubj``, ``dobj``, ``pobj``, ``prep``, ``ROOT`` ...) share names for different relations, so
  comparing them would be meaningless. The scheme is recognised from the labels (see :func:`label_scheme`);
  when schemes differ LAS is ``None`` and :attr:`AttachmentScores.note` says why. UD subtypes are stripped before
  comparing (``nmod:poss`` -> ``nmod``), as in the CoNLL 2018 shared task's LAS.
* **no-punct** variants skip words that are punctuation in the *gold* annotation: UPOS ``PUNCT`` or one of the
  PTB punctuation tags :data:`PTB_PUNCT_TAGS` in XPOS (the usual convention for PTB dependency evaluation).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from syntaxformer.data.sentence import Sentence
from syntaxformer.errors import DataError

__all__ = [
    "CLEARNLP_RELATIONS",
    "PTB_PUNCT_TAGS",
    "UD_RELATIONS",
    "AttachmentScores",
    "attachment_scores",
    "is_punct",
    "label_scheme",
]

# PTB tags of punctuation (quotes, comma, period, colon/dash, brackets) plus the OntoNotes/EWT HYPH and NFP.
PTB_PUNCT_TAGS = frozenset({"``", "''", ",", ".", ":", "-LRB-", "-RRB-", "-LCB-", "-RCB-", "HYPH", "NFP"})

# Universal Dependencies v2 relations (universal part, before any ":subtype").
UD_RELATIONS = frozenset(
    (  # noqa: SIM905 (a word list)
        "acl advcl advmod amod appos aux case cc ccomp clf compound conj cop csubj dep det discourse dislocated expl "
        "fixed flat goeswith iobj list mark nmod nsubj nummod obj obl orphan parataxis punct reparandum root "
        "vocative xcomp"
    ).split()
)

# ClearNLP dependency labels, as used by spaCy's English pipelines.
CLEARNLP_RELATIONS = frozenset(
    (  # noqa: SIM905 (a word list)
        "ROOT acl acomp advcl advmod agent amod appos attr aux auxpass case cc ccomp compound conj csubj csubjpass "
        "dative dep det dobj expl intj mark meta neg nmod npadvmod nsubj nsubjpass nummod oprd parataxis pcomp pobj "
        "poss preconj predet prep prt punct quantmod relcl xcomp"
    ).split()
)

_SCHEMES = {"ud": UD_RELATIONS, "clearnlp": CLEARNLP_RELATIONS}
_COVERAGE = 0.99  # share of label tokens a scheme must cover (tolerates a few stray labels in a corpus)


def _base(label: str) -> str:
    return label.split(":", 1)[0]


def label_scheme(labels: Iterable[str]) -> str | None:
    """The label scheme of a corpus: ``"ud"``, ``"clearnlp"``, or ``None`` if unknown or undecidable.

    A scheme is chosen when it covers at least 99% of the label tokens (subtypes stripped) and the other scheme
    does not (labels such as ``nsubj`` or ``det`` alone cannot tell the two apart).
    """
    counts = Counter(_base(lab) for lab in labels)
    total = sum(counts.values())
    if not total:
        return None
    matching = [
        name
        for name, inventory in _SCHEMES.items()
        if sum(c for lab, c in counts.items() if lab in inventory) >= _COVERAGE * total
    ]
    return matching[0] if len(matching) == 1 else None


def is_punct(sentence: Sentence, i: int) -> bool:
    """Whether word ``i`` of a *gold* sentence is punctuation (UPOS ``PUNCT`` or a PTB punctuation XPOS)."""
    return (sentence.upos is not None and sentence.upos[i] == "PUNCT") or (
        sentence.xpos is not None and sentence.xpos[i] in PTB_PUNCT_TAGS
    )


@dataclass
class AttachmentScores:
    """Result of :func:`attachment_scores`. Scores are fractions in [0, 1], ``None`` where undefined.

    Attributes:
        uas: unlabelled attachment score over all words.
        las: labelled attachment score over all words (``None`` when labels are not comparable).
        uas_no_punct: UAS over words that are not gold punctuation.
        las_no_punct: LAS over words that are not gold punctuation.
        n_sentences: sentences evaluated.
        n_tokens: words evaluated.
        n_tokens_no_punct: words that are not gold punctuation.
        gold_scheme: label scheme recognised in the gold labels (``"ud"``, ``"clearnlp"`` or ``None``).
        pred_scheme: label scheme recognised in the predicted labels.
        note: why LAS is ``None`` (or other caveats), else ``None``.
    """

    uas: float | None
    las: float | None
    uas_no_punct: float | None
    las_no_punct: float | None
    n_sentences: int
    n_tokens: int
    n_tokens_no_punct: int
    gold_scheme: str | None = None
    pred_scheme: str | None = None
    note: str | None = None


def attachment_scores(
    gold: Sequence[Sentence],
    pred: Sequence[Sentence],
    *,
    compare_labels: bool | None = None,
    strip_subtypes: bool = True,
) -> AttachmentScores:
    """UAS / LAS of ``pred`` against ``gold``, with and without punctuation.

    Args:
        gold, pred: gold sentences and one predicted sentence per gold one, over the same words.
        compare_labels: ``None`` (default) compares labels only when both sides are recognised as the same label
            scheme; ``True`` always compares them (when both have labels); ``False`` never (LAS is ``None``).
        strip_subtypes: compare only the part of a label before ``:`` (``nmod:poss`` == ``nmod``).

    Raises:
        DataError: different numbers of sentences, or a predicted sentence of another length than its gold one.
    """
    if len(gold) != len(pred):
        raise DataError(f"{len(gold)} gold sentences but {len(pred)} predicted ones; they must pair up")
    for k, (g, p) in enumerate(zip(gold, pred)):
        if len(g) != len(p):
            raise DataError(
                f"sentence {k} ({g.sent_id or 'no id'}): gold has {len(g)} words, prediction "
                f"{len(p)}; evaluate predictions made on the gold tokens"
            )

    gold_labels = all(g.deprels is not None for g in gold)
    pred_labels = all(p.deprels is not None for p in pred)
    gold_scheme = label_scheme(lab for g in gold for lab in (g.deprels or []))
    pred_scheme = label_scheme(lab for p in pred for lab in (p.deprels or []))
    note = None
    if compare_labels is False:
        labelled, note = False, "labels not compared (compare_labels=False)"
    elif not gold_labels or not pred_labels:
        labelled = False
        note = f"LAS undefined: {'gold' if not gold_labels else 'predicted'} trees have no dependency labels"
    elif compare_labels:
        labelled = True
    else:
        labelled = gold_scheme is not None and gold_scheme == pred_scheme
        if not labelled:
            note = (
                f"LAS not computed: gold labels are {_describe(gold_scheme)} but predicted labels are "
                f"{_describe(pred_scheme)}; the schemes differ, so label matches would be meaningless"
            )

    n = n_np = head_ok = head_ok_np = lab_ok = lab_ok_np = 0
    for g, p in zip(gold, pred):
        for i in range(len(g)):
            hit = g.heads[i] == p.heads[i]
            gl, pl = (g.deprels[i], p.deprels[i]) if labelled else ("", "")  # type: ignore[index]
            lhit = hit and labelled and (_base(gl) == _base(pl) if strip_subtypes else gl == pl)
            n, head_ok, lab_ok = n + 1, head_ok + hit, lab_ok + lhit
            if not is_punct(g, i):
                n_np, head_ok_np, lab_ok_np = n_np + 1, head_ok_np + hit, lab_ok_np + lhit

    def frac(a: int, b: int, defined: bool = True) -> float | None:
        return a / b if b and defined else None

    return AttachmentScores(
        uas=frac(head_ok, n),
        las=frac(lab_ok, n, labelled),
        uas_no_punct=frac(head_ok_np, n_np),
        las_no_punct=frac(lab_ok_np, n_np, labelled),
        n_sentences=len(gold),
        n_tokens=n,
        n_tokens_no_punct=n_np,
        gold_scheme=gold_scheme,
        pred_scheme=pred_scheme,
        note=note,
    )


def _describe(scheme: str | None) -> str:
    return {"ud": "Universal Dependencies", "clearnlp": "ClearNLP (spaCy English)"}.get(
        scheme or "", "of an unrecognised scheme"
    )
