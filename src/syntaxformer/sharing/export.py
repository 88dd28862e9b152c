"""Export a finished run as a self-contained Hugging Face model folder: ``syntaxformer export RUN_DIR OUT_DIR``;
``pipeline(model=OUT_DIR, trust_remote_code=True)`` predicts on raw text where syntaxformer is not installed.
``docs/inference.md`` ("Sharing a model") lists the files and describes the export as a transaction
(:func:`export_model`).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import glob
import json
import logging
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import transformers
from safetensors import safe_open

from syntaxformer.data.annotators import make_annotator
from syntaxformer.defaults import DEFAULT_SPACY_MODEL
from syntaxformer.errors import ConfigError, DataError, SyntaxformerError
from syntaxformer.inference import num_beams, tuned_null_threshold
from syntaxformer.modeling.raw_text import class_head
from syntaxformer.registry import BUILTIN_SYSTEMS, system_for_model_type
from syntaxformer.sharing.export_code import ENTRY_MODULE, code_exports, code_files, model_classes
from syntaxformer.sharing.hub import check_hub_push, push_export
from syntaxformer.sharing.syntax_pipeline import OPTIONS_FILE, PIPELINE_CLASSES, PipelineOptions
from syntaxformer.training import model_card  # called through the module: tests replace write_model_card
from syntaxformer.training.lock import RunLock, lock_owner
from syntaxformer.training.run import METRICS_FILE, RUN_FILE, build_context, load_run
from syntaxformer.utils import write_json

__all__ = ["CARD_FILE", "TOKENIZER_FILES", "export_model"]

logger = logging.getLogger(__name__)

#: Tokenizer files copied when the run folder has them.
TOKENIZER_FILES: tuple[str, ...] = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
    "vocab.json",
    "merges.txt",
    "added_tokens.json",
    "spiece.model",
    "sentencepiece.bpe.model",
    "tokenizer.model",
)
CARD_FILE = "README.md"
#: Tokenizer files that hold no vocabulary (a tokenizer folder needs one of the others).
_TOKENIZER_EXTRAS = ("tokenizer_config.json", "special_tokens_map.json", "added_tokens.json", "merges.txt")
_WEIGHTS = "model.safetensors"
_WEIGHTS_INDEX = "model.safetensors.index.json"


# -- the run -------------------------------------------------------------------------------------------------
def _weight_files(run_dir: Path) -> list[str]:
    """The files of the run's final weights: ``model.safetensors``, or the shard index and its shards."""
    index = run_dir / _WEIGHTS_INDEX
    if not index.is_file():
        return [_WEIGHTS]
    return [_WEIGHTS_INDEX, *sorted(set(json.loads(index.read_text(encoding="utf-8")).get("weight_map", {}).values()))]


def _check_run(run_dir: Path) -> dict[str, Any]:
    """The run's ``config.json`` content; DataError naming what is missing for a run that is not finished or not
    complete, ConfigError for a ``model_type`` export does not carry (checked before transformers reads the
    folder, which would ask on stdin whether to run code)."""
    if not run_dir.is_dir():
        raise DataError(f"{run_dir} is not a folder; give the output folder of a finished `syntaxformer train` run")
    for name, problem in (
        (RUN_FILE, "is not a run folder of `syntaxformer train` (no {}); give the --output-dir of a finished run"),
        (METRICS_FILE, "holds an unfinished run (no {}, which train writes last); let it finish, or train it again"),
        (
            "config.json",
            "holds no saved model (no {}): the run was stopped before the end or trained with "
            "save_model=false; train it again with the model saved",
        ),
    ):
        if not (run_dir / name).is_file():
            raise DataError(f"{run_dir} {problem.format(name)}")
    try:
        config = json.loads((run_dir / "config.json").read_text(encoding="utf-8"))
        if not isinstance(config, dict):
            raise ValueError(f"a JSON {type(config).__name__}, not an object")
    except (OSError, ValueError) as e:
        raise DataError(f"{run_dir}/config.json is not a readable model config ({e}); train the run again") from None
    try:
        model_classes(config.get("model_type"))
    except ConfigError as e:
        raise ConfigError(f"{run_dir}/config.json has {e}") from None
    for shard in [f for f in _weight_files(run_dir) if f != _WEIGHTS_INDEX]:
        path = run_dir / shard
        if not path.is_file():
            raise DataError(
                f"{run_dir} has no final weights ({shard} is missing): export needs the "
                "model.safetensors the run saves at the end"
            )
        try:
            with safe_open(str(path), framework="pt") as f:
                if not list(f.keys()):
                    raise DataError(f"{path} holds no tensors; the run's weights are damaged, train it again")
        except DataError:
            raise
        except Exception as e:
            raise DataError(
                f"{path} is not a readable safetensors file ({type(e).__name__}: {e}); the run's "
                "weights are damaged, train it again"
            ) from e
    two = config.get("model_type") == "syntax_infused_translation"  # translation: one tokenizer per language
    for folder in (run_dir / "source_tokenizer", run_dir / "target_tokenizer") if two else (run_dir,):
        if not (folder / "tokenizer_config.json").is_file() or not any(
            (folder / name).is_file() for name in TOKENIZER_FILES if name not in _TOKENIZER_EXTRAS
        ):
            raise DataError(
                f"{folder} has no tokenizer (tokenizer_config.json and a vocabulary such as tokenizer.json are "
                "needed); the run's tokenizer files were removed: train it again"
            )
    return config


