"""The one registry of syntaxformer's extension points: syntax systems (:data:`SYSTEMS`, each a :class:`SystemSpec`),
tasks (:data:`TASKS`) and annotator schemes (:data:`ANNOTATORS`), each a :class:`Registry` resolved on first use, so
that ``import syntaxformer`` imports neither torch nor the model code (rules and tables: docs/architecture.md, "The
registry of extension points").
"""

from __future__ import annotations

import contextlib
import contextvars
import importlib
import logging
import re
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

from syntaxformer.errors import AnnotatorError, ConfigError, InputError, UnknownTaskError

__all__ = [
    "ANNOTATORS",
    "AUTO_MODEL_CLASSES",
    "ENTRY_POINT_GROUPS",
    "HEADS",
    "SYSTEMS",
    "TASKS",
    "Registry",
    "SystemSpec",
    "import_origin",
    "register_system",
    "resolve",
    "system",
    "system_for_model_type",
    "trust_run_code",
]

logger = logging.getLogger(__name__)

#: The entry-point group of each kind.
ENTRY_POINT_GROUPS: dict[str, str] = {
    "systems": "syntaxformer.systems",
    "tasks": "syntaxformer.tasks",
    "annotators": "syntaxformer.annotators",
}

#: The heads every system serves (the ``XFor...`` classes a :class:`SystemSpec` names).
HEADS: tuple[str, ...] = ("sequence_classification", "question_answering", "multiple_choice", "token_classification")
#: Head -> the ``transformers`` Auto class that loads a model with that head.
AUTO_MODEL_CLASSES: dict[str, str] = {h: "AutoModelFor" + "".join(w.title() for w in h.split("_")) for h in HEADS}

_REF = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*\Z")


def resolve(ref: Any) -> Any:
    """The object a ``"module:attr"`` reference names (``attr`` may be dotted; ConfigError if it cannot be
    imported); anything else is returned as is."""
    if not isinstance(ref, str) or not _REF.match(ref):
        return ref
    module_name, attr = ref.split(":", 1)
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as e:
        raise ConfigError(f"cannot import {module_name!r} (named by {ref!r}): {e}") from e
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ConfigError(f"{module_name!r} has no attribute {attr!r} (named by {ref!r})") from None
    return obj


def plugin_source(ep: Any) -> str:
    """An entry point as ``"distribution: group name = value"`` (how messages and ``run.json`` name a plugin)."""
    dist = getattr(getattr(ep, "dist", None), "name", None)
    return f"{dist + ': ' if dist else ''}{ep.group} {ep.name} = {ep.value}"


def _module_of(obj: Any) -> str | None:
    if isinstance(obj, str):
        return obj.split(":", 1)[0] if _REF.match(obj) else None
    return getattr(obj, "__module__", None) or getattr(type(obj), "__module__", None)


