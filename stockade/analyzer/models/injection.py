"""Commands sent into programs that already run outside the sandbox: a terminal, an editor, a
window manager, the user's service manager.

``kitty @ send-text``, ``wezterm cli send-text``, ``zellij action write-chars``, ``xdotool
type``, ``ydotool type`` and ``wtype`` type text into whatever window or pane has the focus —
where a shell may read it as commands; ``nvim --server S --remote-send KEYS`` and ``vim
--remote-send`` type into a running editor (``:!cmd`` runs a command there); ``i3-msg exec``,
``swaymsg exec``, ``hyprctl dispatch exec`` and ``awesome-client`` make the window manager run
a command; ``kitty @ launch``, ``wezterm cli spawn`` and ``zellij run`` start one in a running
terminal; ``systemctl --user set-environment`` changes what every later user service starts
with.  Text typed somewhere is code that cannot be seen into (``unknown-effects``), walked too
as the shell code it may be, so that a visible ``rm -rf ~`` is judged as such; a command a
window manager or terminal starts is walked as a command.
"""

from __future__ import annotations

from stockade.analyzer.effects import show
from stockade.analyzer.exec import Invocation
from stockade.analyzer.models import MODELS, default_model, parse_options, register

TYPE_CHECKING = False  # `typing` is imported only by type checkers (it costs ~7 ms of a cold start)
if TYPE_CHECKING:  # pragma: no cover
    from stockade.analyzer.models import Model


def typed(inv: Invocation, text: str, index: int | None, where: str) -> None:
    """``text`` typed into ``where``: unknown effects, and the shell code it may be, walked."""
    inv.unknown(f"`{inv.name}` types `{show(text)[:50]}` into {where}, which runs what it reads", index)
    code = text.replace("\\r", "\n").replace("\\n", "\n").replace("<CR>", "\n").replace("<Enter>", "\n")
    if code.strip():
        inv.script(code, index, what=f"the text `{inv.name}` types")


def _after_options(argv: list[str], start: int, values: frozenset[str]) -> int:
    """The index of the first word after the options from ``start`` (``--`` ends them)."""
    index = start
    while index < len(argv) and argv[index].startswith("-"):
        if argv[index] == "--":
            return index + 1
        index += 2 if argv[index] in values else 1
    return index


def model_kitty_remote(inv: Invocation) -> None:
    """``kitty @ send-text TEXT`` / ``kitten @ send-text``: typed into a kitty window; ``kitty @
    launch CMD``: CMD runs in a new window."""
    argv = inv.argv
    if len(argv) < 3 or argv[1] != "@":
        return
    sub, values = argv[2], frozenset({"-m", "--match", "-t", "--match-tab", "--to", "--type", "--title", "--cwd",
                                      "--env", "--var", "--location", "--window-type", "--from-file"})
    start = _after_options(argv, 3, values)
    if sub == "send-text" and start < len(argv):
        typed(inv, " ".join(argv[start:]), start, "a kitty window")
    elif sub == "launch" and start < len(argv):
        inv.run(start)
    elif sub in ("send-key", "set-user-vars", "load-config", "env"):
        inv.unknown(f"`{inv.name} @ {sub}` changes a running kitty: what follows cannot be seen into", 2)


def model_wezterm(inv: Invocation) -> None:
    """``wezterm cli send-text TEXT``: typed into a pane; ``wezterm cli spawn [--] CMD`` and
    ``wezterm start [--] CMD``: CMD runs in a new pane or window."""
    argv = inv.argv
    values = frozenset({"--pane-id", "--cwd", "--domain-name", "--window-id", "--workspace", "--class",
                        "--position", "--config-file", "--config"})
    if argv[1:3] == ["cli", "send-text"]:
        start = _after_options(argv, 3, values)
        if start < len(argv):
            typed(inv, " ".join(argv[start:]), start, "a wezterm pane")
    elif argv[1:3] == ["cli", "spawn"] or argv[1:2] == ["start"]:
        start = _after_options(argv, 3 if argv[1] == "cli" else 2, values)
        if start < len(argv):
            inv.run(start)


def model_zellij(inv: Invocation) -> None:
    """``zellij action write-chars TEXT`` (``write`` bytes): typed into the focused pane;
    ``zellij run [--] CMD`` and ``zellij action new-pane -- CMD``: CMD runs in a new pane."""
    argv = inv.argv
    words = [word for word in argv[1:] if not word.startswith("-")]
    if words[:2] in (["action", "write-chars"], ["action", "write"]) and len(words) > 2:
        typed(inv, " ".join(words[2:]), argv.index(words[2]), "a zellij pane")
    elif words[:1] == ["run"] or words[:2] == ["action", "new-pane"]:
        if "--" in argv:
            inv.run(argv.index("--") + 1)
        elif words[:1] == ["run"] and len(words) > 1:
            inv.run(argv.index(words[1]))


