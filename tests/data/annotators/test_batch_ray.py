"""The batch annotation function under Ray Data on a local Ray instance (``ray.init(num_cpus=2)``): two actors parse
real SST-2 sentences through ``map_batches`` into one shared parse cache, and the rows give exactly the Documents of
``make_annotator().annotate``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import syntaxformer
from syntaxformer.data import make_annotator
from syntaxformer.data.annotators.batch import BatchAnnotator, document_from_row
from syntaxformer.data.annotators.cache import ParseCache, make_key
from tests.data.annotators.test_batch import sst2_sentences

pytestmark = pytest.mark.slow

ray = pytest.importorskip("ray", reason="pip install 'syntaxformer[ray]' (Ray Data) to run the Ray test")


@pytest.fixture(scope="module")
def local_ray():
    """A local Ray instance with 2 CPUs; its workers import this checkout's syntaxformer."""
    import ray.data

    src = str(Path(syntaxformer.__file__).resolve().parents[1])
    path = os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH")]))
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": path, "OMP_NUM_THREADS": "1", "SYNTAXFORMER_NO_PROGRESS": "1"}},
    )
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    yield ray
    ray.shutdown()


def test_batch_ray_map_batches_gives_the_documents_of_annotate(local_ray, tmp_path):
    import ray.data

    texts = sst2_sentences(48, start=200)
    cache_path = tmp_path / "parses.sqlite3"
    ds = ray.data.from_items([{"idx": i, "sentence": t} for i, t in enumerate(texts)], override_num_blocks=4)
    # a callable class: Ray builds one BatchAnnotator per actor, which loads the parser once
    out = ds.map_batches(
        BatchAnnotator,
        fn_constructor_kwargs={"column": "sentence", "cache": str(cache_path)},
        batch_size=12,
        compute=ray.data.ActorPoolStrategy(size=2),
    ).take_all()

    rows = sorted(out, key=lambda r: int(r["idx"]))
    assert [r["sentence"] for r in rows] == texts
    got = [document_from_row(r, text_column="sentence") for r in rows]
    assert got == make_annotator(cache=None, progress=False).annotate(texts)
    # both actors wrote into the one cache file
    key = BatchAnnotator(column="sentence", cache=None).parser_key
    keys = [make_key(t, key, "text") for t in texts]
    assert set(ParseCache(cache_path).get_many(keys)) == set(keys)
