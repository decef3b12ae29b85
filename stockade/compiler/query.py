"""The decision API on the IR: path access, command verdicts, network, environment.

Every answer names the rule that decided.  Lookups go through indexes built once per IR,
so a decision costs the same at 10 rules as at 10,000:

* **paths** — literal rules in a dict keyed by path; a query walks the ancestors of the
  path (depth-many lookups).  Glob rules are bucketed by their last component (literal
  name, or literal prefix before the first wildcard) and only candidates are matched.
  A rule applies to the path it matches and everything below it; its specificity is the
  depth of the path it matched; the deepest wins, ties go to the stricter
  (deny > readonly > write > read).  A path no rule covers has no access.
* **commands** — rules bucketed by program name; the strictest matching rule wins.  A
  command whose program no rule names is answered from the buckets alone: the argv is
  parsed, and :mod:`stockade.compiler.argv` imported, only for candidate rules.
* **network** — exact hosts in a dict, domain wildcards by suffix walk (``*.d`` matches
  subdomains only), CIDRs by prefix length (``localhost`` is 127.0.0.0/8 and ::1/128);
  the most specific rule wins, a port-specific rule beats a port-less one of the same
  host, ties deny, otherwise the default.  IP literals are judged as addresses in every
  spelling a resolver accepts (``127.1``, ``0x7f000001``, ``::ffff:127.0.0.1``; ``0.0.0.0``
  is loopback); private, link-local and reserved addresses are reached only by a rule
  naming their range (never by ``default allow`` or ``allow *``), and the host's loopback
  (``host-loopback``) only by ``allow host-loopback:PORT``.
"""

from __future__ import annotations

import os
import re

from stockade.compiler.ir import FS_KIND_RANK, VERDICT_RANK, _Node, _node

TYPE_CHECKING = False  # `typing` is imported only by type checkers (it costs ~7 ms of a cold start)
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Hashable, Mapping, Sequence
    from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network
    from typing import TypeVar

    _K = TypeVar("_K", bound=Hashable)
    _V = TypeVar("_V")

    from stockade.compiler.argv import CompiledPattern
    from stockade.compiler.ir import CommandRule, FsRule, NetRule, PatternToken, PolicyIR

_WILDCARD = re.compile(r"[*?\[]")
_new_object = object.__new__
_set_field = object.__setattr__  # (the IR's frozen classes refuse their own __setattr__)
#: what os.path.normpath changes in an absolute path that does not end in `/`
_NOT_NORMAL = re.compile(r"//|/\.\.?(?:/|\Z)")


@_node  # a frozen dataclass with the IR's shared ==, hash and repr (cheaper to define)
class PathDecision(_Node):
    """Access to a path: ``none``, ``read`` or ``write``, and the rule that decided (None:
    no rule covers the path, so no access)."""

    path: str
    access: str
    rule: FsRule | None

    @property
    def can_read(self) -> bool:
        return self.access != "none"

    @property
    def can_write(self) -> bool:
        return self.access == "write"


@_node
class CommandDecision(_Node):
    """The verdict of the command rules (None when no rule matches) and every match."""

    verdict: str | None
    rule: CommandRule | None
    matches: tuple[CommandRule, ...] = ()


#: The decision when no command rule matches (immutable: one object serves every such command).
_NO_MATCH = CommandDecision(None, None)


@_node
class NetworkDecision(_Node):
    """Whether a destination may be contacted; ``rule`` None means the default decided."""

    host: str
    port: int | None
    allowed: bool
    rule: NetRule | None
    #: ``rule`` (a rule decided), ``default``, or why no rule could reach the destination
    reason: str = "default"


