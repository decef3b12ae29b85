"""Stub for `_collections`, the C module behind `collections` (typeshed has none): the parts Stockade uses."""

from typing import Any

class _tuplegetter:
    """The field accessor of a named tuple: a descriptor reading item `index` of the tuple."""

    def __init__(self, index: int, doc: str, /) -> None: ...
    def __get__(self, instance: object, owner: type | None = None, /) -> Any: ...
