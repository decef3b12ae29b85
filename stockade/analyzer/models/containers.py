"""Container engines: docker, podman, nerdctl.

The engine's daemon acts as root: a privileged container, host namespaces, added capabilities,
host devices and disabled confinement are privilege escalation; a bind mount gives the container
the host path (read-only with ``:ro``/``readonly``, else read-write: a write of it); ``-H``/
``--host``/``DOCKER_HOST`` point the client at another daemon (a network contact).
"""

from __future__ import annotations

import re

from stockade.analyzer.effects import UNKNOWN, Network, show
from stockade.analyzer.exec import TERMINAL, Invocation
from stockade.analyzer.models import parse_options, register
from stockade.analyzer.models.net import contact_url

#: the engine's own options before the subcommand that take a value
_GLOBAL_VALUES = frozenset({"-H", "--host", "-c", "--context", "--config", "-l", "--log-level", "--tlscacert",
                            "--tlscert", "--tlskey", "--url", "--connection", "--root", "--runroot",
                            "--storage-driver", "--cgroup-manager", "--address", "-a", "--namespace", "-n",
                            "--cni-path", "--data-root", "--snapshotter"})
#: run/create/exec options that take a value
_RUN_VALUES = frozenset({
    "-v", "--volume", "--mount", "-e", "--env", "--env-file", "-p", "--publish", "--name", "-w", "--workdir",
    "-u", "--user", "--network", "--net", "--pid", "--ipc", "--uts", "--userns", "--cgroupns", "--cap-add",
    "--cap-drop", "--device", "--security-opt", "--entrypoint", "-l", "--label", "--label-file", "-m",
    "--memory", "--cpus", "--platform", "--restart", "-h", "--hostname", "--add-host", "--dns", "--log-driver",
    "--log-opt", "--tmpfs", "--ulimit", "--shm-size", "--gpus", "--runtime", "--volumes-from", "--link",
    "--expose", "--stop-signal", "--health-cmd", "--cidfile", "--group-add", "--mac-address", "--ip", "--ip6",
    "--pull", "--cpuset-cpus", "--memory-swap", "--stop-timeout", "--device-cgroup-rule", "--sysctl",
    "--annotation", "--attach", "-a", "--detach-keys", "--domainname", "--isolation", "--kernel-memory",
    "--oom-score-adj", "--pids-limit", "--storage-opt", "--cgroup-parent", "--blkio-weight", "--cpu-shares",
    "-c", "--cpu-period", "--cpu-quota", "--init-path", "--privileged-never", "--secret", "--userns-uid-map",
})
_HOST_NAMESPACES = ("--pid", "--net", "--network", "--ipc", "--uts", "--userns", "--cgroupns")
_UNCONFINED = ("seccomp=unconfined", "seccomp:unconfined", "apparmor=unconfined", "apparmor:unconfined",
               "label=disable", "label:disable", "systempaths=unconfined", "no-new-privileges=false")


def _host_path(text: str) -> bool:
    """Whether a mount source is a host path (not a named volume): a path, or a word whose
    value is not known (``"$(pwd)"``: judged as an unknown path)."""
    return text.startswith(("/", "~", ".", "$", UNKNOWN)) or text in (".", "..")


#: the sockets of the system's own container daemons (rootful and rootless)
_DEFAULT_SOCKETS = ("/var/run/docker.sock", "/run/docker.sock", "/run/podman/podman.sock",
                    "/var/run/podman/podman.sock", "/run/containerd/containerd.sock")


def _socket_daemon(inv: Invocation, value: str, index: int | None) -> None:
    """``DOCKER_HOST=unix:///tmp/x.sock``: the client sends its requests (a container to run,
    with the host's files mounted) to whatever listens on that socket — not the system's
    daemon, and a socket in a place the agent can write can forward anywhere: not known."""
    path = value[7:]
    if not path or path in _DEFAULT_SOCKETS or (path.startswith("/run/user/") and
                                                path.endswith(("/docker.sock", "/podman/podman.sock"))):
        return
    inv.read(path, index)
    inv.unknown(f"`{inv.name}` talks to the daemon listening on `{show(path)}`, which is not the system's "
                "container daemon and cannot be identified", index)


