"""Value syntax of the policy language: durations, sizes, counts, hosts, ports, CIDRs.

Each parser returns the value or raises :class:`ValueProblem` with a message and a hint;
the AST builder turns that into a diagnostic at the word's span.
"""

from __future__ import annotations

import ipaddress
import re
from typing import TYPE_CHECKING

from stockade import catalogue as codes

if TYPE_CHECKING:  # pragma: no cover
    from stockade.policy_lang.ast import HostKind


class ValueProblem(ValueError):
    """A malformed value: ``code``, a lowercase message and a hint."""

    def __init__(self, code: str, message: str, help: str | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.help = help
        #: The value to write instead, when there is an obvious one.
        self.suggestion: str | None = None


DURATION_UNITS: dict[str, float] = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}
SIZE_UNITS: dict[str, int] = {
    "B": 1, "KB": 1000, "MB": 1000**2, "GB": 1000**3, "TB": 1000**4,
    "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3, "TiB": 1024**4,
}
_NUMBER_UNIT = re.compile(r"(?P<number>[0-9]+(?:\.[0-9]+)?)(?P<unit>[A-Za-z]*)\Z")


def _split_number(text: str, what: str, example: str) -> tuple[float, str]:
    match = _NUMBER_UNIT.match(text)
    if not match:
        raise ValueProblem(codes.BAD_NUMBER, f"`{text}` is not a {what}",
                           f"write a number and a unit, e.g. `{example}`")
    return float(match["number"]), match["unit"]


def parse_duration(text: str) -> float:
    """``10m`` → 600.0 seconds; units ms, s, m, h, d (a bare number is seconds)."""
    number, unit = _split_number(text, "duration", "10m")
    if unit == "":
        unit = "s"
    if unit not in DURATION_UNITS:
        raise ValueProblem(codes.UNKNOWN_UNIT, f"unknown duration unit `{unit}`",
                           "use one of " + ", ".join(f"`{u}`" for u in DURATION_UNITS))
    value = number * DURATION_UNITS[unit]
    if value <= 0:
        raise ValueProblem(codes.VALUE_TOO_SMALL, f"duration `{text}` must be greater than zero", "e.g. `10m`")
    return value


def parse_size(text: str) -> float:
    """``4GiB`` → bytes; units B, KB, MB, GB, TB (powers of 1000), KiB, MiB, GiB, TiB (1024)."""
    number, unit = _split_number(text, "size", "4GiB")
    if unit == "":
        unit = "B"
    if unit not in SIZE_UNITS:
        lowered = {u.lower(): u for u in SIZE_UNITS}
        hint = f"did you mean `{lowered[unit.lower()]}`?" if unit.lower() in lowered else (
            "use one of " + ", ".join(f"`{u}`" for u in SIZE_UNITS))
        raise ValueProblem(codes.UNKNOWN_UNIT, f"unknown size unit `{unit}`", hint)
    value = number * SIZE_UNITS[unit]
    if value < 1:
        raise ValueProblem(codes.VALUE_TOO_SMALL, f"size `{text}` must be at least one byte", "e.g. `4GiB`")
    return float(int(value))