class Registry:
    """Named entries of one kind: built-in ``"module:attr"`` references, entries registered in code, and the
    package entry points of :attr:`group`, all resolved on first use.

    Args:
        kind: what the entries are, for messages (``"system"``, ``"task"``, ``"annotator"``).
        group: the entry-point group (``"syntaxformer.systems"`` ...).
        builtin: name -> ``"module:attr"`` (or the object itself).
        normalise: maps a name to its registry key (tasks ignore case and ``-`` / ``_``).
        builtin_modules: modules to import before the first lookup (each registers its entries in code).
        hint: how to add an entry, appended to the "unknown name" message.
        error: the error class for a bad registration or an entry that cannot be loaded.
        unknown_error: the error class for an unknown name (default ``error``).
        check: what is wrong with a loaded entry point's object (``None``: nothing), e.g. not a SystemSpec.
    """

    def __init__(
        self,
        kind: str,
        group: str,
        builtin: Mapping[str, Any] | None = None,
        *,
        normalise: Callable[[str], str] = str,
        builtin_modules: Iterable[str] = (),
        hint: str = "",
        error: type[Exception] = ConfigError,
        unknown_error: type[Exception] | None = None,
        check: Callable[[Any], str | None] | None = None,
    ):
        self.kind = kind
        self.error = error
        self.unknown_error = unknown_error or error
        self.group = group
        self.normalise = normalise
        self.hint = hint
        self._entries: dict[str, Any] = {normalise(k): v for k, v in (builtin or {}).items()}
        self._modules: dict[str, str | None] = {normalise(k): _module_of(v) for k, v in (builtin or {}).items()}
        self._builtin_modules = tuple(builtin_modules)
        self._entry_points: dict[str, Any] | None = None
        self._loaded_modules = False
        self._lock = threading.RLock()
        self.check = check
        self._failed: dict[str, str] = {}  # key -> why its plugin cannot be loaded
        self._reported: set[str] = set()  # problems already warned about (each once)

    # -- entry points --------------------------------------------------------------------------------------------
    def entry_points(self) -> dict[str, Any]:
        """``name -> importlib.metadata.EntryPoint`` of :attr:`group` (read once; later lookups reuse it)."""
        if self._entry_points is None:
            with self._lock:
                if self._entry_points is None:
                    found: dict[str, Any] = {}
                    eps: Iterable[Any]
                    try:
                        eps = entry_points(group=self.group)
                    except Exception as e:  # noqa: BLE001  (a broken distribution must not break the library)
                        logger.warning("could not read the %s entry points: %s: %s", self.group, type(e).__name__, e)
                        eps = ()
                    self._load_modules()
                    for ep in eps:
                        key = self.normalise(ep.name)
                        if key in self._entries:  # a built-in (or registered) entry keeps its name
                            self.report(
                                f"the {self.kind} plugin {plugin_source(ep)} is ignored: {key!r} is also "
                                f"syntaxformer's {self.kind} from {self._modules.get(key)}, which is used"
                            )
                        elif key in found:
                            self.report(
                                f"two {self.kind} plugins are named {key!r}: {plugin_source(found[key])} (used) and "
                                f"{plugin_source(ep)} (ignored); uninstall one"
                            )
                        else:
                            found[key] = ep
                    self._entry_points = found
        return self._entry_points

    def report(self, message: str) -> None:
        """Log ``message`` as a warning, once per process (a broken or clashing plugin is named once)."""
        if message not in self._reported:
            self._reported.add(message)
            logger.warning("%s", message)

    def _load_modules(self) -> None:
        if self._loaded_modules:
            return
        with self._lock:
            if self._loaded_modules:
                return
            self._loaded_modules = True
            for module in self._builtin_modules:
                importlib.import_module(module)

    # -- lookups -------------------------------------------------------------------------------------------------
    def register(self, name: str, obj: Any, *, overwrite: bool = False, module: str | None = None) -> Any:
        """Add ``obj`` (or a ``"module:attr"`` string imported on first use) under ``name`` and return it; ``module``
        (default ``obj.__module__``) is recorded in ``run.json``. :attr:`error` for an empty name, or one taken by
        another entry unless ``overwrite``."""
        key = self.normalise(name or "")
        if not key:
            raise self.error(f"a {self.kind} needs a name to be registered ({obj!r})")
        with self._lock:
            old = self._entries.get(key)
            if old is not None and old is not obj and not overwrite:
                raise self.error(
                    f"a {self.kind} named {key!r} is already registered ({old!r}); pass overwrite=True to replace it"
                )
            self._entries[key] = obj
            self._modules[key] = module or _module_of(obj)
        return obj

    def key(self, name: str) -> str:
        """The registry key of ``name``."""
        return self.normalise(str(name))

    def registered(self, name: str) -> bool:
        """Whether ``name`` is built in or registered in code (entry points not counted)."""
        return self.normalise(name) in self._entries

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        key = self.normalise(name)
        if key in self._entries:
            return True
        self._load_modules()
        return key in self._entries or key in self.entry_points()

    def __iter__(self) -> Any:
        return iter(self.names())

    def names(self) -> list[str]:
        """Every known name (built-in, registered in code, entry points), sorted."""
        self._load_modules()
        return sorted(set(self._entries) | set(self.entry_points()))

    def get(self, name: str) -> Any:
        """The entry called ``name``, imported on first use; an error listing the known ones for an unknown name."""
        key = self.normalise(str(name))
        if key not in self._entries:
            self._load_modules()
        with self._lock:
            if key not in self._entries:
                ep = self.entry_points().get(key)
                if ep is None:
                    raise self.unknown(name)
                self._entries[key] = self._load_plugin(key, ep)
                self._modules[key] = ep.value.split(":", 1)[0]
            value = self._entries[key]
            if isinstance(value, str):
                value = resolve(value)
                self._entries[key] = value
            return value

    def defined_by(self, name: str) -> str | None:
        """The module that defines the entry ``name`` (an entry point's, without importing it), or ``None``."""
        key = self.normalise(str(name))
        if key in self._entries or key in self._modules:
            return self._modules.get(key)
        ep = self.entry_points().get(key)
        return ep.value.split(":", 1)[0] if ep is not None else None

    def _load_plugin(self, key: str, ep: Any) -> Any:
        """The object of entry point ``ep``; a plugin that cannot be loaded (raises on import, even ``SystemExit``;
        names a missing attribute or package; fails :attr:`check`) raises :attr:`error` naming its distribution and
        entry point, now and at every later lookup, without importing it again."""
        if key in self._failed:
            raise self.error(self._failed[key])
        try:
            obj = ep.load()
        except KeyboardInterrupt:
            logger.error("interrupted while importing the %s plugin %s", self.kind, plugin_source(ep))
            raise
        except SystemExit as e:  # a plugin must not end the process that merely looked it up
            problem: str | None = f"it called sys.exit({e.code!r}) while being imported"
        except BaseException as e:  # noqa: BLE001  (any error of a plugin's import stays the plugin's)
            problem = f"{type(e).__name__}: {' '.join(str(e).split())}"
        else:
            problem = self.check(obj) if self.check is not None else None
        if problem is None:
            return obj
        self._failed[key] = f"the {self.kind} plugin {plugin_source(ep)} cannot be loaded: {problem}"
        raise self.error(self._failed[key])

    def loaded(self, *, plugins: bool = True) -> list[tuple[str, Any]]:
        """``(name, entry)`` of every entry that loads: built-in and registered ones first, then (with ``plugins``)
        the entry points; one that cannot be loaded is left out, with one warning naming it (the others are
        unaffected)."""
        self._load_modules()
        keys = sorted(self._entries)
        out = []
        for key in [*keys, *(sorted(set(self.entry_points()) - set(keys)) if plugins else [])]:
            try:
                out.append((key, self.get(key)))
            except self.error as e:
                self.report(str(e))
        return out

    def unknown(self, name: Any) -> Exception:
        """The error for a name that is not registered, listing the known ones."""
        return self.unknown_error(
            f"unknown {self.kind} {name!r}; known {self.kind}s: {', '.join(self.names())}{self.hint}"
        )

    def origin(self, name: str) -> dict[str, Any]:
        """Where the entry ``name`` comes from, for ``run.json``: ``{"name", "module", "entry_point"}`` (the
        defining module; ``"distribution: group name = value"`` for an entry point, else ``None``)."""
        key = self.normalise(str(name))
        self.get(key)  # loads it (and so knows its module)
        ep = self.entry_points().get(key)
        entry_point = None
        if ep is not None and self._modules.get(key) == ep.value.split(":", 1)[0]:
            entry_point = plugin_source(ep)
        return {"name": key, "module": self._modules.get(key), "entry_point": entry_point}