def _head(config: Any) -> str:
    arch = (getattr(config, "architectures", None) or [""])[0]
    head = class_head(arch)
    if head in ("sequence_classification", "question_answering", "seq2seq"):
        return head
    raise ConfigError(
        f"export makes pipelines for text classification, span QA and translation models; this run's "
        f"model is {arch or 'of no known head'} (multiple choice and token classification models load "
        "with the Auto classes of the run folder itself)"
    )


def _options(run_dir: Path, config: Any, task: Any, model_config: Any, head: str) -> dict[str, Any]:
    """The run's featurization options for the exported pipeline (as :meth:`Predictor.from_run` builds them)."""
    context = build_context(config, None, model_config)
    parser = context.parser or (DEFAULT_SPACY_MODEL if context.syntax_inputs else None)
    if parser is not None and (not isinstance(parser, str) or not re.fullmatch(r"[A-Za-z0-9_.-]+", parser)):
        raise ConfigError(
            f"the run parsed with {parser!r}; an exported model parses with a spaCy pipeline package "
            "named in the folder (e.g. en_core_web_sm), not a path or a pre-parsed file; train with "
            "--parser <package name>"
        )
    options = PipelineOptions(
        head=head,
        parser=parser if context.syntax_inputs else None,
        syntax_inputs=tuple(context.syntax_inputs),
        max_length=int(config.max_length),
        criterion=context.criterion,
        max_distance=int(context.max_distance),
        pos_tags=context.pos_tags,
        constituency=context.constituency,
    )
    if head == "question_answering":
        task_options = task.options()
        if task_options.get("verifier") == "parallel":
            raise ConfigError(
                "the run decodes with a second, parallel verifier model (verifier='parallel'); "
                "export supports one model per folder: train with verifier='joint' or 'none'"
            )
        tuned = tuned_null_threshold(run_dir)
        options.qa = {
            k: task_options[k]
            for k in ("doc_stride", "question_first", "n_best", "max_answer_length", "beta1", "beta2", "verifier")
        }
        options.qa["null_threshold"] = float(task_options["null_threshold"]) if tuned is None else tuned
        options.qa["null_threshold_source"] = (
            "the task's fixed null_threshold" if tuned is None else "the best-F1 threshold on the run's dev articles"
        )
    if head == "seq2seq":
        options.translation = {
            "max_source_length": int(task.max_eval_source_length),
            "max_target_length": int(task.max_target_length),
            "num_beams": num_beams(config, task),
        }
    return options.to_dict()


def _scrub_paths(data: Any) -> Any:
    """``config.json`` content without ``_name_or_path`` entries (absolute paths of the training machine)."""
    if isinstance(data, dict):
        return {k: _scrub_paths(v) for k, v in data.items() if k != "_name_or_path"}
    if isinstance(data, list):
        return [_scrub_paths(v) for v in data]
    return data