class LinearGlob:
    """A path glob matched by simulating its automaton (time linear in the path, whatever the
    glob): used instead of a regex for globs with several ``*``, whose backtracking regex
    would take exponential time (``/tmp/*a*a*a*a*a*a*b`` on a long name).  Same meaning as
    :func:`glob_to_regex`; ``match``/``fullmatch`` match the whole of ``string[pos:endpos]``."""

    __slots__ = ("_accept", "_eps", "_trans", "pattern")

    def __init__(self, pattern: str):
        self.pattern = pattern
        #: per state: (kind, char, target) with kind `c` one char, `n` any but `/`, `a` any
        self._trans: list[list[tuple[str, str, int]]] = []
        self._eps: list[list[int]] = []
        current = self._state()
        i = 0
        while i < len(pattern):
            if pattern.startswith("/**/", i):  # `/`, or `/` + anything + `/`
                after_slash, inside, end = self._state(), self._state(), self._state()
                self._trans[current].append(("c", "/", after_slash))
                self._eps[after_slash] += [end, inside]
                self._trans[inside] += [("a", "", inside), ("c", "/", end)]
                current = end
                i += 4
                continue
            if pattern.startswith("**", i):
                self._trans[current].append(("a", "", current))
                i += 2
                continue
            char = pattern[i]
            if char == "*":
                self._trans[current].append(("n", "", current))
            else:
                following = self._state()
                self._trans[current].append(("n", "", following) if char == "?" else ("c", char, following))
                current = following
            i += 1
        self._accept = current

    def _state(self) -> int:
        self._trans.append([])
        self._eps.append([])
        return len(self._trans) - 1

    def _closure(self, states: set[int]) -> set[int]:
        stack = list(states)
        while stack:
            for target in self._eps[stack.pop()]:
                if target not in states:
                    states.add(target)
                    stack.append(target)
        return states

    def match(self, string: str, pos: int = 0, endpos: int | None = None) -> bool | None:
        """True when the glob matches all of ``string[pos:endpos]``, else None."""
        states = self._closure({0})
        for char in string[pos:endpos]:
            following: set[int] = set()
            for state in states:
                for kind, expected, target in self._trans[state]:
                    if kind == "a" or (kind == "n" and char != "/") or (kind == "c" and char == expected):
                        following.add(target)
            if not following:
                return None
            states = self._closure(following)
        return True if self._accept in states else None

    fullmatch = match


#: A compiled glob: a regex, or a :class:`LinearGlob` where a regex could backtrack.
GlobMatcher = re.Pattern[str] | LinearGlob
_STAR_RUNS = re.compile(r"\*+")


def _needs_linear(pattern: str) -> bool:
    """Whether a glob has more than two variable-length wildcards (its regex could backtrack)."""
    return len(_STAR_RUNS.findall(pattern)) > 2


def glob_to_regex(pattern: str) -> GlobMatcher:
    """Compile an absolute path glob: ``*`` and ``?`` stay within a component, ``**``
    spans components (``/**/`` also matches a single ``/``).  A regex (``match`` with
    ``pos``/``endpos``), or a :class:`LinearGlob` for globs of more than two wildcards."""
    if _needs_linear(pattern):
        return LinearGlob(pattern)
    out = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if pattern.startswith("/**/", i):
            out.append("(?:/.*)?/")
            i += 4
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        else:
            out.append(re.escape(char))
        i += 1
    return re.compile("".join(out) + r"\Z", re.DOTALL)


#: Steps of a glob's component program (:func:`glob_program`): any number of components
#: (``/**/``), or exactly one component of any name.
_STAR = "**"
_ANY = "*"


def glob_program(pattern: str) -> tuple[GlobMatcher | str, ...] | None:
    """An absolute glob as a program over path components, which :func:`program_matches`
    runs over a path once for all its ancestors: a component regex (``*`` and ``?`` within
    it), :data:`_STAR` for a ``**`` between components (zero or more of them, ``/**/``) and
    :data:`_ANY`, :data:`_STAR` for a trailing ``**`` (one or more).  None for globs whose
    ``**`` is inside a component or next to another ``**`` (matched by their regex)."""
    if not pattern.startswith("/"):
        return None
    comps = pattern[1:].split("/")
    program: list[GlobMatcher | str] = []
    for index, comp in enumerate(comps):
        if comp == "**":
            if index > 0 and comps[index - 1] == "**":
                return None
            if index == len(comps) - 1:
                program += [_ANY, _STAR]
            else:
                program.append(_STAR)
        elif "**" in comp or not comp:
            return None
        elif _needs_linear(comp):
            program.append(LinearGlob(comp))
        else:
            program.append(re.compile("".join("[^/]*" if c == "*" else "[^/]" if c == "?" else re.escape(c)
                                              for c in comp), re.DOTALL))
    return tuple(program)