#: Whether a run folder may import the modules its ``run.json`` names (:func:`trust_run_code`).
_TRUST_RUN_CODE: contextvars.ContextVar[bool] = contextvars.ContextVar("trust_run_code", default=False)


@contextlib.contextmanager
def trust_run_code(trusted: bool = True) -> Iterator[None]:
    """Within the block, loading a run may import the modules its ``run.json`` names (``--trust-run-code``;
    ``load_run(..., trust_remote_code=True)``). Only for run folders whose code you trust: importing a module runs
    it."""
    token = _TRUST_RUN_CODE.set(bool(trusted))
    try:
        yield
    finally:
        _TRUST_RUN_CODE.reset(token)


def import_origin(
    record: Any, kind: str = "part", known: Registry | None = None, *, trusted: bool | None = None
) -> None:
    """Import the module a ``run.json`` origin record names (:meth:`Registry.origin`), so that a part registered
    in code by that module is known again: nothing for a part ``known`` already has from that module, a module of
    this package or one already imported; any other module only when ``trusted`` (default: inside
    :func:`trust_run_code`), else ConfigError. A module that cannot be imported is logged (the lookup that follows
    names what is missing)."""
    if not isinstance(record, Mapping):
        return
    module, name = record.get("module"), record.get("name")
    if not isinstance(module, str) or not module or module == "__main__" or module.startswith("syntaxformer."):
        return
    if module in sys.modules:
        return
    if known is not None and isinstance(name, str) and name in known and known.defined_by(name) == module:
        return
    if not (_TRUST_RUN_CODE.get() if trusted is None else trusted):
        if record.get("entry_point"):  # a plugin that is not installed here: the lookup that follows says so
            return
        raise ConfigError(
            f"the run names the module {module!r} for its {kind} {name!r}; loading it would run that module's code. "
            "Pass --trust-run-code (trust_remote_code=True) only if you trust where this run folder comes from"
        )
    try:
        importlib.import_module(module)
    except ImportError as e:
        logger.info("could not import %s, the module that defined %s %r: %s", module, kind, name, e)