def _podman_unshare(inv: Invocation, at: int) -> None:
    """``podman unshare [CMD]``: CMD runs on this machine, in a user namespace that maps the user
    to root (its files are this machine's); without a command, an interactive shell."""
    start = at + 1
    while start < len(inv.argv) and inv.argv[start].startswith("-"):
        start += 1
    if start < len(inv.argv):
        inv.run(start)
    else:
        inv.unknown("`podman unshare` opens a shell, whose commands cannot be seen", at)


def _env_context(inv: Invocation) -> None:
    """``DOCKER_CONTEXT=NAME docker …``: as ``--context NAME``, the daemon that context names."""
    value = inv.env.get("DOCKER_CONTEXT")
    if value is None and "DOCKER_CONTEXT" in inv.walker.state.exported:
        value = inv.walker.state.variables.get("DOCKER_CONTEXT")
    if value and value not in ("default", "desktop-linux"):
        inv.unknown(f"`DOCKER_CONTEXT={show(value)}` makes `{inv.name}` talk to the daemon that context names, "
                    "which can be on another machine", 0)


def _daemon(inv: Invocation, value: str, index: int | None) -> None:
    """``-H``/``DOCKER_HOST``/``nerdctl --address``: the daemon the client sends its requests
    to.  A socket path (``unix://P``, or a path for nerdctl) is judged by
    :func:`_socket_daemon`; a daemon over TCP or ssh is a network contact — and, whatever
    machine it is on, not the system's daemon: what it runs as root (the mounts it gives a
    container are of its machine's files) cannot be identified."""
    if value.startswith("unix://"):
        _socket_daemon(inv, value, index)
        return
    if value.startswith("/") and inv.name == "nerdctl":  # (containerd's address: a socket path)
        _socket_daemon(inv, "unix://" + value, index)
        return
    if value.startswith(("npipe://", "fd://")) or not value:
        return
    url = value if "://" in value else "tcp://" + value
    contact_url(inv, url, index, 2375)
    inv.unknown(f"`{inv.name}` talks to the daemon at `{show(value)}`, which is not the system's container daemon "
                "and cannot be identified: what it runs as root and which machine's files it mounts", index)


def _volume(inv: Invocation, value: str, index: int) -> None:
    """``-v SRC:DST[:OPTS]``: a host path SRC is read (``ro``) or written by the container."""
    parts = value.split(":")
    if len(parts) < 2 or not _host_path(parts[0]):
        return
    read_only = len(parts) >= 3 and any(o in ("ro", "readonly") for o in parts[2].split(","))
    (inv.read if read_only else inv.write)(parts[0], index, recursive=True)
    _engine_socket(inv, parts[0], index)


#: sockets of container engines and the kubelet: whoever can connect to one runs any container
_ENGINE_SOCKETS = re.compile(r"(^|/)(docker|containerd|podman|crio|cri-dockerd|buildkitd|kubelet|dockershim)"
                             r"\.sock$")


def _engine_socket(inv: Invocation, source: str, index: int) -> None:
    """A container engine's socket given to a container (``-v /var/run/docker.sock:/s:ro``):
    read-only or not, the container can start privileged containers of the host — privilege.
    A directory that holds one (``/run``, ``/var/run``) gives the same."""
    path = inv.path(source).rstrip("/")
    if _ENGINE_SOCKETS.search(path) or path in ("/run", "/var/run", "/run/containerd", "/var/run/docker",
                                                "/run/docker", "/run/podman", "/var/run/podman"):
        inv.privilege(f"the container gets the container engine's socket `{show(source)}`: it can start "
                      "privileged containers on the host", index)


#: run options that let the container use host devices (beyond the default set)
_DEVICE_GRANTS = frozenset({"--device-cgroup-rule"})


def _device_grant(inv: Invocation, option: str, value: str, index: int) -> None:
    """``--device-cgroup-rule='a *:* rwm'``: the container may open the host devices the rule
    allows (with ``mknod`` it makes them: every disk, ``/dev/mem``)."""
    inv.privilege(f"`{inv.name} {option}={show(value)}` lets the container use host devices", index)


def _csv_fields(value: str) -> list[str]:
    """The comma-separated fields of a ``--mount`` value as docker reads them (a CSV record:
    ``"source=/etc"`` is the field ``source=/etc``, ``"a,b"`` one field)."""
    import csv

    try:
        rows = list(csv.reader([value], skipinitialspace=False))
    except csv.Error:
        return value.split(",")
    return rows[0] if rows else []