def program_matches(program: tuple[GlobMatcher | str, ...], parts: Sequence[str]) -> list[bool]:
    """For every depth ``d`` of the path ``parts`` (its components), whether the glob
    ``program`` matches the ancestor of ``d`` components: one pass over the components, the
    set of program positions reached so far (``[d]``; index 0 is the root)."""
    size = len(program)

    def closure(states: set[int]) -> set[int]:
        for index in sorted(states):
            while index < size and program[index] == _STAR:
                index += 1
                states.add(index)
        return states

    states = closure({0})
    out = [False] * (len(parts) + 1)
    for depth, comp in enumerate(parts, 1):
        following: set[int] = set()
        for index in states:
            if index == size:
                continue
            step = program[index]
            if step == _STAR:
                following.add(index)
            elif step == _ANY or step.fullmatch(comp) is not None:  # type: ignore[union-attr]
                following.add(index + 1)
        if not following:
            break
        states = closure(following)
        out[depth] = size in states
    return out


def split_path(path: str) -> list[str]:
    """The components of an absolute normalised path (``/`` → ``[]``)."""
    return [part for part in path.split("/") if part]


#: Paths deeper than this many components match globs by their component programs.
_DEEP = 48


class _PathIndex:
    def __init__(self, rules: Sequence[FsRule]):
        self.literal: dict[str, FsRule] = {}
        self.glob_by_name: dict[str, list[tuple[FsRule, GlobMatcher]]] = {}
        self.glob_by_prefix: dict[str, list[tuple[FsRule, GlobMatcher]]] = {}
        self.prefix_lengths: set[int] = set()
        #: glob rule id → its component program (None: matched by its regex), see decide
        self.programs: dict[int, tuple[GlobMatcher | str, ...] | None] = {}
        for rule in rules:
            if rule.is_glob:
                compiled = (rule, glob_to_regex(rule.pattern))
                self.programs[id(rule)] = glob_program(rule.pattern)
                last = rule.pattern.rsplit("/", 1)[-1]
                match = _WILDCARD.search(last)
                if match is None:
                    self.glob_by_name.setdefault(last, []).append(compiled)
                else:
                    prefix = last[: match.start()]
                    self.glob_by_prefix.setdefault(prefix, []).append(compiled)
                    self.prefix_lengths.add(len(prefix))
            else:
                current = self.literal.get(rule.pattern)
                if current is None or FS_KIND_RANK[rule.kind] > FS_KIND_RANK[current.kind]:
                    self.literal[rule.pattern] = rule
        #: the lengths of the literal patterns: an ancestor of another length has no literal rule
        self.literal_lengths = frozenset(len(pattern) for pattern in self.literal)
        self._by_name: dict[str, Sequence[tuple[FsRule, GlobMatcher]]] = {}

    def _candidates(self, name: str) -> Sequence[tuple[FsRule, GlobMatcher]]:
        """The glob rules that may match an ancestor whose last component is ``name``
        (memoised by name: a deep path repeats names)."""
        candidates = self._by_name.get(name)
        if candidates is not None:
            return candidates
        candidates = self.glob_by_name.get(name, ())
        for length in self.prefix_lengths:
            if length <= len(name):
                more = self.glob_by_prefix.get(name[:length])
                if more:
                    candidates = [*candidates, *more]
        if len(self._by_name) >= MEMO_SIZE:
            self._by_name.clear()
        self._by_name[name] = candidates
        return candidates

    def _best_at(self, path: str, end: int, name: str, deep: dict[int, list[bool]] | None = None,
                 depth: int = 0) -> FsRule | None:
        """The strictest rule for the ancestor ``path[:end]`` (whose last component is
        ``name``), matched in place: the ancestor's text is made only for a literal rule of
        its length, and globs match ``path`` up to ``end`` — or, for a deep path, are read
        from ``deep`` (glob rule id → :func:`program_matches` of the path; ``depth``: the
        ancestor's)."""
        best = self.literal.get(path[:end]) if end in self.literal_lengths else None
        if not self.glob_by_name and not self.glob_by_prefix:
            return best
        for rule, regex in self._candidates(name):
            if best is not None and FS_KIND_RANK[rule.kind] <= FS_KIND_RANK[best.kind]:
                continue
            matches = deep.get(id(rule)) if deep is not None else None
            if matches[depth] if matches is not None else regex.match(path, 0, end):
                best = rule
        return best

    def decide(self, path: str) -> FsRule | None:
        """The rule that decides ``path`` (an absolute path): the deepest ancestor with a rule.

        Linear in the path's length but for the globs' own matching: the ancestors are
        positions in one normalised text (no ancestor string is built but for a literal
        rule of its length), and each is looked up once."""
        parts = split_path(path)
        if not parts:
            return self.literal.get("/")
        text = "/" + "/".join(parts)
        end = len(text)
        deep: dict[int, list[bool]] | None = None
        if len(parts) > _DEEP and (self.glob_by_name or self.glob_by_prefix):
            # a glob's regex match of each ancestor is quadratic (``(?:/.*)?/…`` scans every
            # one to its end): run each candidate's component program once over the path
            deep = {}
            for name in set(parts):
                for candidate, _ in self._candidates(name):
                    program = self.programs.get(id(candidate))
                    if program is not None and id(candidate) not in deep:
                        deep[id(candidate)] = program_matches(program, parts)
        # deepest ancestor first: the first one with a rule decides
        lengths = self.literal_lengths
        globs = self.glob_by_name or self.glob_by_prefix
        for depth in range(len(parts), 0, -1):
            name = parts[depth - 1]
            if globs or end in lengths:
                rule = self._best_at(text, end, name, deep, depth)
                if rule is not None:
                    return rule
            end -= len(name) + 1
        return self.literal.get("/")


