"""How ``import syntaxformer`` plugs the library into ``transformers`` without importing torch.

An import hook (:data:`sys.meta_path`) acts when ``transformers`` loads a registry (at once if it is loaded
already): ``transformers.models.auto.configuration_auto`` gets a stand-in config class (:class:`PendingConfig`) for
every ``model_type`` of every system (:mod:`syntaxformer.registry`), which imports and registers the system's
classes on first use; ``transformers.pipelines`` gets the pipelines of :mod:`syntaxformer.pipelines`.
"""

from __future__ import annotations

import functools
import importlib
import logging
import sys
import threading
from collections.abc import Callable
from typing import Any

from syntaxformer.registry import OTHER_MODEL_TYPES, model_types, resolve, system

__all__ = ["PendingConfig", "install", "system_added"]

logger = logging.getLogger(__name__)

_CONFIG_AUTO = "transformers.models.auto.configuration_auto"
_PIPELINES = "transformers.pipelines"
_lock = threading.RLock()


class PendingConfig:
    """Stands in, in ``AutoConfig``'s registry, for the config class of a model type until it is first used.

    Subclasses (:func:`_pending`) set :attr:`model_type` and :attr:`load` (imports, registers and returns the real
    class). Building one builds the real config; one saved under an alias ``model_type`` is read as the system's.
    """

    model_type: str = ""
    load: Callable[[], Any]

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        return cls.real()(*args, **kwargs)

    @classmethod
    def real(cls) -> Any:
        """The real config class (imported and registered with the Auto classes on first use)."""
        with _lock:
            return cls.load()

    @classmethod
    def from_dict(cls, config_dict: dict[str, Any], **kwargs: Any) -> Any:
        real = cls.real()
        if config_dict.get("model_type") != getattr(real, "model_type", None):
            config_dict = {**config_dict, "model_type": real.model_type}
        return real.from_dict(config_dict, **kwargs)

    @classmethod
    def from_pretrained(cls, *args: Any, **kwargs: Any) -> Any:
        return cls.real().from_pretrained(*args, **kwargs)


def _pending(model_type: str, load: Callable[[], type]) -> type:
    return type(
        f"PendingConfig[{model_type}]",
        (PendingConfig,),
        {"model_type": model_type, "load": staticmethod(load), "__module__": __name__},
    )


def _load_system(name: str) -> type:
    spec = system(name)
    spec.register_auto()
    return spec.config_class()


def _load_module(model_type: str, module: str) -> type:
    importlib.import_module(module)  # registers the real class in place of the stand-in
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    return CONFIG_MAPPING[model_type]


def _register_pending(module: Any, model_type: str, load: Callable[[], type]) -> None:
    """Register a stand-in for ``model_type`` unless a class is registered for it already (ours, or one of
    ``transformers``' own, which a system may not take over)."""
    mapping = module.CONFIG_MAPPING
    if model_type in mapping:
        current = mapping[model_type]
        if not (isinstance(current, type) and issubclass(current, PendingConfig)) and str(
            getattr(current, "__module__", "")
        ).startswith("transformers."):
            logger.warning("model_type %r is taken by transformers' %s; not registered", model_type, current)
        return
    module.AutoConfig.register(model_type, _pending(model_type, load), exist_ok=True)


def _register_configs(module: Any) -> None:
    """Register a stand-in config for every system's model types (cheap: reads the registry, imports no model)."""
    for model_type, name in model_types().items():  # a broken plugin is left out, with a warning naming it
        _register_pending(module, model_type, functools.partial(_load_system, name))
    for model_type, defining in OTHER_MODEL_TYPES.items():
        _register_pending(module, model_type, functools.partial(_load_module, model_type, defining))


def system_added(spec: Any) -> None:
    """Register a system added in code (:func:`syntaxformer.registry.register_system`) with ``AutoConfig``, if
    ``transformers`` has loaded it already (else the import hook does it)."""
    module = sys.modules.get(_CONFIG_AUTO)
    if module is None or not hasattr(module, "AutoConfig"):
        return
    with _lock:
        for model_type in (spec.saved_model_type, *spec.aliases):
            _register_pending(module, model_type, functools.partial(_load_system, spec.name))


def _register_pipelines(module: Any) -> None:
    """The pipelines of :mod:`syntaxformer.pipelines` into ``transformers.pipelines``; nothing while that module is
    itself being imported (it imports ``transformers.pipelines`` first and registers them when it has loaded)."""
    ours = sys.modules.get("syntaxformer.pipelines")
    if ours is None or hasattr(ours, "register"):
        resolve("syntaxformer.pipelines:register")()


#: What to do when ``transformers`` loads each module. The pipelines module is named, not imported (as the registry
#: names its entries): this module sits at the bottom of the package's layers, so that the package root may install it.
_ACTIONS: dict[str, Callable[[Any], None]] = {_CONFIG_AUTO: _register_configs, _PIPELINES: _register_pipelines}


def _act(action: Callable[[Any], None], module: Any) -> None:
    try:
        action(module)
    except Exception as e:  # noqa: BLE001  (never break the user's import of transformers)
        logger.warning("syntaxformer could not register with %s: %s: %s", module.__name__, type(e).__name__, e)


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
        _act(self._action, module)

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
                    spec.loader = _AfterLoad(spec.loader, action)  # type: ignore[assignment]  # delegates to it
                return spec
        return None


_HOOK = _Hook()


def install() -> None:
    """Register with the ``transformers`` registries that are loaded, and hook the import of the others
    (idempotent; called by ``import syntaxformer``)."""
    with _lock:
        for name, action in _ACTIONS.items():
            if sys.modules.get(name) is not None:
                _act(action, sys.modules[name])
        if _HOOK not in sys.meta_path:
            sys.meta_path.insert(0, _HOOK)