# -- systems -----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SystemSpec:
    """Everything the library needs to know about a syntax system. The classes are ``"module:attr"`` references
    (or the classes themselves), imported on first use.

    Attributes:
        name: the system's name (``RunConfig.model_type``, ``--model-type``).
        config: its config class (a :class:`~syntaxformer.modeling.SyntaxModelConfig` subclass, whose
            ``syntax_inputs`` property declares the syntax batch keys the model reads).
        models: head -> ``XFor<Head>`` class (heads of :data:`HEADS`; a system may serve fewer).
        backbone: the model without a head (``AutoModel``), or ``None``.
        model_type: the config's ``model_type`` (saved in ``config.json``); defaults to ``name``.
        aliases: older ``model_type`` strings that load as this system.
        label: the name in result tables: a string, or a function (or ``"module:attr"``) ``config -> str``.
        title: a readable name (model cards, ``show``).
        auto_map: also make every saved config carry ``auto_map`` (loadable with ``trust_remote_code=True``).
    """

    name: str
    config: Any
    models: Mapping[str, Any]
    backbone: Any = None
    model_type: str = ""
    aliases: tuple[str, ...] = ()
    label: Any = ""
    title: str = ""
    auto_map: bool = False
    _registered: list[bool] = field(default_factory=lambda: [False], init=False, repr=False, compare=False)

    @property
    def saved_model_type(self) -> str:
        """The ``model_type`` its configs are saved with."""
        return self.model_type or self.name

    def config_class(self) -> Any:
        """The config class (imported on first use; it learns the system's older model types, its
        ``older_model_types``, where it has them)."""
        cls = resolve(self.config)
        if self.aliases and isinstance(getattr(cls, "older_model_types", None), dict):
            cls.older_model_types = {**cls.older_model_types, **dict.fromkeys(self.aliases, self.saved_model_type)}
        return cls

    def model_class(self, head: str) -> Any:
        """The model class of ``head`` (ConfigError if the system has none)."""
        if head not in self.models:
            raise ConfigError(
                f"system {self.name!r} has no model for head {head!r}; it serves {', '.join(self.models)}"
            )
        return resolve(self.models[head])

    def backbone_class(self) -> Any:
        """The backbone class, or ``None``."""
        return None if self.backbone is None else resolve(self.backbone)

    def label_for(self, config: Any) -> str:
        """The name of a model of this system in tables (:attr:`label`, or its title / name)."""
        label = resolve(self.label)
        if callable(label):
            return str(label(config))
        return str(label or self.title or self.name)

    def register_auto(self) -> None:
        """Register the config and model classes with the ``transformers`` Auto classes (public API; imports the
        classes and transformers' model auto module; idempotent)."""
        if self._registered[0]:
            return
        import transformers

        config_class = self.config_class()
        transformers.AutoConfig.register(self.saved_model_type, config_class, exist_ok=True)
        if self.auto_map:
            config_class.register_for_auto_class("AutoConfig")
        backbone = self.backbone_class()
        if backbone is not None:
            transformers.AutoModel.register(config_class, backbone, exist_ok=True)
            if self.auto_map:
                backbone.register_for_auto_class("AutoModel")
        for head, auto_name in AUTO_MODEL_CLASSES.items():
            if head in self.models:
                auto = getattr(transformers, auto_name)
                cls = self.model_class(head)
                auto.register(config_class, cls, exist_ok=True)
                if self.auto_map:
                    cls.register_for_auto_class(auto_name)
        self._registered[0] = True