def _config_json(run_dir: Path, head: str, syntax_inputs: Sequence[str]) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """The exported ``config.json`` (``auto_map``, ``custom_pipelines``) and the code it names
    (:func:`~syntaxformer.sharing.export_code.code_exports`; ``syntax_inputs``: those the model reads)."""
    data = _scrub_paths(json.loads((run_dir / "config.json").read_text(encoding="utf-8")))
    _, pipeline_class, task_name, auto = PIPELINE_CLASSES[head]
    arch = data["architectures"][0]
    try:
        exports = code_exports(data.get("model_type"), arch, head, syntax_inputs)
    except ConfigError as e:
        raise ConfigError(f"{run_dir}/config.json: {e}") from None
    spec = system_for_model_type(data.get("model_type"))
    if spec is not None and spec.name in BUILTIN_SYSTEMS:
        data["model_type"] = spec.saved_model_type  # a config saved under an older name: the system's own
    config_class = next(iter(exports.values()))[0]
    data["auto_map"] = {"AutoConfig": f"{ENTRY_MODULE}.{config_class}", auto: f"{ENTRY_MODULE}.{arch}"}
    data["custom_pipelines"] = {
        task_name: {"impl": f"{ENTRY_MODULE}.{pipeline_class}", "pt": [auto], "tf": [], "type": "text"}
    }
    return data, exports


# -- the folder ----------------------------------------------------------------------------------------------
def export_model(
    run_dir: str | os.PathLike,
    out_dir: str | os.PathLike,
    *,
    overwrite: bool = False,
    license: str | None = None,
    push_to_hub: str | None = None,
    token: str | None = None,
) -> Path:
    """Write the final model of a finished run as a self-contained Hugging Face model folder, as one transaction:
    everything is checked first, the folder is built beside ``out_dir`` under its lock and put in place in one
    atomic step (:func:`_replace`); what a killed export left is cleaned by the next one.

    Args:
        run_dir: the output folder of a finished ``syntaxformer train`` run.
        out_dir: the folder to write; never the run, a folder inside it or a folder that holds it, nor a link.
        overwrite: replace an existing non-empty ``out_dir``.
        license: the card's license (a hub license id, e.g. ``apache-2.0``); default: the encoder's when it is the
            offline MiniLM (``apache-2.0``), else ``other``.
        push_to_hub: a hub repository id: push the written folder there (:func:`~syntaxformer.sharing.hub.push_export`),
            checked before anything is done (:func:`~syntaxformer.sharing.hub.check_hub_push`).
        token: the hub access token (default: ``HF_TOKEN`` or the one ``hf auth login`` saved).

    Returns:
        the written folder.

    Raises:
        DataError: ``run_dir`` is not a finished, complete run, or ``out_dir`` is one export must not write, is not
            empty without ``overwrite``, or is being written by another export. ConfigError: a run export does not
            support (see :func:`_check_run`, :func:`_head`, :func:`_options`); a push that cannot happen.
    """
    run_dir, out_dir = Path(run_dir), Path(out_dir)
    token = check_hub_push(push_to_hub, token) if push_to_hub else None
    _check_run(run_dir)
    _check_output(run_dir, out_dir)
    config, task = load_run(run_dir)
    model_config = transformers.AutoConfig.from_pretrained(str(run_dir), trust_remote_code=False)
    head = _head(model_config)
    options = _options(run_dir, config, task, model_config, head)
    metrics = json.loads((run_dir / "metrics.json").read_text(encoding="utf-8"))

    out_dir.parent.mkdir(parents=True, exist_ok=True)
    with _output_lock(out_dir):
        _clean_temporaries(out_dir)
        if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())) and not overwrite:
            raise DataError(f"{out_dir} exists and is not empty; choose a new folder or pass --overwrite to replace it")
        tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}{_BUILDING}", dir=out_dir.parent))
        try:
            names = [*_weight_files(run_dir), "generation_config.json", *TOKENIZER_FILES]
            names += [f"{sub}/{n}" for sub in ("source_tokenizer", "target_tokenizer") for n in TOKENIZER_FILES]
            for name in names:
                if (run_dir / name).is_file():
                    (tmp / name).parent.mkdir(exist_ok=True)
                    shutil.copyfile(run_dir / name, tmp / name)
            config_json, exports = _config_json(run_dir, head, options["syntax_inputs"])
            write_json(tmp / "config.json", config_json)
            write_json(tmp / OPTIONS_FILE, options)
            for name, text in code_files(exports).items():
                (tmp / name).write_text(text, encoding="utf-8")
            annotator = _annotator(options.get("parser"))
            run_config = config.to_dict()
            model_card.write_model_card(
                tmp, metrics, run_config, model_config, head, annotator=annotator, export=options, license=license,
                folder=out_dir,
            )  # fmt: skip
            os.chmod(tmp, 0o755)
            _replace(tmp, out_dir)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    logger.info("exported %s to %s (%s, %d files)", run_dir, out_dir, head, sum(1 for _ in out_dir.rglob("*")))
    if push_to_hub:
        push_export(out_dir, push_to_hub, token=token)
    return out_dir


