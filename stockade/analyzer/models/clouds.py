"""Cluster and cloud clients: kubectl, helm, terraform/tofu, aws, gcloud/gsutil, az, rclone, and the
deploy tools of cloud and hosting platforms (eksctl, sam, cdk, serverless, vercel, netlify, wrangler …).

A cluster client talks to the server of its kubeconfig (a destination the command does not
show: an unknown effect) unless ``--server`` names it; commands that only read local files are
left alone.  terraform's plan/apply/destroy run providers (unknown effects).  Cloud CLIs contact
their service's API and read their credentials; their copy commands read or write local paths.
"""

from __future__ import annotations

import re

from stockade.analyzer.exec import Invocation
from stockade.analyzer.models import parse_options, register
from stockade.analyzer.models.net import contact_url

_KUBECTL_VALUES = frozenset({"-n", "--namespace", "--context", "--cluster", "--user", "-s", "--server",
                             "--kubeconfig", "-f", "--filename", "-o", "--output", "-l", "--selector", "-c",
                             "--container", "--token", "--as", "--as-group", "--request-timeout", "-k",
                             "--kustomize", "--field-selector", "--template", "--certificate-authority",
                             "--client-certificate", "--client-key", "-i", "--image", "--type", "--from-file",
                             "--from-literal", "--from-env-file", "--revision", "--timeout", "--replicas"})
_KUBECTL_LOCAL = frozenset({"config-view", "completion", "kustomize", "explain-never", "plugin", "options",
                            "help", "api-resources-never"})


def _kubeconfig_variable(inv: Invocation) -> None:
    """``KUBECONFIG=A:B``: the kubeconfig files the client reads (and merges)."""
    from stockade.analyzer.models.devtools import env_value

    for path in (env_value(inv, "KUBECONFIG") or "").split(":"):
        if path.strip():
            inv.read(path.strip(), None)


def model_kubectl(inv: Invocation) -> None:
    """kubectl/oc COMMAND: contacts the cluster (``--server``, else the kubeconfig's: unknown);
    ``-f FILE``/``--kubeconfig``/``--from-file`` read; ``cp`` copies a local operand;
    ``exec``/``run``/``debug``/``port-forward``/``proxy`` run code in or open the cluster."""
    parsed = parse_options(inv.argv, _KUBECTL_VALUES)
    if not parsed.values_of("--kubeconfig"):
        _kubeconfig_variable(inv)
    words = [w for w, _ in parsed.positionals]
    command = words[0] if words else ""
    at = parsed.positionals[0][1] if words else 0
    for option, value, index in parsed.options:
        if value is None:
            continue
        if option in ("--kubeconfig", "--certificate-authority", "--client-certificate", "--client-key"):
            inv.read(value, index)
        elif option in ("-f", "--filename", "-k", "--kustomize", "--from-env-file"):
            if "://" in value:
                contact_url(inv, value, index, 443)
            else:
                inv.read(value, index, recursive=option in ("-k", "--kustomize") or parsed.has("-R", "--recursive"))
        elif option == "--from-file":
            inv.read(value.partition("=")[2] or value, index)
    if command == "login" and inv.name == "oc":  # `oc login URL`: the server named, and the kubeconfig written
        for word, index in parsed.positionals[1:2]:
            contact_url(inv, word if "://" in word else "https://" + word, index, 443)
        inv.write("~/.kube/config", at)
    if command in ("config", "completion", "kustomize", "plugin", "options", "help", "") or (
            command == "version" and parsed.has("--client")):
        if command == "config" and len(words) > 1 and words[1] not in ("view", "get-contexts", "current-context",
                                                                          "get-clusters", "get-users"):
            inv.write("~/.kube/config", at)
        if command == "kustomize" and len(words) > 1:
            inv.read(words[1], at + 1, recursive=True)
        return
    if command == "cp" and len(parsed.positionals) >= 3:
        (source, source_index), (dest, dest_index) = parsed.positionals[1], parsed.positionals[2]
        if ":" not in source or source.startswith(("/", ".", "~")):
            inv.read(source, source_index, recursive=True)
        if ":" not in dest or dest.startswith(("/", ".", "~")):
            inv.write(dest, dest_index, recursive=True)
    server = parsed.values_of("-s", "--server")
    if server:
        contact_url(inv, server[-1][0], server[-1][1], 443)
    else:
        inv.unknown(f"`{inv.name} {command}` contacts the cluster of the kubeconfig, which the command does not "
                    "name", at)
    if command in ("exec", "run", "debug", "attach", "port-forward", "proxy", "apply", "create", "replace",
                   "patch", "delete", "edit", "scale", "rollout", "set", "drain", "cordon", "label", "annotate"):
        inv.unknown(f"`{inv.name} {command}` changes or runs code in the cluster", at)