def _volume_create(inv: Invocation, start: int) -> None:
    """``docker volume create -o device=PATH -o o=bind …``: the local driver's volume is the host
    directory PATH (written by whatever mounts it)."""
    parsed = parse_options(inv.argv, {"-o", "--opt", "-d", "--driver", "--label", "--name"}, start=start)
    for value, index in parsed.values_of("-o", "--opt"):
        key, _, setting = value.partition("=")
        if key.strip().lower() == "device" and setting.strip().startswith(("/", "~", ".")):
            inv.write(setting.strip(), index, recursive=True)


def _mount(inv: Invocation, value: str, index: int) -> None:
    """``--mount type=bind,source=…,target=…[,readonly]``; a volume whose ``volume-opt=device=PATH``
    makes the local driver bind a host directory is that directory."""
    fields: dict[str, str] = {}
    for item in _csv_fields(value) if '"' in value else value.split(","):
        key, _, setting = item.partition("=")
        fields[key.strip().lower()] = setting.strip() if _ else "true"
        if key.strip().lower() == "volume-opt" and setting.strip().lower().startswith("device="):
            fields["source"] = setting.strip()[7:]
            fields["type"] = "bind"
    if fields.get("type", "volume") != "bind":
        return
    source = fields.get("source") or fields.get("src")
    if not source:
        return
    read_only = any(fields.get(k, "false").lower() in ("true", "1", "") for k in ("readonly", "ro")
                    if k in fields)
    (inv.read if read_only else inv.write)(source, index, recursive=True)
    _engine_socket(inv, source, index)


def _run_options(inv: Invocation, start: int, more_values: frozenset[str] = frozenset()) -> None:
    """The options of ``run``/``create``/``exec`` (up to the image); ``more_values``: the
    subcommand's own options that take a value."""
    parsed = parse_options(inv.argv, _RUN_VALUES | more_values, start=start, stop_at_first_positional=True)
    name = inv.name
    for option, value, index in parsed.options:
        if value is not None and value[:1] == "=" and option[1:2] != "-":
            value = value[1:]  # `-v=/a:/b` (the CLI's flag parser takes `-v=VALUE` as `-v VALUE`)
        if option == "--volumes-from" and value is not None:
            inv.unknown(f"`{name} --volumes-from {show(value)}` mounts the volumes of another container, which can "
                        "be any host directory", index)
        if option == "--privileged" and (value is None or value.lower() in ("true", "1")):
            inv.privilege(f"`{name} --privileged` gives the container the host's devices and capabilities", index)
        elif value is None:
            continue
        elif option in _HOST_NAMESPACES and value.startswith("host"):
            inv.privilege(f"`{name} {option}={value}` shares a host namespace with the container", index)
        elif option in _HOST_NAMESPACES and value.startswith("container:"):
            inv.privilege(f"`{name} {option}={value}` joins another container's namespace", index)
        elif option == "--cap-add":
            inv.privilege(f"`{name} --cap-add {value}` gives the container a capability", index)
        elif option == "--device":
            inv.privilege(f"`{name} --device {value}` gives the container a host device", index)
        elif option in _DEVICE_GRANTS:
            _device_grant(inv, option, value, index)
        elif option == "--security-opt" and value.lower() in _UNCONFINED:
            inv.privilege(f"`{name} --security-opt {value}` removes the container's confinement", index)
        elif option in ("-v", "--volume"):
            _volume(inv, value, index)
        elif option == "--mount":
            _mount(inv, value, index)
        elif option in ("--env-file", "--label-file"):
            inv.read(value, index)
        elif option == "--cidfile":
            inv.write(value, index)
        elif option == "--secret":
            for item in value.split(","):
                key, _, path = item.partition("=")
                if key in ("src", "source"):
                    inv.read(path, index)
    if parsed.has("--rootfs") and parsed.positionals:  # (podman: the operand is a host directory, the root)
        root, index = parsed.positionals[0]
        inv.write(root.partition(":")[0], index, recursive=True)
    if parsed.positionals and not any(option in ("--network", "--net") and value == "none"
                                      for option, value, _ in parsed.options):
        _container_network(inv, parsed.positionals[0][1] + 1)


def _container_network(inv: Invocation, start: int) -> None:
    """The command a container runs (after the image or container name): its files are the
    container's, not this machine's, but the hosts it contacts are contacted from this machine's
    network.  The command is walked and only what it contacts is kept."""
    if start >= len(inv.argv):
        return
    effects = inv.walker.effects
    before = len(effects)
    inv.run(start, stdin=TERMINAL)
    kept = [effect for effect in effects[before:] if effect.__class__ is Network]
    del effects[before:]
    effects.extend(kept)