def _annotator(parser: str | None) -> Any:
    """The spaCy annotator an exported folder parses with (for the card's parser name and version), or its name
    alone where the pipeline is not installed here."""
    if not parser:
        return None
    try:
        return make_annotator(parser, cache=False, progress=False)
    except (SyntaxformerError, OSError, ValueError):
        return f"spacy:{parser}"


#: The name parts of an export's temporaries beside ``OUT_DIR``: ``.OUT.export-*`` (the folder being built; after an
#: atomic exchange, the old folder being removed), ``.OUT.old-*`` (the old folder moved aside by the two-rename
#: fallback), ``.OUT.lock`` (the lock).
_BUILDING, _OLD, _LOCK = ".export-", ".old-", ".lock"


def _check_output(run_dir: Path, out_dir: Path) -> None:
    """Refuse an output whose writing or replacing would touch the run: the run itself, a folder inside it, a
    folder that holds it (``export runs/a runs --overwrite`` would remove every run), and a symbolic link."""
    if out_dir.is_symlink():
        raise DataError(
            f"{out_dir} is a symbolic link (to {os.readlink(out_dir)}); give a real folder: the folder it points to "
            "or a new one"
        )
    run, out = run_dir.resolve(), out_dir.resolve()
    if out == run or run in out.parents:
        raise DataError(f"{out_dir} is the run folder or inside it; export to a folder of its own")
    if out in run.parents:
        raise DataError(
            f"{out_dir} holds the run folder {run_dir}; replacing it would remove the run: export to a folder of "
            "its own"
        )


@contextlib.contextmanager
def _output_lock(out_dir: Path) -> Iterator[None]:
    """Hold the lock of ``out_dir`` (the run lock of :mod:`syntaxformer.training.lock` on ``.OUT.lock`` beside it),
    or refuse at once when another export writes ``out_dir``."""
    folder = out_dir.parent / f".{out_dir.name}{_LOCK}"
    lock = RunLock(folder)
    try:
        lock.acquire()
    except DataError as e:
        if "is being written" not in str(e):  # not another export: the folder cannot be written at all
            raise
        owner = lock_owner(folder) or {}
        raise DataError(
            f"{out_dir} is being written by another export (process {owner.get('pid', '?')} on "
            f"{owner.get('host', '?')}); wait until it ends, or choose another OUT_DIR"
        ) from None
    try:
        yield
    finally:
        lock.release()
        with contextlib.suppress(OSError):
            folder.rmdir()  # a lock folder left by a killed export


def _clean_temporaries(out_dir: Path) -> None:
    """Remove what an interrupted export into ``out_dir`` left beside it (called under the lock, so nothing of a
    running export): half-built folders, and an old folder moved aside, which goes back in place when the new one
    never arrived."""
    for path in sorted(out_dir.parent.glob(f".{glob.escape(out_dir.name)}{_OLD}*")):
        if not out_dir.exists() and not out_dir.is_symlink():
            logger.warning("%s: an interrupted export left the old folder in %s; restoring it", out_dir, path.name)
            os.replace(path, out_dir)
        else:
            _remove(path)
    for path in out_dir.parent.glob(f".{glob.escape(out_dir.name)}{_BUILDING}*"):
        logger.info("%s: removing %s, left by an interrupted export", out_dir, path.name)
        _remove(path)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


def _exchange(a: Path, b: Path) -> bool:
    """Swap ``a`` and ``b`` in one atomic step (Linux ``renameat2(RENAME_EXCHANGE)``); ``False`` where the system
    or file system cannot."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):  # a C library without it
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(b))


def _replace(tmp: Path, out_dir: Path) -> None:
    """Put the complete folder ``tmp`` at ``out_dir``: a rename when ``out_dir`` is new or empty; else one atomic
    exchange (then the old folder, now at ``tmp``, is removed), or where there is none, the old folder is moved
    aside, the new one renamed in and the old one removed (:func:`_clean_temporaries` repairs an interruption)."""
    if not out_dir.exists():
        os.replace(tmp, out_dir)
    elif out_dir.is_dir() and not any(out_dir.iterdir()):
        out_dir.rmdir()
        os.replace(tmp, out_dir)
    elif _exchange(tmp, out_dir):
        _remove(tmp)
    else:
        old = out_dir.parent / f".{out_dir.name}{_OLD}{os.getpid()}"
        os.replace(out_dir, old)
        os.replace(tmp, out_dir)
        _remove(old)