def _program_alternatives(pattern: Sequence[PatternToken]) -> tuple[str, ...]:
    """The program words a command pattern names: its first positional token's alternatives
    (``*`` when it has none), as :attr:`~stockade.compiler.argv.CompiledPattern.program_alternatives`."""
    for token in pattern:
        if not token.is_flag:
            return token.alternatives
    return ("*",)


def _program_name(word: str) -> str:
    """:func:`stockade.compiler.argv.program_name`: the basename of a path (``/bin/rm`` → ``rm``)."""
    return word.rpartition("/")[2] or word  # (os.path.basename, without its two calls)


class _CommandIndex:
    def __init__(self, rules: Sequence[CommandRule]):
        self.by_program: dict[str, list[CommandRule]] = {}
        self.wild: list[CommandRule] = []
        #: id(rule) → its compiled pattern, compiled when a command first makes it a candidate
        self._compiled: dict[int, CompiledPattern] = {}
        for rule in rules:
            programs = _program_alternatives(rule.pattern)
            if any(_WILDCARD.search(p) for p in programs):
                self.wild.append(rule)
            else:
                for program in programs:
                    self.by_program.setdefault(_program_name(program), []).append(rule)

    def decide(self, argv: Sequence[str]) -> CommandDecision:
        if not argv:
            return _NO_MATCH
        candidates = self.by_program.get(_program_name(argv[0]), [])
        if self.wild:
            candidates = [*candidates, *self.wild]
        if not candidates:  # no rule names the program: nothing can match
            return _NO_MATCH
        from stockade.compiler.argv import compile_pattern, parse_argv, pattern_matches

        parsed = parse_argv(argv)
        compiled = self._compiled
        matches = []
        for rule in candidates:
            pattern = compiled.get(id(rule))
            if pattern is None:
                pattern = compiled[id(rule)] = compile_pattern(rule.pattern)
            if pattern_matches(pattern, parsed):
                matches.append(rule)
        if not matches:
            return _NO_MATCH
        best = max(matches, key=lambda r: VERDICT_RANK[r.verdict])
        return CommandDecision(best.verdict, best, tuple(matches))