_HELM_LOCAL = frozenset({"template", "lint", "create", "package", "show", "inspect", "dependency", "dep",
                         "completion", "env", "version", "help", "verify", "plugin", "pull-never"})


def model_helm(inv: Invocation) -> None:
    """helm COMMAND: install/upgrade/uninstall/rollback/list/status/test contact the cluster
    (unknown); ``repo add NAME URL``/``pull``/``push`` contact the URL; template/lint/create/
    package/show only work on local charts; ``--post-renderer`` runs a program."""
    parsed = parse_options(inv.argv, {"-n", "--namespace", "--kube-context", "--kubeconfig", "-f", "--values",
                                      "--set", "--set-file", "--set-string", "--version", "--repo",
                                      "--post-renderer", "-o", "--output", "--timeout", "--kube-apiserver",
                                      "-d", "--destination", "--untardir", "--output-dir"})
    words = list(parsed.positionals)
    command, at = words[0] if words else ("", 0)
    if not parsed.values_of("--kubeconfig"):
        _kubeconfig_variable(inv)
    for option, value, index in parsed.options:
        if value is None:
            continue
        if option in ("-f", "--values", "--kubeconfig"):
            contact_url(inv, value, index, 443) if "://" in value else inv.read(value, index)
        elif option == "--set-file":
            inv.read(value.partition("=")[2], index)
        elif option == "--post-renderer":
            inv.unknown(f"`helm --post-renderer` runs `{value}`", index)
        elif option == "--repo":
            contact_url(inv, value, index, 443)
        elif option in ("-d", "--destination", "--untardir", "--output-dir"):  # (`template --output-dir`: a tree)
            inv.write(value, index, recursive=option == "--output-dir")
    if command == "registry" and len(words) >= 3 and words[1][0] in ("login", "logout"):
        contact_url(inv, "https://" + words[2][0], words[2][1], 443)  # (an OCI registry, by host)
        return
    if command == "repo" and len(words) >= 4 and words[1][0] == "add":
        contact_url(inv, words[3][0], words[3][1], 443)
        inv.write("~/.config/helm", at)
        return
    if command == "plugin" and _helm_plugin(inv, words):
        return
    if command in ("dependency", "dep", "dependencies") and len(words) > 1 and words[1][0] in ("update", "up",
                                                                                              "build"):
        # (the charts the chart's Chart.yaml depends on, from the repositories it names)
        inv.unknown(f"`helm {command} {words[1][0]}` downloads charts from the repositories the chart names, which "
                    "the command does not show", words[1][1])
        inv.write(words[2][0] + "/charts" if len(words) > 2 else "charts", words[1][1], recursive=True)
        return
    if command in ("pull", "push", "fetch", "search") or command in _HELM_LOCAL or command == "repo":
        for word, index in words[1:]:
            if "://" in word:
                contact_url(inv, word, index, 443)
        if command in ("pull", "fetch") and not parsed.values_of("-d", "--destination"):
            inv.write(".", at)
        return
    _chart_urls(inv, words[1:])
    server = parsed.values_of("--kube-apiserver")
    if server:
        contact_url(inv, server[-1][0], server[-1][1], 443)
    else:
        inv.unknown(f"`helm {command}` contacts the cluster of the kubeconfig, which the command does not name", at)


def _chart_urls(inv: Invocation, words: list[tuple[str, int]]) -> None:
    """A chart named by URL (``helm install x oci://host/charts/x``, ``helm upgrade x
    https://host/x.tgz``) is downloaded from that host."""
    for word, index in words:
        if "://" in word:
            contact_url(inv, word, index, 443)