def _sgnet_label(config: Any) -> str:
    # configs saved before "plain" was a system of its own made the baseline as SG-Net without its layer
    return "SG-Net" if getattr(config, "use_sg_layer", True) else "baseline"


def _syntax_bert_label(config: Any) -> str:
    sub = config.syntax_layers is None or len(config.syntax_layers) > 0
    lisa = config.lisa_layer is not None
    if sub:
        return "Syntax-BERT + LISA" if lisa else "Syntax-BERT"
    return "LISA" if lisa else "baseline (Syntax-BERT head)"


def _builtin(name: str, prefix: str, model_type: str, label: Any, title: str, *aliases: str) -> SystemSpec:
    """A built-in system: ``<prefix>Config`` in ``modeling/configuration.py``, ``<prefix>Model`` and
    ``<prefix>For<Head>`` in ``modeling/modeling_<name>.py``."""
    module = f"syntaxformer.modeling.modeling_{name}"
    models = {h: f"{module}:{prefix}{auto[len('AutoModel') :]}" for h, auto in AUTO_MODEL_CLASSES.items()}
    config = f"syntaxformer.modeling.configuration:{prefix}Config"
    return SystemSpec(name, config, models, f"{module}:{prefix}Model", model_type, aliases, label, title, True)


#: The built-in systems.
BUILTIN_SYSTEMS: dict[str, SystemSpec] = {
    "sgnet": _builtin("sgnet", "SGNet", "sgnet", _sgnet_label, "SG-Net", "syntaxformer"),
    "syntax_bert": _builtin(
        "syntax_bert", "SyntaxBert", "syntax_bert", _syntax_bert_label, "Syntax-BERT", "syntaxformer-syntax-bert"
    ),
    "plain": _builtin("plain", "PlainEncoder", "plain_encoder", "baseline", "plain encoder (baseline)"),
}

#: ``model_type`` -> the module whose import registers it, for the models that are not systems of the runner.
OTHER_MODEL_TYPES: dict[str, str] = {"syntax_infused_translation": "syntaxformer.modeling.seq2seq"}

SYSTEMS = Registry(
    "system",
    ENTRY_POINT_GROUPS["systems"],
    BUILTIN_SYSTEMS,
    normalise=str.strip,
    check=lambda obj: None if isinstance(obj, SystemSpec) else f"{obj!r} is not a syntaxformer.registry.SystemSpec",
    hint=f" (add one with syntaxformer.registry.register_system or an entry point of {ENTRY_POINT_GROUPS['systems']})",
)