#: Host text that may be an IP address (``ipaddress`` is imported only for such hosts): IPv6
#: (a colon), or one to four dot-separated decimal, octal (``0177``) or hex (``0x7f``) parts.
_MAYBE_IP = re.compile(r"(?:0[xX][0-9a-fA-F]*|[0-9]+)(?:\.(?:0[xX][0-9a-fA-F]*|[0-9]+)){0,3}\Z|.*:")

#: The name a sandboxed command uses for a port of the *host's* loopback that the policy grants
#: with ``allow host-loopback:PORT`` (the sandbox's own loopback is ``localhost``).  Only
#: ``host-loopback`` rules decide it: neither ``default allow`` nor ``allow *`` reaches it.
HOST_LOOPBACK_NAME = "host-loopback"

#: Why a destination was refused when no rule decided it.
REASON_DEFAULT = "default"
REASON_SPECIAL_ADDRESS = "a private, link-local or reserved address is reached only by a rule naming it"
REASON_HOST_LOOPBACK = "the host's loopback is reached only by an `allow host-loopback:PORT` rule"


def _inet_aton(text: str) -> int | None:
    """The 32-bit value of an IPv4 literal in the forms a C resolver accepts (``inet_aton``:
    ``127.1``, ``0x7f.0.0.1``, ``0177.0.0.1``, ``2130706433``), or None."""
    parts = text.split(".")
    if not 1 <= len(parts) <= 4:
        return None
    numbers: list[int] = []
    for part in parts:
        if part[:2] in ("0x", "0X"):
            if len(part) == 2:
                return None
            numbers.append(int(part[2:], 16))
        elif len(part) > 1 and part[0] == "0":
            if not all(c in "01234567" for c in part):
                return None
            numbers.append(int(part, 8))
        elif part.isdigit():
            numbers.append(int(part))
        else:
            return None
    *head, last = numbers
    if any(n > 255 for n in head) or last >= 1 << (8 * (4 - len(head))):
        return None
    value = 0
    for n in head:
        value = value << 8 | n
    return value << (8 * (4 - len(head))) | last


def ip_literal(host: str) -> IPv4Address | IPv6Address | None:
    """``host`` as the IP address a client would connect to, or None for a name.

    Accepts what resolvers accept as a literal: dotted quads and the ``inet_aton`` shorthands
    (``127.1``, ``0x7f000001``, octal parts), IPv6 with or without brackets or a zone
    (``fe80::1%eth0``).  An IPv4-mapped IPv6 address (``::ffff:10.0.0.1``) is its IPv4 address.
    """
    text = host.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    if not _MAYBE_IP.match(text):
        return None
    import ipaddress

    if ":" not in text:
        value = _inet_aton(text)
        return None if value is None else ipaddress.IPv4Address(value)
    try:
        address = ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _ip_address(host: str) -> IPv4Address | IPv6Address | None:
    """``host`` as an IP address, or None for a name (see :func:`ip_literal`)."""
    return ip_literal(host)


