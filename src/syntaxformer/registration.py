"""How ``import syntaxformer`` plugs the library into ``transformers`` without importing torch.

Two things become available after a plain ``import syntaxformer``:

* the **Auto classes**: ``AutoConfig`` / ``AutoModel`` / ``AutoModelFor{SequenceClassification, QuestionAnswering,
  MultipleChoice, TokenClassification, Seq2SeqLM}.from_pretrained(folder)`` load a saved syntaxformer model;
* the **pipelines** ``"syntax-text-classification"``, ``"syntax-question-answering"`` and ``"syntax-translation"``
  (:mod:`syntaxformer.pipelines`).

Registering them eagerly would import torch and every model module (about 10 s), so they are registered when
``transformers`` itself loads the registries they go into, through an import hook (:data:`sys.meta_path`):

* when ``transformers.models.auto.configuration_auto`` loads, the ``model_type`` names of our configs are put into
  its ``CONFIG_MAPPING`` as placeholders; the first lookup of one of them (``AutoConfig.from_pretrained`` of a saved
  folder, which every ``AutoModel*.from_pretrained`` and ``pipeline(...)`` does first) imports
  :mod:`syntaxformer.modeling` (and :mod:`syntaxformer.modeling.seq2seq`), whose import registers the real classes
  with every Auto class;
* when ``transformers.pipelines`` loads, the three pipelines are registered with its ``PIPELINE_REGISTRY``
  (:mod:`syntaxformer.pipelines` itself imports nothing heavier than ``transformers.pipelines``).

If a registry is already loaded when ``syntaxformer`` is imported, the same is done at once. Importing
:mod:`syntaxformer.modeling` directly registers everything too (as before).
"""

from __future__ import annotations

import importlib
import logging
import sys
import threading
from typing import Any, Callable

__all__ = ["CONFIG_MODULES", "install", "register_pipelines"]

logger = logging.getLogger(__name__)

#: ``model_type`` of each saved syntaxformer config -> the module whose import registers it with the Auto classes.
CONFIG_MODULES: dict[str, str] = {
    "syntaxformer": "syntaxformer.modeling",
    "syntaxformer-syntax-bert": "syntaxformer.modeling",
    "syntax_infused_translation": "syntaxformer.modeling.seq2seq",
}

_CONFIG_AUTO = "transformers.models.auto.configuration_auto"
_PIPELINES = "transformers.pipelines"
_lock = threading.RLock()


class _PendingConfig:
    """A placeholder in ``CONFIG_MAPPING`` for a config class that is imported on first lookup."""

    def __init__(self, model_type: str):
        self.model_type = model_type

    def __repr__(self) -> str:
        return f"<syntaxformer config {self.model_type!r}, imported on first use>"


class _LazyConfigs(dict):
    """``CONFIG_MAPPING._extra_content`` that resolves our placeholders (by importing the module that registers the
    real class) whenever a value is read."""

    def _resolve(self, key: Any) -> Any:
        value = dict.__getitem__(self, key)
        if isinstance(value, _PendingConfig):
            with _lock:
                importlib.import_module(CONFIG_MODULES[value.model_type])  # registers: replaces our placeholder
            value = dict.__getitem__(self, key)
            if isinstance(value, _PendingConfig):  # the module did not register it: an internal inconsistency
                raise KeyError(key)
        return value

    def __getitem__(self, key: Any) -> Any:
        return self._resolve(key)

    def get(self, key: Any, default: Any = None) -> Any:
        return self._resolve(key) if key in self else default

    def values(self) -> list[Any]:  # type: ignore[override]
        return [self._resolve(k) for k in list(self)]

    def items(self) -> list[tuple[Any, Any]]:  # type: ignore[override]
        return [(k, self._resolve(k)) for k in list(self)]


def _add_config_placeholders(module: Any) -> None:
    """Put our model types into ``CONFIG_MAPPING`` (cheap: imports nothing)."""
    mapping = getattr(module, "CONFIG_MAPPING", None)
    extra = getattr(mapping, "_extra_content", None)
    if not isinstance(extra, dict):
        logger.debug(
            "transformers' CONFIG_MAPPING has no _extra_content dict; import syntaxformer.modeling to "
            "register the syntaxformer models"
        )
        return
    if not isinstance(extra, _LazyConfigs):
        extra = _LazyConfigs(extra)
        mapping._extra_content = extra
    for model_type in CONFIG_MODULES:
        extra.setdefault(model_type, _PendingConfig(model_type))


def register_pipelines(module: Any = None) -> None:
    """Register the syntax pipelines with ``transformers.pipelines.PIPELINE_REGISTRY`` (idempotent)."""
    from syntaxformer.pipelines import register

    register()


_ACTIONS: dict[str, Callable[[Any], None]] = {_CONFIG_AUTO: _add_config_placeholders, _PIPELINES: register_pipelines}


class _AfterLoad:
    """A loader (``importlib.abc.Loader`` protocol; not subclassed, to keep the import light) that runs an action
    once the wrapped loader has executed a module."""

    def __init__(self, loader: Any, action: Callable[[Any], None]):
        self._loader = loader
        self._action = action

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self._loader.exec_module(module)
        try:
            self._action(module)
        except Exception as e:  # never break the user's import of transformers
            logger.warning("syntaxformer could not register with %s: %s: %s", module.__name__, type(e).__name__, e)

    def __getattr__(self, name: str) -> Any:  # get_source, is_package, get_resource_reader ...
        return getattr(self._loader, name)


class _Hook:
    """A meta path finder (``importlib.abc.MetaPathFinder`` protocol) that finds the watched ``transformers`` modules
    with the other finders and wraps their loaders."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        action = _ACTIONS.get(fullname)
        if action is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _AfterLoad(spec.loader, action)
                return spec
        return None


_HOOK = _Hook()


def install() -> None:
    """Register with the ``transformers`` registries that are loaded, and hook the import of the others
    (idempotent; called by ``import syntaxformer``)."""
    with _lock:
        for name, action in _ACTIONS.items():
            module = sys.modules.get(name)
            if module is not None:
                try:
                    action(module)
                except Exception as e:
                    logger.warning("syntaxformer could not register with %s: %s: %s", name, type(e).__name__, e)
        if _HOOK not in sys.meta_path:
            sys.meta_path.insert(0, _HOOK)