def _helm_plugin(inv: Invocation, words: list[tuple[str, int]]) -> bool:
    """``helm plugin install|update URL|DIR``: fetches the plugin (a URL is contacted), writes
    the plugins directory (``~/.local/share/helm/plugins``) and runs the plugin's install hook,
    code that cannot be seen into; ``plugin list`` only reads."""
    if len(words) < 2 or words[1][0] not in ("install", "add", "update", "up", "uninstall", "rm", "remove"):
        return False
    action, at = words[1]
    for word, index in words[2:]:
        if "://" in word:
            contact_url(inv, word, index, 443)
    inv.write("~/.local/share/helm/plugins", at, recursive=True)
    if action in ("install", "add", "update", "up"):
        inv.unknown(f"`helm plugin {action}` runs the plugin's hooks, which cannot be seen into", at)
    return True


_TERRAFORM_LOCAL = frozenset({"fmt", "validate", "version", "-version", "--version", "show", "output", "graph",
                              "providers", "workspace", "-help", "--help", "help", "console-never", "state-list"})


#: terraform's options naming a file read or written (``-name=F`` or ``-name F``, Go's flags)
_TERRAFORM_FILES = {"-var-file": "read", "-state": "read", "-out": "write", "-state-out": "write",
                    "-backup": "write", "-plugin-dir": "read"}


def _terraform_files(inv: Invocation, at: int, chdir: str) -> None:
    """The files of the command's ``-var-file``/``-state`` (read) and ``-out``/``-state-out``/
    ``-backup`` (written) options, after the command word at ``at``; ``-name=VALUE`` or
    ``-name VALUE`` (one or two dashes, as Go's flag package reads them); relative to the
    ``-chdir`` directory."""
    import posixpath

    argv = inv.argv
    index = at + 1
    while index < len(argv):
        word = argv[index]
        name, eq, value = word.lstrip("-").partition("=")
        role = _TERRAFORM_FILES.get("-" + name) if word.startswith("-") else None
        if role is not None and not eq and index + 1 < len(argv):
            index += 1
            value = argv[index]
        if role is not None and value and value != "-":
            recursive = name == "plugin-dir"
            if chdir and not value.startswith(("/", "~")):
                value = posixpath.join(chdir, value)
            (inv.read if role == "read" else inv.write)(value, index, recursive=recursive)
        index += 1


def model_terraform(inv: Invocation) -> None:
    """terraform/tofu [-chdir=DIR] COMMAND: plan/apply/destroy/import/refresh/console run the
    providers, whose effects cannot be seen (unknown); init downloads providers and modules
    from their registry; fmt/validate/show/output only work locally."""
    words = [(w, i) for i, w in enumerate(inv.argv[1:], start=1)]
    command, at, chdir = "", 0, ""
    for word, index in words:
        if word.startswith("-chdir="):
            chdir = word.partition("=")[2]
            inv.read(chdir, index)
            continue
        command, at = word, index
        break
    rest = [word for word, _ in words if not word.startswith("-") and word != command]
    _terraform_files(inv, at, chdir)
    if command == "providers" and rest[:1] in (["lock"], ["mirror"]):  # (they fetch the providers' packages)
        inv.network("registry.terraform.io", 443, at)
        if rest[0] == "mirror" and len(rest) > 1:
            inv.write(rest[-1], at)
        return
    if command in _TERRAFORM_LOCAL or not command:
        return
    if command == "init":
        inv.network("registry.terraform.io", 443, at)
        inv.write(".terraform", at)
        return
    inv.unknown(f"`{inv.name} {command}` runs providers whose effects cannot be seen into", at)
    if command == "console" and inv.stdin.text is not None:
        for path in _TERRAFORM_FILE_FUNCTIONS.findall(inv.stdin.text):  # (`file("~/.ssh/id_rsa")` is read here)
            inv.read(path, at)


#: terraform's functions that read a file of this machine, with a literal path
_TERRAFORM_FILE_FUNCTIONS = re.compile(r"\b(?:file|filebase64|filemd5|filesha1|filesha256|filesha512|"
                                       r"filebase64sha256|filebase64sha512|templatefile|fileexists)\s*\(\s*\"([^\"]+)\"")


