"""Tasks: the :class:`Task` interface and its public registry, and the built-in task families.

``from syntaxformer.tasks import Task, register_task, get_task`` is all a new task needs (see
:mod:`syntaxformer.tasks.base`); the built-in ones are GLUE (:mod:`~syntaxformer.tasks.glue`), SNLI
(:mod:`~syntaxformer.tasks.snli`) and the SST tree tasks (:mod:`~syntaxformer.tasks.sst`), all
:class:`~syntaxformer.tasks.sentence.SentenceTask` subclasses featurized by :mod:`syntaxformer.tasks.featurize`;
SQuAD 2.0 (:mod:`~syntaxformer.tasks.squad`), RACE (:mod:`~syntaxformer.tasks.race`) and translation
(:mod:`~syntaxformer.tasks.translation`).
"""

from syntaxformer.tasks.base import (
    HEADS,
    Features,
    Predictions,
    SplitData,
    Task,
    TaskContext,
    get_task,
    register_task,
    task_names,
    task_option_names,
)

__all__ = [
    "HEADS",
    "Features",
    "Predictions",
    "SplitData",
    "Task",
    "TaskContext",
    "get_task",
    "register_task",
    "task_names",
    "task_option_names",
]
