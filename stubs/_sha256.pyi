"""Stub for `_sha256`, the C SHA-256 module (typeshed has none): the same type as `hashlib.sha256`."""

from hashlib import sha256 as sha256
