"""Environment variables that change where any program's network traffic goes, or whether
it checks who it talks to.

They hold for every program that reads them, not only the ones with a model (``python3
app.py``, ``node app.js``, ``./run.sh``), so they are judged where they are set: as a command
prefix, through ``env``, or exported.

- proxy variables (``HTTPS_PROXY``, ``ALL_PROXY``, …): the process sends its connections to
  the proxy named, which is judged as a destination by the policy's network rules;
- ``NO_PROXY``/``no_proxy`` of ``*``: every connection bypasses the proxy;
- CA bundle variables (``REQUESTS_CA_BUNDLE``, ``SSL_CERT_FILE``, ``NODE_EXTRA_CA_CERTS``,
  ``CURL_CA_BUNDLE``, ``GIT_SSL_CAINFO``, …) naming a file where the agent can write: the
  certificates it trusts are the agent's (its TLS connections can be intercepted);
- switches that turn TLS checking off (``NODE_TLS_REJECT_UNAUTHORIZED=0``,
  ``GIT_SSL_NO_VERIFY``, ``PYTHONHTTPSVERIFY=0``, ``npm_config_strict_ssl=false``, …).
"""

from __future__ import annotations

import re

from stockade.analyzer.effects import UNKNOWN, Network, SpanT, Unknown, show

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from stockade.analyzer.walker import Walker

#: proxy variables (libcurl, wget, python, node agents, go, git, pip…): scheme → proxy URL
PROXY_VARS = frozenset({"http_proxy", "https_proxy", "all_proxy", "ftp_proxy", "HTTP_PROXY", "HTTPS_PROXY",
                        "ALL_PROXY", "FTP_PROXY", "socks_proxy", "SOCKS_PROXY", "npm_config_proxy",
                        "npm_config_https_proxy", "NPM_CONFIG_PROXY", "NPM_CONFIG_HTTPS_PROXY", "PIP_PROXY",
                        "YARN_HTTP_PROXY", "YARN_HTTPS_PROXY", "CARGO_HTTP_PROXY", "UV_HTTP_PROXY"})
#: variables listing hosts reached without the proxy
NO_PROXY_VARS = frozenset({"no_proxy", "NO_PROXY", "npm_config_noproxy", "NPM_CONFIG_NOPROXY"})
#: variables naming the certificate authorities (a file or directory) a program trusts
CA_VARS = frozenset({"REQUESTS_CA_BUNDLE", "SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS",
                     "CURL_CA_BUNDLE", "GIT_SSL_CAINFO", "GIT_SSL_CAPATH", "PIP_CERT", "AWS_CA_BUNDLE",
                     "HTTPLIB2_CA_CERTS", "npm_config_cafile", "NPM_CONFIG_CAFILE", "CARGO_HTTP_CAINFO",
                     "DENO_CERT", "BUNDLE_SSL_CA_CERT", "WEBSOCKET_CLIENT_CA_BUNDLE",
                     "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH", "NIX_SSL_CERT_FILE", "CONDA_SSL_VERIFY"})
#: variables that turn certificate checks off: name → the values that leave them on
TLS_OFF_VARS: dict[str, frozenset[str]] = {
    "NODE_TLS_REJECT_UNAUTHORIZED": frozenset({"1"}),
    "PYTHONHTTPSVERIFY": frozenset({"1"}),
    "GIT_SSL_NO_VERIFY": frozenset(),  # (git tests only that it is set)
    "npm_config_strict_ssl": frozenset({"true", "1"}),
    "NPM_CONFIG_STRICT_SSL": frozenset({"true", "1"}),
    "YARN_ENABLE_STRICT_SSL": frozenset({"true", "1"}),
    "YARN_STRICT_SSL": frozenset({"true", "1"}),
    "PIP_TRUSTED_HOST": frozenset({""}),
    "UV_INSECURE_HOST": frozenset({""}),
    "BUNDLE_SSL_VERIFY_MODE": frozenset({"1", "", "peer"}),
}
#: variables naming a server that tools download code or models from, or send requests to
ENDPOINT_VARS = frozenset({"HF_ENDPOINT", "HF_HUB_ENDPOINT", "OPENAI_BASE_URL", "OPENAI_API_BASE", "ANTHROPIC_BASE_URL",
                           "RUSTUP_DIST_SERVER", "RUSTUP_UPDATE_ROOT", "NVM_NODEJS_ORG_MIRROR",
                           "NODEJS_ORG_MIRROR", "ELECTRON_MIRROR", "PUPPETEER_DOWNLOAD_BASE_URL",
                           "PLAYWRIGHT_DOWNLOAD_HOST", "SASS_BINARY_SITE", "UV_PYTHON_INSTALL_MIRROR",
                           "HOMEBREW_BOTTLE_DOMAIN", "HOMEBREW_API_DOMAIN", "HOMEBREW_ARTIFACT_DOMAIN",
                           "YARN_NPM_REGISTRY_SERVER", "BUN_CONFIG_REGISTRY", "YARN_REGISTRY", "COMPOSER_MIRROR",
                           "CONTAINER_HOST", "VAULT_ADDR", "NOMAD_ADDR", "CONSUL_HTTP_ADDR",
                           "SDKMAN_CANDIDATES_API", "PYPI_URL", "TWINE_REPOSITORY_URL",
                           "POETRY_REPOSITORIES_URL", "CONDA_CHANNEL_ALIAS", "JULIA_PKG_SERVER",
                           "CYPRESS_DOWNLOAD_MIRROR", "CHROMEDRIVER_CDNURL", "GECKODRIVER_CDNURL"})