#: compose's global options that take a value
_COMPOSE_VALUES = {"-f", "--file", "-p", "--project-name", "--env-file", "--profile", "--project-directory",
                   "--ansi", "--parallel", "--progress"}
#: compose subcommands that create containers (or images) as the compose file configures them;
#: ``exec``, ``cp``, ``restart``, ``start``, ``stop``, ``logs`` act on the containers that already
#: exist (created by an ``up`` or ``run`` judged when it ran), as ``docker exec``/``cp``/``restart``
_COMPOSE_STARTS = frozenset({"up", "run", "create", "build", "watch", "scale"})
#: compose exec's own options that take a value (beyond ``docker exec``'s)
_COMPOSE_EXEC_VALUES = frozenset({"--index"})


def _compose(inv: Invocation, start: int) -> None:
    """``docker compose …``: the compose file (agent-writable, not in the command) decides the
    mounts, privileges, devices and host networking of every service it starts."""
    parsed = parse_options(inv.argv, _COMPOSE_VALUES, start=start, stop_at_first_positional=True)
    for option, value, index in parsed.options:
        if option in ("-f", "--file", "--env-file") and value:
            inv.read(value, index)
    if not parsed.positionals:
        return
    word, index = parsed.positionals[0]
    if word in _COMPOSE_STARTS:
        inv.unknown(f"`compose {word}` starts containers as the compose file configures them (mounts, "
                    "privileges, host network), which the command does not show", index)
        if word in ("run", "create"):  # (its own -v/--volume, --cap-add … as `docker run`'s)
            _run_options(inv, index + 1)
    elif word == "exec":  # `compose exec [-T] SERVICE CMD…`: as `docker exec CONTAINER CMD…`
        _run_options(inv, index + 1, _COMPOSE_EXEC_VALUES)
    elif word == "cp":  # `compose cp SERVICE:SRC DEST`, `compose cp SRC SERVICE:DEST`
        _copy(inv, index)


def _copy(inv: Invocation, at: int) -> None:
    """``cp [OPTIONS] SRC DEST`` (after the subcommand at ``at``): the operand that is not
    ``CONTAINER:PATH`` is this machine's, read (the source) or written (the destination)."""
    words = [(w, i) for i, w in enumerate(inv.argv[at + 1:], start=at + 1) if not w.startswith("-")]
    if len(words) == 2:
        (source, source_index), (dest, dest_index) = words
        if ":" not in source.split("/", 1)[0] or source.startswith(("/", ".", "~")):
            inv.read(source, source_index, recursive=True)
        if ":" not in dest.split("/", 1)[0] or dest.startswith(("/", ".", "~")):
            inv.write(dest, dest_index, recursive=True)


#: the variables that name the daemon (nerdctl: containerd's address)
_HOST_VARS = ("DOCKER_HOST", "CONTAINER_HOST")
_NERDCTL_HOST_VARS = ("CONTAINERD_ADDRESS", *_HOST_VARS)