#: The ranges that are nobody's public address, with their kind — one table for the
#: analyzer and the network broker.  A name resolving into one of them, or an address
#: literal in one, needs a rule naming that address or range (never ``default allow`` or
#: ``allow *``); loopback and the unspecified address are the ``localhost`` rules' to
#: decide here (the broker reaches the host's loopback only by ``host-loopback`` rules).
#: Documentation and benchmarking ranges are ordinary addresses.
SPECIAL_RANGES: tuple[tuple[str, str], ...] = (
    ("0.0.0.0/8", "unspecified"), ("10.0.0.0/8", "private"), ("100.64.0.0/10", "shared"),
    ("127.0.0.0/8", "loopback"), ("169.254.0.0/16", "link-local"), ("172.16.0.0/12", "private"),
    ("192.0.0.0/24", "private"), ("192.168.0.0/16", "private"), ("224.0.0.0/4", "multicast"),
    ("240.0.0.0/4", "reserved"),
    ("::/128", "unspecified"), ("::1/128", "loopback"), ("fc00::/7", "private"), ("fe80::/10", "link-local"),
    ("fec0::/10", "link-local"), ("ff00::/8", "multicast"),
)
#: Cloud metadata endpoints (AWS, GCP, Azure, ...: 169.254.169.254; AWS IPv6: fd00:ec2::254;
#: ECS task metadata; Alibaba), some outside the ranges above.
METADATA_ADDRESSES = frozenset({"169.254.169.254", "fd00:ec2::254", "169.254.170.2", "100.100.100.200"})
_SPECIAL_NETWORKS: list[tuple[IPv4Network | IPv6Network, str]] = []
#: NAT64 prefixes (well-known and local use): judged by the IPv4 address in their last 32 bits.
_NAT64 = ("64:ff9b::/96", "64:ff9b:1::/48")
#: IPv6 ranges that carry an IPv4 address without being its public IPv6 form, or are no one's:
#: IPv4-compatible (``::a.b.c.d``, deprecated), SIIT ``::ffff:0:a.b.c.d``, discard-only.
_V6_CARRIERS = ("::/96", "::ffff:0:0:0/96", "100::/64")
_NAT64_NETWORKS: list[IPv4Network | IPv6Network] = []


def special_range(address: IPv4Address | IPv6Address) -> str | None:
    """What kind of non-public address ``address`` is (``loopback``, ``metadata``,
    ``private``, ``link-local``, ``shared`` (CGNAT), ``unspecified``, ``multicast``,
    ``reserved``), or None for any other.  An IPv6 address that carries an IPv4 one
    (IPv4-mapped ``::ffff:a.b.c.d``, NAT64 ``64:ff9b::/96``, 6to4 ``2002::/16``) is judged
    by the IPv4 address too."""
    import ipaddress

    if not _SPECIAL_NETWORKS:
        _SPECIAL_NETWORKS.extend((ipaddress.ip_network(net), kind) for net, kind in SPECIAL_RANGES)
        _NAT64_NETWORKS.extend(ipaddress.ip_network(net) for net in _NAT64)
        _SPECIAL_NETWORKS.extend((ipaddress.ip_network(net), "reserved") for net in _V6_CARRIERS)
    if str(address) in METADATA_ADDRESSES:
        return "metadata"
    if address.version == 6:
        embedded = getattr(address, "ipv4_mapped", None) or getattr(address, "sixtofour", None)
        if embedded is None and any(address in net for net in _NAT64_NETWORKS):
            embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        carried = [embedded] if embedded is not None else list(getattr(address, "teredo", None) or ())
        for each in carried:
            kind = special_range(each)
            if kind is not None:
                return kind
    for network, kind in _SPECIAL_NETWORKS:
        if address.version == network.version and address in network:
            return kind
    return None


def is_special_address(address: IPv4Address | IPv6Address) -> bool:
    """Whether an address is private, link-local (cloud metadata), shared, multicast or
    reserved — reached only by a rule naming it (:func:`special_range`; loopback and the
    unspecified address are not: the ``localhost`` rules decide those).  An IPv6 address
    carrying a loopback IPv4 one is special: ``localhost`` means the sandbox's ``127.0.0.1``
    and ``::1``, not a disguise of them."""
    kind = special_range(address)
    if kind is None:
        return False
    if kind in ("loopback", "unspecified"):
        return address.version == 6 and str(address) not in ("::1", "::")
    return True


def address_network(address: IPv4Address | IPv6Address, prefixlen: int) -> IPv4Network | IPv6Network:
    """The network of ``prefixlen`` bits that holds ``address``."""
    import ipaddress

    return ipaddress.ip_network(f"{address}/{prefixlen}", strict=False)


