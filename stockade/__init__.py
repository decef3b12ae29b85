"""Stockade: a declarative policy compiler and static analyzer for AI-agent sandboxes.

Stages are subpackages: ``policy_lang`` → ``compiler`` → ``backends``; ``analyzer``;
``runtime``; ``cli``.  Nothing heavy is imported here: ``stockade run`` with a compiled
artifact must start fast.
"""

__version__ = "0.1.0"
