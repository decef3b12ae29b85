"""Variables that hold a runtime's command-line options (``NODE_OPTIONS``, ``JAVA_TOOL_OPTIONS``,
``_JAVA_OPTIONS``, ``JDK_JAVA_OPTIONS``, ``MAVEN_OPTS``, ``GRADLE_OPTS``), judged by the options
they hold: tuning options (heap size, warnings, encodings) load no code; anything else — an
agent, a preloaded module, a loader, a command run on error, an option this table does not
know — is code that cannot be seen into.
"""

from __future__ import annotations

import re

from stockade.analyzer.regex import LazyPattern

#: node options that only tune the runtime (with ``=value`` or a following value where noted)
_NODE_TUNING = frozenset({
    "--max-old-space-size", "--max-semi-space-size", "--stack-size", "--no-warnings", "--no-deprecation",
    "--trace-warnings", "--trace-deprecation", "--throw-deprecation", "--pending-deprecation",
    "--enable-source-maps", "--unhandled-rejections", "--dns-result-order", "--openssl-legacy-provider",
    "--use-openssl-ca", "--use-bundled-ca", "--experimental-vm-modules", "--experimental-specifier-resolution",
    "--expose-gc", "--trace-uncaught", "--trace-exit", "--no-experimental-fetch", "--max-http-header-size",
    "--preserve-symlinks", "--preserve-symlinks-main", "--heapsnapshot-near-heap-limit",
    "--abort-on-uncaught-exception", "--tls-min-v1.2", "--tls-min-v1.3", "--tls-max-v1.2", "--tls-max-v1.3",
    "--title", "--no-addons", "--frozen-intrinsics", "--disable-proto", "--experimental-json-modules",
    "--experimental-modules", "--jitless", "--no-experimental-global-webcrypto", "--trace-sync-io",
    "--force-fips", "--enable-fips", "--no-force-async-hooks-checks", "--zero-fill-buffers", "--trace-tls",
    "--experimental-wasm-modules", "--experimental-top-level-await", "--report-on-fatalerror",
    "--no-network-family-autoselection", "--network-family-autoselection", "--experimental-strip-types",
    "--no-experimental-strip-types", "--experimental-require-module", "--no-experimental-require-module",
})
#: -D properties that only set encodings, locale or headless mode
_JAVA_PROPERTIES = frozenset({
    "file.encoding", "sun.jnu.encoding", "stdout.encoding", "stderr.encoding", "user.timezone", "user.language",
    "user.country", "user.region", "java.awt.headless", "java.net.preferIPv4Stack", "java.net.preferIPv6Addresses",
    "jdk.tls.client.protocols", "https.protocols", "sun.stdout.encoding", "sun.stderr.encoding",
    "org.gradle.daemon", "org.gradle.parallel", "org.gradle.caching", "maven.artifact.threads",
})
#: -XX options that run commands or load code
_JAVA_XX_CODE = LazyPattern(r"-XX:(?:On|Flags=|CompileCommandFile=|VMOptionsFile=|\+?StartAttachListener)",
                           re.IGNORECASE)
_JAVA_TUNING = LazyPattern(r"-X(?:mx|ms|ss|mn)\d+[kKmMgGtT]?$|-XX:[+-]?[A-Za-z0-9]+(?:=[\w.%-]*)?$|"
                          r"-Xshare:\w+$|-Xverify:none$|-ea$|-da$|-esa$|-dsa$|-server$|-client$|-Xint$|-Xrs$")
OPTION_VARS = frozenset({"NODE_OPTIONS", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "MAVEN_OPTS",
                         "GRADLE_OPTS", "SBT_OPTS"})


def harmless_options(name: str, value: str) -> bool:
    """Whether every option in ``value`` (the variable ``name``'s) only tunes the runtime."""
    words = value.split()
    if not words:
        return True
    if name == "NODE_OPTIONS":
        position = 0
        while position < len(words):
            option, eq, _ = words[position].partition("=")
            if option not in _NODE_TUNING:
                return False
            if not eq and position + 1 < len(words) and not words[position + 1].startswith("-"):
                position += 1  # `--max-old-space-size 4096`
            position += 1
        return True
    for word in words:
        if word.startswith("-D"):
            key = word[2:].partition("=")[0]
            if key not in _JAVA_PROPERTIES:
                return False
        elif _JAVA_XX_CODE.match(word) or not _JAVA_TUNING.match(word):
            return False
    return True