_CLOUD_APIS = {"aws": ("amazonaws.com", "~/.aws"), "gcloud": ("googleapis.com", "~/.config/gcloud"),
               "gsutil": ("storage.googleapis.com", "~/.config/gcloud"), "az": ("management.azure.com", "~/.azure"),
               "doctl": ("api.digitalocean.com", "~/.config/doctl"), "flyctl": ("api.fly.io", "~/.fly"),
               "fly": ("api.fly.io", "~/.fly"), "heroku": ("api.heroku.com", "~/.netrc"),
               "pulumi": ("api.pulumi.com", "~/.pulumi"),
               # (deploy and cluster tools of cloud providers and hosting platforms)
               "eksctl": ("amazonaws.com", "~/.aws"), "sam": ("amazonaws.com", "~/.aws"),
               "cdk": ("amazonaws.com", "~/.aws"), "serverless": ("amazonaws.com", "~/.aws"),
               "sls": ("amazonaws.com", "~/.aws"), "copilot": ("amazonaws.com", "~/.aws"),
               "amplify": ("amazonaws.com", "~/.aws"), "vercel": ("api.vercel.com", "~/.local/share/com.vercel.cli"),
               "netlify": ("api.netlify.com", "~/.config/netlify"), "wrangler": ("api.cloudflare.com", "~/.wrangler"),
               "firebase": ("firebase.googleapis.com", "~/.config/configstore"),
               "supabase": ("api.supabase.com", "~/.supabase"), "railway": ("backboard.railway.app", "~/.railway"),
               "hcloud": ("api.hetzner.cloud", "~/.config/hcloud"),
               "linode-cli": ("api.linode.com", "~/.config/linode-cli"), "scw": ("api.scaleway.com", "~/.config/scw"),
               "oci": ("oraclecloud.com", "~/.oci"), "ibmcloud": ("cloud.ibm.com", "~/.bluemix"),
               "aliyun": ("aliyuncs.com", "~/.aliyun"), "exoscale": ("api.exoscale.com", "~/.config/exoscale"),
               "vultr-cli": ("api.vultr.com", "~/.vultr-cli.yaml"), "civo": ("api.civo.com", "~/.civo.json"),
               "koyeb": ("app.koyeb.com", "~/.koyeb.yaml"), "surge": ("surge.surge.sh", "~/.netrc"),
               "glab": ("gitlab.com", "~/.config/glab-cli")}
#: subcommands of cloud CLIs that only read their local configuration
_LOCAL_COMMANDS = frozenset({("config", "list"), ("config", "get"), ("config", "get-value"), ("info",),
                             ("components", "list"), ("auth", "list"), ("config", "configurations"),
                             ("account", "show"), ("account", "list"), ("configure", "list"), ("configure", "get"),
                             ("config", "list-profiles")})
_REMOTE_PREFIXES = ("s3://", "gs://", "az://", "https://", "http://")


def model_cloud(inv: Invocation) -> None:
    """aws/gcloud/gsutil/az…: reads the CLI's credentials, contacts its API (``--endpoint-url``:
    that one instead); ``cp``/``mv``/``sync``/``rsync`` read local sources and write a local
    destination; ``ssh``/``scp`` open sessions to machines the command does not name."""
    api, credentials = _CLOUD_APIS[inv.name]
    parsed = parse_options(inv.argv, {"--endpoint-url", "--profile", "--region", "--project", "--output",
                                      "-o", "--query", "--zone", "--cli-input-json", "--subscription", "-g",
                                      "--resource-group", "--exclude", "--include", "--cache-control",
                                      "--content-type", "--sse", "--storage-class", "--acl", "--format",
                                      "--filter", "-p", "--account"})
    words = [(w, i) for w, i in parsed.positionals]
    if (parsed.has("--version", "-v", "--help", "-h") and not words) or (words and words[0][0] in ("version", "help")):
        return
    inv.read(credentials, None, recursive=True)
    if tuple(word for word, _ in words[:2]) in _LOCAL_COMMANDS or tuple(word for word, _ in words[:1]) in \
            _LOCAL_COMMANDS:
        return  # (`gcloud config list`, `az account show`: the CLI's own configuration, read locally)
    endpoint = parsed.values_of("--endpoint-url")
    if endpoint:
        contact_url(inv, endpoint[-1][0], endpoint[-1][1], 443)
    else:
        service = words[0][0] if words and inv.name == "aws" else ""
        inv.network(f"{service}.{api}" if service else api, 443, words[0][1] if words else None)
    verbs = [w for w, _ in words[:3]]
    recursive = parsed.has("--recursive", "-r", "-R")
    for verb_at, verb in enumerate(verbs):
        if verb in ("cp", "mv", "sync", "rsync"):
            operands = words[verb_at + 1:]
            if len(operands) >= 2:
                *sources, (dest, dest_index) = operands
                for source, index in sources:
                    if not source.startswith(_REMOTE_PREFIXES):
                        inv.read(source, index, recursive=recursive or verb in ("sync", "rsync"))
                        if verb == "mv":
                            inv.delete(source, index, recursive=recursive)
                if not dest.startswith(_REMOTE_PREFIXES):
                    inv.write(dest, dest_index, recursive=recursive or verb in ("sync", "rsync"))
            break
        if verb in ("ssh", "scp", "ssm", "start-session", "run-command", "execute-command", "invoke"):
            inv.unknown(f"`{inv.name} {verb}` runs commands on a machine the command does not name",
                        words[verb_at][1])
            break
    for option, value, index in parsed.options:
        if option == "--cli-input-json" and value and value.startswith("file://"):
            inv.read(value[7:], index)


