"""Tasks: the :class:`Task` interface and its public registry (:mod:`syntaxformer.tasks.base`), and the built-in
task families (GLUE, SNLI, SST, SQuAD 2.0, RACE, translation, your own data)."""

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
