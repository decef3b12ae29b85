"""The ports the network broker serves inside a sandbox and the variables that point the
sandbox's clients at them: what a run needs from the broker before bubblewrap starts (the
rest loads while bubblewrap sets the sandbox up)."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Iterable

#: The ports the broker listens on inside the sandbox (its namespace is its own: any port
#: is free there); moved up when a ``host-loopback`` grant takes one.
HTTP_PROXY_PORT = 3128
SOCKS_PORT = 1080


def proxy_environment(http_port: int = HTTP_PROXY_PORT, socks_port: int = SOCKS_PORT) -> dict[str, str]:
    """The variables that point clients at the broker inside the sandbox: the standard
    ones (curl, Python, Go, git's libcurl) and the spellings pip, npm, yarn and cargo read."""
    http = f"http://127.0.0.1:{http_port}"
    socks = f"socks5h://127.0.0.1:{socks_port}"
    no_proxy = "localhost,127.0.0.1,::1"
    return {
        "HTTP_PROXY": http, "http_proxy": http, "HTTPS_PROXY": http, "https_proxy": http,
        "ALL_PROXY": socks, "all_proxy": socks, "NO_PROXY": no_proxy, "no_proxy": no_proxy,
        "PIP_PROXY": http, "npm_config_proxy": http, "npm_config_https_proxy": http,
        "npm_config_noproxy": no_proxy, "YARN_HTTP_PROXY": http, "YARN_HTTPS_PROXY": http,
        "CARGO_HTTP_PROXY": http,
    }


def proxy_ports(loopback_ports: Iterable[int] = ()) -> tuple[int, int]:
    """The HTTP proxy's port and the SOCKS port: the defaults, each moved up past the
    ``host-loopback`` grants' ports (and the other)."""
    taken = set(loopback_ports)
    http = _free_port(HTTP_PROXY_PORT, taken)
    taken.add(http)
    return http, _free_port(SOCKS_PORT, taken)


def _free_port(wanted: int, taken: set[int]) -> int:
    port = wanted
    while port in taken:
        port += 1
    return port