def model_typist(inv: Invocation) -> None:
    """``xdotool type TEXT``, ``ydotool type TEXT``, ``wtype TEXT``: typed into the focused
    window; ``xdotool key``/``wtype -k``: keys pressed there (not known)."""
    argv = inv.argv
    if inv.name in ("xdotool", "ydotool"):
        if "type" not in argv[1:]:
            if "key" in argv[1:] or "exec" in argv[1:]:
                inv.unknown(f"`{inv.name}` presses keys in the focused window, which runs what it reads", 1)
            return
        start = _after_options(argv, argv.index("type") + 1, frozenset({"--delay", "--window", "-d", "-D",
                                                                          "--key-delay", "--file"}))
    else:
        start = _after_options(argv, 1, frozenset({"-d", "-s", "-k", "-P", "-p", "-M", "-m"}))
    if start < len(argv):
        typed(inv, " ".join(argv[start:]), start, "the focused window")


def model_wm_exec(inv: Invocation) -> None:
    """``i3-msg exec CMD`` / ``swaymsg exec CMD`` / ``hyprctl dispatch exec CMD``: the window
    manager runs CMD (a shell command line); ``awesome-client``: Lua run by the window manager."""
    argv = inv.argv
    if inv.name == "awesome-client":
        inv.unknown("`awesome-client` runs Lua code in the window manager", 0)
        return
    words = [(index, word) for index, word in enumerate(argv[1:], start=1) if not word.startswith("-")]
    if inv.name == "hyprctl":
        if len(words) >= 3 and words[0][1] == "dispatch" and words[1][1] == "exec":
            inv.script(" ".join(argv[words[2][0]:]), words[2][0], what="the command `hyprctl dispatch exec` runs")
        return
    text = " ".join(word for _, word in words)
    for part in text.split(";"):  # (i3's command list: `exec CMD; workspace 2`)
        part = part.strip()
        if part.startswith("exec"):
            code = part[4:].strip()
            if code.startswith("--no-startup-id"):
                code = code[len("--no-startup-id"):].strip()
            if code:
                inv.script(code, words[0][0] if words else None, what=f"the command `{inv.name} exec` runs")


def _with_remote_editor(name: str, inner: Model) -> Model:
    def model(inv: Invocation) -> None:
        inner(inv)
        argv = inv.argv
        for index, word in enumerate(argv[1:-1], start=1):
            if word in ("--remote-send", "--remote-expr"):
                typed(inv, argv[index + 1], index + 1, f"a running `{name}`")

    model.__doc__ = f"`{name}` as before; ``--remote-send KEYS``/``--remote-expr EXPR`` type into a running editor"
    return model


def _with_user_environment(inner: Model) -> Model:
    def model(inv: Invocation) -> None:
        inner(inv)
        parsed = parse_options(inv.argv, {"-p", "--property", "-H", "--host", "-M", "--machine"})
        words = [word for word, _ in parsed.positionals]
        if words[:1] in (["set-environment"], ["import-environment"]):
            inv.persistence(f"`systemctl {words[0]}` changes the environment every later service starts with", 0)
        elif words[:1] == ["edit"]:
            inv.persistence("`systemctl edit` writes a unit's configuration, run when the unit starts", 0)

    model.__doc__ = "systemctl as before; set-environment, import-environment and edit change what services run"
    return model


_KITTY = MODELS.get("kitty")


def _kitty(inv: Invocation) -> None:
    """kitty: ``@`` remote control (:func:`model_kitty_remote`), else the terminal's own model."""
    if inv.argv[1:2] == ["@"]:
        model_kitty_remote(inv)
    elif _KITTY is not None:
        _KITTY(inv)


register("kitty kitten", _kitty)
register("wezterm", model_wezterm)
register("zellij", model_zellij)
register("xdotool ydotool wtype", model_typist)
register("i3-msg swaymsg hyprctl awesome-client", model_wm_exec)
for _editor in ("nvim", "vim", "gvim", "mvim"):
    register(_editor, _with_remote_editor(_editor, MODELS.get(_editor, default_model)))
register("systemctl", _with_user_environment(MODELS.get("systemctl", default_model)))
