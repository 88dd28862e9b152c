"""Sentence(-pair) tasks: GLUE and SNLI readers, features with syntax, and GLUE metrics."""

from syntaxformer.tasks.data import TaskData, TaskExample, load_split, read_glue_tsv, read_snli, subsample
from syntaxformer.tasks.metrics import compute_metrics
from syntaxformer.tasks.registry import TASKS, TaskSpec, get_task, task_names

__all__ = ["TASKS", "TaskData", "TaskExample", "TaskSpec", "compute_metrics", "get_task", "load_split",
           "read_glue_tsv", "read_snli", "subsample", "task_names"]