class _NetworkIndex:
    def __init__(self, ir: PolicyIR):
        self.default_allow = ir.network.default == "allow"
        self.exact: dict[str, list[NetRule]] = {}
        self.domains: dict[str, list[NetRule]] = {}
        self.cidrs: dict[int, dict[object, list[NetRule]]] = {}
        self.any: list[NetRule] = []
        self.localhost: list[NetRule] = []
        self.host_loopback: list[NetRule] = []
        for rule in ir.network.rules:
            host = rule.host
            kind: str = host.kind
            if kind == "host":
                self.exact.setdefault(host.value.lower(), []).append(rule)
            elif kind == "domain":
                self.domains.setdefault(host.value.lower(), []).append(rule)
            elif kind == "cidr":
                import ipaddress

                network = ipaddress.ip_network(host.value, strict=False)
                self.cidrs.setdefault(network.prefixlen + (0 if network.version == 4 else 1000), {}).setdefault(
                    network.network_address, []).append(rule)
            elif kind == "localhost":
                self.localhost.append(rule)
            elif kind == "host-loopback":
                self.host_loopback.append(rule)
            elif kind == "any":
                self.any.append(rule)
            # a kind this index does not know decides nothing (never a wildcard by accident)
        #: the most labels of a domain rule's name: only a host's suffixes of at most that many
        #: labels can match one (a name of 60,000 labels is not joined 60,000 times)
        self.domain_labels = max((name.count(".") + 1 for name in self.domains), default=0)

    @staticmethod
    def _port_ok(rule: NetRule, port: int | None) -> bool:
        # a port-specific rule matches only that port; an unknown port matches only
        # port-less rules for allows, but any rule for denies (safe side)
        if rule.host.port is None:
            return True
        if port is None:
            return rule.action == "deny"
        return rule.host.port == port

    def decide(self, host: str, port: int | None) -> NetworkDecision:
        host_l = host.lower().rstrip(".")
        if host_l.startswith("[") and host_l.endswith("]"):
            host_l = host_l[1:-1]
        scored: list[tuple[tuple[int, int, int], NetRule]] = []
        if host_l == "host-loopback":
            # the host's loopback (``host-loopback:PORT``): only its own rules reach it, never
            # `*` or `default allow` (a `deny *` is named as the decider when no rule grants it)
            matching = [r for r in self.host_loopback if self._port_ok(r, port)]
            if not matching:
                return NetworkDecision(host, port, False, next(
                    (r for r in self.any if r.action == "deny" and self._port_ok(r, port)), None))
            deny = next((r for r in matching if r.action == "deny"), None)
            return NetworkDecision(host, port, deny is None, deny or matching[0])

        def consider(rules: Sequence[NetRule], rank: int, detail: int) -> None:
            for rule in rules:
                if self._port_ok(rule, port):
                    scored.append(((rank, detail, 1 if rule.host.port is not None else 0), rule))

        fallback_allow, reason = self.default_allow, REASON_DEFAULT
        address = _ip_address(host_l)
        if address is not None:
            if address.is_unspecified:  # connecting to 0.0.0.0 or :: reaches the loopback
                import ipaddress

                address = ipaddress.ip_address("127.0.0.1" if address.version == 4 else "::1")
            for key, buckets in self.cidrs.items():
                prefixlen = key % 1000
                if (key >= 1000) != (address.version == 6):
                    continue
                net = address_network(address, prefixlen)
                consider(buckets.get(net.network_address, ()), 3, prefixlen)
            if address.is_loopback:  # `localhost` is 127.0.0.0/8 and ::1/128
                consider(self.localhost, 3, 8 if address.version == 4 else 128)
            if is_special_address(address):
                fallback_allow, reason = False, REASON_SPECIAL_ADDRESS
            else:
                consider(self.any, 0, 0)
        elif host_l == HOST_LOOPBACK_NAME:
            consider(self.host_loopback, 3, 300)
            consider(self.exact.get(host_l, ()), 3, 300)
            fallback_allow, reason = False, REASON_HOST_LOOPBACK
        else:
            consider(self.exact.get(host_l, ()), 3, 300)
            if host_l == "localhost" or host_l.endswith(".localhost"):
                consider(self.localhost, 3, 300)
            labels = host_l.split(".")
            for i in range(max(1, len(labels) - self.domain_labels), len(labels)):
                suffix = ".".join(labels[i:])
                consider(self.domains.get(suffix, ()), 2, len(labels) - i)
            consider(self.any, 0, 0)
        if not scored:
            return NetworkDecision(host, port, fallback_allow, None, reason)
        best_score = max(score for score, _ in scored)
        best = [rule for score, rule in scored if score == best_score]
        deny = next((rule for rule in best if rule.action == "deny"), None)
        rule = deny or best[0]
        return NetworkDecision(host, port, rule.action == "allow", rule, "rule")