_RCLONE_SERVER_SUFFIXES = ("-url", "-host", "-endpoint")
_RCLONE_PARAMETER = re.compile(r"[,:]([A-Za-z_]+)=('[^']*'|\"[^\"]*\"|[^,:]+(?::\d+)?)")


def model_rclone(inv: Invocation) -> None:
    """rclone COMMAND SRC [DST]: ``remote:path`` operands are storage whose host is in the rclone
    config (unknown); local sources are read, a local destination written; move deletes the
    sources; ``config`` writes its config file."""
    # (a backend's own options — `--http-url`, `--sftp-host`, `--s3-endpoint`, `--webdav-url` … — name its server)
    servers = {w.partition("=")[0] for w in inv.argv[1:] if w.startswith("--") and
               w.partition("=")[0].endswith(_RCLONE_SERVER_SUFFIXES)}
    parsed = parse_options(inv.argv, {"--config", "--exclude", "--include", "--filter", "--filter-from",
                                      "--exclude-from", "--include-from", "--files-from", "--log-file",
                                      "--transfers", "--checkers", "--bwlimit", "--backup-dir", "-o"} | servers)
    for option, value, index in parsed.options:
        if option in servers and value:
            contact_url(inv, value, index, 443)
    words = list(parsed.positionals)
    for word, index in words:
        if word.startswith(":") and "," in word.split(":", 2)[1]:  # `:sftp,host=H:path`, `:http,url='U':`
            for item in _RCLONE_PARAMETER.finditer(word):
                if item.group(1).lower().endswith(("url", "host", "endpoint")):
                    contact_url(inv, item.group(2).strip("'\""), index, 443)
    if not words:
        return
    command, at = words.pop(0)
    for option, value, index in parsed.options:
        if value is None:
            continue
        if option in ("--filter-from", "--exclude-from", "--include-from", "--files-from", "--config"):
            inv.read(value, index)
        elif option == "--log-file":
            inv.write(value, index)
    inv.read("~/.config/rclone", None, recursive=True)
    if command in ("config", "authorize"):
        inv.write("~/.config/rclone", at, recursive=True)
        return
    if command in ("version", "help", "listremotes", "genautocomplete", "completion"):
        return

    def remote(word: str) -> bool:
        head = word.split("/", 1)[0]
        return ":" in head and not word.startswith(("/", ".")) and "://" not in word

    if any(remote(w) for w, _ in words):
        inv.unknown(f"`rclone {command}` contacts storage named in the rclone config", at)
    writes = command in ("copy", "sync", "move", "copyto", "moveto", "bisync", "copyurl", "mount")
    for position, (word, index) in enumerate(words):
        if remote(word):
            continue
        if "://" in word:
            contact_url(inv, word, index, 443)
        elif writes and position == len(words) - 1 and len(words) >= 2:
            inv.write(word, index, recursive=True)
        else:
            inv.read(word, index, recursive=True)
            if command in ("move", "moveto", "delete", "purge", "deletefile"):
                inv.delete(word, index, recursive=True)


register("kubectl oc k3s-kubectl", model_kubectl)
register("helm", model_helm)
register("terraform tofu terragrunt", model_terraform)
register(" ".join(_CLOUD_APIS), model_cloud)
register("rclone", model_rclone)