#: name endings of more such variables (judged when the value is a URL)
ENDPOINT_SUFFIXES = ("_BASE_URL", "_API_BASE", "_ENDPOINT", "_ENDPOINT_URL", "_MIRROR", "_REGISTRY", "_INDEX_URL",
                     "_DOWNLOAD_HOST", "_CDNURL", "_DIST_SERVER", "_REGISTRY_URL", "_REPOSITORY_URL")
#: every variable this module judges (the cheap first test of :func:`judge_net_var`)
NET_VARS = PROXY_VARS | NO_PROXY_VARS | CA_VARS | frozenset(TLS_OFF_VARS) | ENDPOINT_VARS
#: ``-Dhttps.proxyHost=H`` and ``-Dhttps.proxyPort=N`` in JVM options
_JAVA_PROXY = re.compile(r"-D(?:https?|ftp|socksProxy|socks)\.?(?:proxy)?Host=([^\s'\"]+)(?:.*?-D(?:https?|ftp|"
                         r"socksProxy|socks)\.?(?:proxy)?Port=(\d{1,5}))?", re.I)
#: programs that open no network connection themselves (a proxy variable set for them only
#: is not judged; one they run, or one exported, is)
OFFLINE = frozenset({"ls", "cat", "echo", "printf", "true", "false", ":", "test", "[", "pwd", "mkdir", "rmdir",
                     "rm", "cp", "mv", "ln", "touch", "chmod", "chown", "head", "tail", "wc", "sort", "uniq", "cut",
                     "tr", "grep", "egrep", "fgrep", "rg", "diff", "cmp", "stat", "file", "du", "df", "date", "id",
                     "whoami", "uname", "env-print", "printenv", "basename", "dirname", "realpath", "readlink",
                     "tee", "less", "more", "find", "tree", "jq", "yq", "sleep", "seq", "which", "type", "hash"})
#: CA locations that come with the system (read-only there)
_SYSTEM_CA_PREFIXES = ("/etc/ssl/", "/etc/pki/", "/usr/share/ca-certificates", "/usr/local/share/ca-certificates",
                       "/etc/ca-certificates", "/usr/lib/ssl/", "/opt/homebrew/etc/", "/usr/local/etc/openssl")


def java_proxies(walker: Walker, value: str, span: SpanT) -> None:
    """JVM options (``JAVA_TOOL_OPTIONS``, ``MAVEN_OPTS``, …) naming a proxy host: a destination."""
    for match in _JAVA_PROXY.finditer(value):
        host = match.group(1)
        if UNKNOWN in host:
            walker.effects.append(Unknown(f"JVM options name a proxy that is not known (`{show(value)}`)", span))
        else:
            walker.effects.append(Network(host, int(match.group(2)) if match.group(2) else 3128, span))


def judge_net_var(walker: Walker, name: str, value: str, span: SpanT) -> None:
    """Judge one network-related variable being set for the programs that follow."""
    from stockade.analyzer.models.net import split_url
    from stockade.analyzer.models.programs import agent_writable

    program = walker.env_program
    if program is not None and program.rpartition("/")[2] in OFFLINE:
        return
    text = value.strip()
    if name in ENDPOINT_VARS or (name not in PROXY_VARS and name.endswith(ENDPOINT_SUFFIXES)):
        if text and (name in ENDPOINT_VARS or "://" in text):
            host, port = split_url(text if "://" in text else "https://" + text, 443)
            if not host or UNKNOWN in host:
                walker.effects.append(Unknown(f"`{name}` names a server that is not known before it runs "
                                              f"(`{show(value)}`)", span))
            else:
                walker.effects.append(Network(host, port, span))
    elif name in PROXY_VARS:
        if text == "":
            return
        proxy, port = split_url(text, 1080 if text.lower().startswith("socks") else 3128)
        if not proxy or UNKNOWN in proxy:
            walker.effects.append(Unknown(f"`{name}` sends every connection of the programs it is set for through a "
                                          f"proxy that is not known before it runs (`{show(value)}`)", span))
        else:
            walker.effects.append(Network(proxy, port, span))
    elif name in NO_PROXY_VARS:
        if UNKNOWN in text or any(part.strip() == "*" for part in text.split(",")):
            walker.effects.append(Unknown(f"`{name}={show(value)}` makes programs connect to every host directly, "
                                          "past the proxy the network rules are enforced by", span))
    elif name in CA_VARS:
        if text == "" or (name == "CONDA_SSL_VERIFY" and text.lower() in ("true", "1")):
            return
        if name == "CONDA_SSL_VERIFY" and text.lower() in ("false", "0", "no"):
            walker.effects.append(Unknown(f"`{name}={show(value)}` turns off TLS certificate checks: the hosts "
                                          "programs talk to cannot be told", span))
            return
        path = walker.resolve(text)
        if UNKNOWN in path or (agent_writable(walker, path) and not path.startswith(_SYSTEM_CA_PREFIXES)):
            walker.effects.append(Unknown(f"`{name}` makes programs trust the certificates in `{show(path)}`, which "
                                          "the agent can write: their TLS connections can be intercepted", span))
    else:
        safe = TLS_OFF_VARS.get(name)
        if safe is not None and text.lower() not in safe:
            walker.effects.append(Unknown(f"`{name}={show(value)}` turns off TLS certificate checks: the hosts "
                                          "programs talk to cannot be told", span))