def model_container(inv: Invocation) -> None:
    """docker/podman/nerdctl [GLOBAL OPTIONS] COMMAND …: see the module docstring; ``cp``
    reads or writes its local operand; ``build`` reads its context and secrets."""
    parsed = parse_options(inv.argv, _GLOBAL_VALUES, stop_at_first_positional=True)
    daemon_given = False
    for option, value, index in parsed.options:
        if option in ("-H", "-c", "-a") and value is not None and value[:1] == "=":
            value = value[1:]  # (`-H=unix:///x.sock`: a short option's value after `=`, as cobra reads it)
        if option in ("-H", "--host", "--url", "--remote", "--address", "-a") and value is not None:
            _daemon(inv, value, index)
            daemon_given = True
        elif option in ("-c", "--context", "--connection") and value not in (None, "default", "desktop-linux"):
            inv.unknown(f"`{inv.name} {option} {show(value or '')}` talks to the daemon that context names, which "
                        "can be on another machine", index)
            daemon_given = True
        elif option == "--config" and value is not None and inv.name == "docker":  # (as DOCKER_CONFIG)
            from stockade.analyzer.models.netconfig import judge_config_var

            judge_config_var(inv.walker, "DOCKER_CONFIG", value, inv.at(index))
    variables = _NERDCTL_HOST_VARS if inv.name == "nerdctl" else _HOST_VARS
    env_host = next((inv.env[var] for var in variables if inv.env.get(var)), None)
    if env_host is None:
        state = inv.walker.state
        for var in variables:
            if var in state.exported and var in state.variables:
                env_host = state.variables[var]
    if env_host and not daemon_given:
        _daemon(inv, env_host, 0)
    elif not daemon_given:
        _env_context(inv)
    if inv.name.endswith("-compose"):  # (docker-compose, podman-compose: `docker compose`'s subcommands)
        _compose(inv, 1)
        return
    if not parsed.positionals:
        return
    command, at = parsed.positionals[0]
    if command == "compose":
        _compose(inv, at + 1)
        return
    if command in ("container", "image") and len(parsed.positionals) > 1:
        command, at = parsed.positionals[1]
    if command in ("run", "create", "exec"):
        _run_options(inv, at + 1)
    elif command == "volume" and len(parsed.positionals) > 1 and parsed.positionals[1][0] == "create":
        _volume_create(inv, parsed.positionals[1][1] + 1)
    elif command == "unshare" and inv.name == "podman":
        _podman_unshare(inv, at)
    elif command == "cp":
        _copy(inv, at)
    elif command in ("service", "stack", "swarm", "node", "secret", "config", "plugin") and \
            len(parsed.positionals) > 1 and parsed.positionals[1][0] not in ("ls", "ps", "inspect", "logs", "list",
                                                                             "services", "--help"):
        verb = parsed.positionals[1][0]
        inv.unknown(f"`{inv.name} {command} {verb}` changes the services or the swarm of the daemon, as files and "
                    "images the command does not show configure them", at)
        if command == "plugin" and verb == "install":
            inv.privilege(f"`{inv.name} plugin install` installs a plugin that runs with the daemon's privileges", at)
    elif command == "context" and len(parsed.positionals) > 1 and parsed.positionals[1][0] in (
            "create", "update", "import", "rm", "use"):
        inv.write("~/.docker", at)  # (contexts and the current one are kept in the docker config directory)
        for word, index in parsed.positionals[2:]:
            for item in word.split(","):
                key, _, value = item.partition("=")
                if key == "host" and value:
                    _daemon(inv, value, index)
        for option, value, index in parse_options(inv.argv, {"--docker", "--description", "--from"},
                                                  start=at + 2).options:
            if option == "--docker" and value:
                for item in value.split(","):
                    key, _, host = item.partition("=")
                    if key == "host" and host:
                        _daemon(inv, host, index)
    elif command in ("build", "buildx"):
        build = parse_options(inv.argv, {"-f", "--file", "-t", "--tag", "--build-arg", "--secret", "--target",
                                         "--platform", "-o", "--output", "--build-context", "--iidfile",
                                         "--cache-from", "--cache-to", "--label", "--network", "--progress",
                                         "--ssh", "--metadata-file", "--add-host", "--shm-size", "-m", "--memory",
                                         "--ulimit", "--cgroup-parent", "--isolation", "--annotation", "--attest",
                                         "--sbom", "--provenance", "--allow", "--builder", "--no-cache-filter",
                                         "--call", "--cpuset-cpus", "--cpu-shares", "-c", "--cpu-quota",
                                         "--cpu-period", "--memory-swap", "--security-opt"}, start=at + 1)
        for option, value, index in build.options:
            if value is None:
                continue
            if option in ("-f", "--file"):
                inv.read(value, index)
            elif option == "--secret":
                for item in value.split(","):
                    key, _, path = item.partition("=")
                    if key in ("src", "source"):
                        inv.read(path, index)
            elif option == "--ssh":  # `default|ID[=SOCKET|KEY[,KEY]]`: keys read, or the agent forwarded
                _, eq, paths = value.partition("=")
                for path in paths.split(",") if eq else []:
                    inv.read(path, index)
                if not eq:
                    inv.unknown(f"`build --ssh {show(value)}` lets the build steps use the SSH agent's keys", index)
            elif option in ("--iidfile", "--metadata-file"):
                inv.write(value, index)
            elif option in ("-o", "--output") and "dest=" in value:
                inv.write(value.split("dest=", 1)[1].split(",", 1)[0], index, recursive=True)
            elif option in ("-o", "--output") and "=" not in value and value != "-":
                inv.write(value, index, recursive=True)  # (`--output=PATH`: `type=local,dest=PATH`)
            elif option == "--network" and value == "host":
                inv.privilege("`build --network=host` runs build steps in the host network", index)
            elif option == "--allow" and "insecure" in value:
                inv.privilege(f"`build --allow {show(value)}` lets build steps run privileged", index)
        # the context (sent whole to the daemon, less what .dockerignore leaves out; in the
        # project, dot-files are judged left out — its .dockerignore is the project's —, elsewhere
        # not: `docker build ~` sends ~/.ssh): a directory, `-` (stdin) or a URL
        contexts = build.positionals[:1] if command == "build" else \
            build.positionals[1:2] if build.positionals[:1] and build.positionals[0][0] in ("build", "b") else []
        workspace = inv.walker.context.workspace.rstrip("/") + "/"
        for word, index in contexts:
            if word != "-" and "://" not in word and not word.startswith("git@"):
                inside = UNKNOWN not in word and (inv.path(word).rstrip("/") + "/").startswith(workspace)
                inv.read(word, index, recursive=True, skip_hidden=inside)
    elif command == "machine" and len(parsed.positionals) > 1 and parsed.positionals[1][0] in (
            "ssh", "init", "start", "os"):
        inv.unknown(f"`{inv.name} machine {parsed.positionals[1][0]}` runs commands in the machine's VM, which the "
                    "command does not show", parsed.positionals[1][1])
    elif command in ("save", "export", "load", "import"):  # -o/--output writes, -i/--input reads an archive
        archive = parse_options(inv.argv, {"-o", "--output", "-i", "--input", "--platform", "-c", "--change",
                                           "-m", "--message"}, start=at + 1)
        for option, value, index in archive.options:
            if value is not None and option in ("-o", "--output", "-i", "--input"):
                (inv.write if option in ("-o", "--output") else inv.read)(value, index)


