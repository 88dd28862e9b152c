"""Sentence(-pair) tasks: GLUE, SNLI and SST-tree readers, features with syntax, and GLUE metrics."""

from syntaxformer.tasks.data import (TaskData, TaskExample, load_split, read_glue_tsv, read_snli, read_sst_task,
                                     subsample)
from syntaxformer.tasks.metrics import compute_metrics
from syntaxformer.tasks.registry import TASKS, TaskSpec, get_task, task_names

__all__ = ["TASKS", "TaskData", "TaskExample", "TaskSpec", "compute_metrics", "get_task", "load_split",
           "read_glue_tsv", "read_snli", "read_sst_task", "subsample", "task_names"]