def parse_cpus(text: str) -> float:
    """A CPU share greater than zero: ``0.5`` is half of one CPU, ``2`` two CPUs."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not (value > 0 and value < 1e6) or not text.replace(".", "", 1).isdigit():
        raise ValueProblem(codes.BAD_NUMBER, f"`{text}` is not a number of CPUs greater than zero", "e.g. `0.5` or `2`")
    return value


def parse_count(text: str) -> float:
    """A whole number greater than zero."""
    if not (text.isascii() and text.isdigit()) or int(text) <= 0:
        raise ValueProblem(codes.BAD_NUMBER, f"`{text}` is not a whole number greater than zero", "e.g. `512`")
    return float(int(text))


_LABEL = re.compile(r"(?!-)[a-z0-9-]{1,63}(?<!-)\Z")


def _check_hostname(host: str, original: str) -> None:
    if len(host) > 253 or not host:
        raise ValueProblem(codes.BAD_HOST, f"bad host `{original}`", "a host name has at most 253 characters")
    for label in host.split("."):
        if not _LABEL.match(label):
            raise ValueProblem(codes.BAD_HOST, f"bad host `{original}`",
                               "host names are dot-separated labels of letters, digits and `-`")


def _parse_port(text: str, original: str) -> int:
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= 65535:
        raise ValueProblem(codes.BAD_PORT, f"bad port `{text}` in `{original}`", "a port is a number from 1 to 65535")
    return int(text)


def parse_host(text: str) -> tuple[HostKind, str, int | None]:
    """Parse a destination into ``(kind, value, port)``.

    Forms: ``*``, ``localhost``, ``host``, ``*.domain``, ``host:port``, IPv4, IPv4 CIDR,
    IPv6 (bare, ``[addr]``, ``[addr]:port``), IPv6 CIDR and ``host-loopback:PORT`` (a port
    on the host's own loopback, apart from the sandbox's ``localhost``; the port is required).
    """
    original = text
    port: int | None = None
    if "://" in text:
        raise _url_problem(text)
    if text.startswith("["):
        close = text.find("]")
        if close < 0:
            raise ValueProblem(codes.BAD_HOST, f"bad host `{original}`",
                               "close the IPv6 address with `]`, e.g. `[::1]:8080`")
        rest = text[close + 1:]
        if rest:
            if not rest.startswith(":"):
                raise ValueProblem(codes.BAD_HOST, f"bad host `{original}`", "write `[address]:port`")
            port = _parse_port(rest[1:], original)
        text = text[1:close]
        return _parse_ip_or_cidr(text, original, port, must=True)
    if text.count(":") >= 2:  # bare IPv6 or IPv6 CIDR: no port possible
        return _parse_ip_or_cidr(text, original, None, must=True)
    if ":" in text:
        text, port_text = text.rsplit(":", 1)
        port = _parse_port(port_text, original)
    if text == "*":
        return "any", "", port
    lowered = text.lower()
    if lowered == "localhost":
        return "localhost", "localhost", port
    if lowered == "host-loopback":
        if port is None:
            raise ValueProblem(codes.BAD_HOST, f"`{original}` needs a port: the host's loopback is granted one "
                               "port at a time",
                               "write `host-loopback:5432` for the host's 127.0.0.1:5432; the sandbox's own "
                               "loopback is `localhost`")
        return "host-loopback", "", port
    if re.fullmatch(r"[0-9./]+", text):
        return _parse_ip_or_cidr(text, original, port, must=True)
    if lowered.startswith("*."):
        _check_hostname(lowered[2:], original)
        return "domain", lowered[2:], port
    if "*" in lowered:
        raise ValueProblem(codes.BAD_HOST, f"bad host `{original}`",
                           "a wildcard may only lead a domain: `*.example.com`")
    _check_hostname(lowered.rstrip("."), original)
    return "host", lowered.rstrip("."), port


_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443, "ftp": 21, "ssh": 22, "git": 9418}


def _url_problem(text: str) -> ValueProblem:
    """The problem of a URL written where a host belongs, with the host to write instead."""
    scheme, _, rest = text.partition("://")
    authority = rest.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0].rpartition("@")[2]
    port = _DEFAULT_PORTS.get(scheme.lower())
    if authority and not authority.startswith("[") and ":" in authority:
        suggestion = authority
    elif authority:
        suggestion = f"{authority}:{port}" if port else authority
    else:
        suggestion = "pypi.org"
    problem = ValueProblem(codes.BAD_HOST, f"`{text}` is a URL: network rules take a host, not a URL",
                           f"write the host{' and port' if ':' in suggestion else ''}: `{suggestion}`")
    problem.suggestion = suggestion
    return problem


def _parse_ip_or_cidr(text: str, original: str, port: int | None, must: bool) -> tuple[HostKind, str, int | None]:
    try:
        if "/" in text:
            network = ipaddress.ip_network(text, strict=True)
            return "cidr", str(network), port
        address = ipaddress.ip_address(text)
    except ValueError as exc:
        detail = str(exc)
        if "has host bits set" in detail:
            raise ValueProblem(codes.BAD_CIDR, f"bad cidr `{original}`: host bits are set",
                               f"did you mean `{ipaddress.ip_network(text, strict=False)}`?") from None
        kind = "cidr" if "/" in text else "address"
        raise ValueProblem(codes.BAD_CIDR if kind == "cidr" else codes.BAD_HOST, f"bad {kind} `{original}`",
                           "e.g. `10.0.0.0/8`, `192.168.1.5`, `fd00::/8`") from None
    prefix = 32 if address.version == 4 else 128
    return "cidr", f"{address}/{prefix}", port


_ENV_NAME = re.compile(r"[A-Za-z_*?][A-Za-z0-9_*?]*\Z")


def check_env_name(text: str, allow_glob: bool) -> None:
    """An environment variable name (with ``*``/``?`` globs where allowed)."""
    if not _ENV_NAME.match(text) or (not allow_glob and re.search(r"[*?]", text)):
        what = "variable name or glob" if allow_glob else "variable name"
        raise ValueProblem(codes.BAD_VARIABLE_NAME, f"`{text}` is not a {what}", "names are letters, digits and `_`"
                           + (", with `*` and `?` as wildcards" if allow_glob else ""))