def _registry_host(reference: str) -> str | None:
    """The registry host an image reference names (``evil.example/x:tag``, ``localhost:5000/x``;
    None for Docker Hub's short names, which the container daemon's rules cover)."""
    first, slash, _ = reference.partition("/")
    if slash and ("." in first or ":" in first or first == "localhost"):
        return first
    return None


def model_registry_client(inv: Invocation) -> None:
    """skopeo/crane/regctl/oras: image references (``docker://HOST/…`` for skopeo) name the
    registries contacted; local transports (``dir:``, ``oci:``, ``docker-archive:``) and tarballs
    are files read or written (the last operand of a copy is written)."""
    parsed = parse_options(inv.argv, {"--authfile", "--creds", "--src-creds", "--dest-creds", "--cert-dir",
                                      "--src-cert-dir", "--dest-cert-dir", "--platform", "--format", "-f", "-o",
                                      "--override-os", "--override-arch", "--registry-token", "-t", "--tag",
                                      "--dest-authfile", "--src-authfile", "--retry-times", "-a", "--annotation"})
    for option, value, index in parsed.options:
        if value is not None and option in ("--authfile", "--src-authfile", "--dest-authfile", "--cert-dir",
                                            "--src-cert-dir", "--dest-cert-dir"):
            inv.read(value, index)
    words = parsed.positionals[1:]  # (after the subcommand)
    sub = parsed.positionals[0][0] if parsed.positionals else ""
    for position, (word, index) in enumerate(words):
        transport, colon, rest = word.partition(":")
        if colon and transport in ("docker", "docker-daemon", "containers-storage") and rest.startswith("//"):
            host = _registry_host(rest[2:])
            if host is not None:
                inv.network(host.partition(":")[0], int(host.partition(":")[2] or 443)
                            if host.partition(":")[2].isdigit() else 443, index)
        elif colon and transport in ("dir", "oci", "oci-archive", "docker-archive"):
            last = position == len(words) - 1 and sub in ("copy", "sync", "cp")
            (inv.write if last else inv.read)(rest.split(":")[0], index, recursive=transport in ("dir", "oci"))
        elif word.endswith((".tar", ".tgz", ".tar.gz")) or word.startswith(("/", "./", "~")):
            (inv.write if sub in ("pull", "export", "save") else inv.read)(word, index)
        else:
            host = _registry_host(word)
            if host is not None:
                name, _, port = host.partition(":")
                inv.network(name, int(port) if port.isdigit() else 443, index)


register("docker podman nerdctl docker-compose podman-compose", model_container)
register("skopeo crane regctl oras", model_registry_client)