#: Decisions are pure functions of an immutable IR: each index remembers this many answers.
MEMO_SIZE = 4096


def _remember(memo: dict[_K, _V], key: _K, value: _V) -> _V:
    """Store an answer in a bounded memo: cleared when full (cheap, and decisions are quick to
    recompute)."""
    if len(memo) >= MEMO_SIZE:
        memo.clear()
    memo[key] = value
    return value


class PolicyIndex:
    """Indexes over one :class:`~stockade.compiler.ir.PolicyIR`, answering its decisions."""

    def __init__(self, ir: PolicyIR):
        self.ir = ir
        self.paths = _PathIndex(ir.filesystem)
        self.commands = _CommandIndex(ir.commands)
        self.network = _NetworkIndex(ir)
        self._path_memo: dict[tuple[str, str | None], PathDecision] = {}
        self._command_memo: dict[tuple[str, ...], CommandDecision] = {}
        self._network_memo: dict[tuple[str, int | None], NetworkDecision] = {}
        #: Answers already given, for hot callers to read before calling (never to write):
        #: ``(path, cwd)`` → :meth:`path_access`, ``tuple(argv)`` → :meth:`command_verdict`.
        self.known_paths = self._path_memo
        self.known_commands = self._command_memo

    def resolve(self, path: str, cwd: str | None = None) -> str:
        """Lexically resolve ``path`` against the context: ``~``, ``$HOME``, ``$WORKSPACE``,
        ``$TMPDIR`` and relative paths (against ``cwd`` or the workspace)."""
        if path[:1] == "/" and path[-1:] != "/" and _NOT_NORMAL.search(path) is None:
            return path  # (what the analyzer asks about: absolute and normal already)
        ctx = self.ir.context
        if path == "~" or path.startswith("~/"):
            path = ctx.home + path[1:]
        for name, value in (("$HOME", ctx.home), ("$WORKSPACE", ctx.workspace), ("$TMPDIR", ctx.tmpdir)):
            if path == name or path.startswith(name + "/"):
                path = value + path[len(name):]
        if not path.startswith("/"):
            path = os.path.join(cwd or ctx.workspace, path)
        return os.path.normpath(path).replace("//", "/")

    def path_access(self, path: str, cwd: str | None = None) -> PathDecision:
        key = (path, cwd)
        found = self._path_memo.get(key)
        if found is not None:
            return found
        resolved = self.resolve(path, cwd)
        rule = self.paths.decide(resolved)
        # PathDecision(resolved, access, rule) without type.__call__ and the IR's generic __init__
        decision = _new_object(PathDecision)
        _set_field(decision, "path", resolved)
        _set_field(decision, "access", rule.access if rule else "none")
        _set_field(decision, "rule", rule)
        return _remember(self._path_memo, key, decision)

    def command_verdict(self, argv: Sequence[str]) -> CommandDecision:
        key = tuple(argv)
        found = self._command_memo.get(key)
        if found is not None:
            return found
        return _remember(self._command_memo, key, self.commands.decide(argv))

    def network_access(self, host: str, port: int | None = None) -> NetworkDecision:
        key = (host, port)
        found = self._network_memo.get(key)
        if found is not None:
            return found
        return _remember(self._network_memo, key, self.network.decide(host, port))

    def filter_environment(self, environ: Mapping[str, str]) -> dict[str, str]:
        from stockade.compiler.environment import filter_environment

        return filter_environment(((r.action, r.name, r.value) for r in self.ir.environment), environ)