TASKS = Registry(
    "task",
    ENTRY_POINT_GROUPS["tasks"],
    normalise=lambda name: name.strip().lower().replace("_", "-"),
    builtin_modules=(
        "syntaxformer.tasks.glue",
        "syntaxformer.tasks.snli",
        "syntaxformer.tasks.sst",
        "syntaxformer.tasks.squad",
        "syntaxformer.tasks.race",
        "syntaxformer.tasks.translation",
        "syntaxformer.tasks.custom",
    ),
    hint=f" (register your own with syntaxformer.tasks.register_task or an entry point of {ENTRY_POINT_GROUPS['tasks']})",
    error=InputError,
    unknown_error=UnknownTaskError,
)

_A = "syntaxformer.data.annotators.factory"
ANNOTATORS = Registry(
    "annotator",
    ENTRY_POINT_GROUPS["annotators"],
    {"spacy": f"{_A}:spacy_annotator", "conllu": f"{_A}:conllu_annotator", "jsonl": f"{_A}:jsonl_annotator"},
    hint=(
        " (add one with syntaxformer.data.annotators.register_annotator or an entry point of "
        f"{ENTRY_POINT_GROUPS['annotators']})"
    ),
    error=AnnotatorError,
)


def system(name: str) -> SystemSpec:
    """The :class:`SystemSpec` of a system name (ConfigError for an unknown one; every entry is a spec:
    :func:`register_system` and the plugins' ``check`` refuse anything else)."""
    return SYSTEMS.get(name)


def register_system(spec: SystemSpec, *, overwrite: bool = False) -> SystemSpec:
    """Make a system known to the runner, the CLI and the Auto classes of this process (a package makes it known
    to every process with an entry point of group ``syntaxformer.systems`` instead); returns ``spec``."""
    if not isinstance(spec, SystemSpec):
        raise ConfigError(f"register_system needs a syntaxformer.registry.SystemSpec, got {spec!r}")
    SYSTEMS.register(spec.name, spec, overwrite=overwrite, module=sys._getframe(1).f_globals.get("__name__"))
    # Known to AutoConfig at once if transformers has loaded it (`import syntaxformer` has imported registration;
    # looked up, not imported, so that this module imports nothing of the library but its errors).
    registration = sys.modules.get("syntaxformer.registration")
    if registration is not None:
        registration.system_added(spec)
    return spec


def system_for_model_type(model_type: Any) -> SystemSpec | None:
    """The system whose configs are saved with ``model_type`` (its current one or an older alias), or ``None``.
    Built-in and registered systems are looked at first: their model types load no plugin."""
    if not isinstance(model_type, str):
        return None
    return model_types(specs=True, plugins=False).get(model_type) or model_types(specs=True).get(model_type)


def model_types(*, specs: bool = False, plugins: bool = True) -> dict[str, Any]:
    """Every ``model_type`` a saved syntaxformer system model may have (aliases included) -> its system's name
    (with ``specs``: its :class:`SystemSpec`). Built-in and registered systems come first and keep their types; a
    plugin that claims a type already taken is reported (both sources) and ignored for it; a plugin that cannot be
    loaded is left out with a warning (:meth:`Registry.loaded`)."""
    out: dict[str, Any] = {}
    for _, spec in SYSTEMS.loaded(plugins=plugins):
        for t in (spec.saved_model_type, *spec.aliases):
            first = out.setdefault(t, spec)
            if first is not spec:
                SYSTEMS.report(
                    f"the systems {first.name!r} ({_source(first.name)}) and {spec.name!r} ({_source(spec.name)}) "
                    f"both save model_type {t!r}; {first.name!r} is used"
                )
    return out if specs else {t: spec.name for t, spec in out.items()}


def _source(name: str) -> str:
    origin = SYSTEMS.origin(name)
    return str(origin["entry_point"] or origin["module"])
