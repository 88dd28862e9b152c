"""Sub-commands of the ``syntaxformer`` CLI (see :mod:`syntaxformer.cli`)."""
