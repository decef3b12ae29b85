"""Password managers and secret stores: programs that hand out stored secrets.

Two kinds, by where the secret comes from:

- **Files decrypted with the user's keys** — ``gopass`` (as ``pass``, whose model is in
  :mod:`.agenttools`) keeps GPG-encrypted files in ``~/.password-store`` and decrypts them
  with ``gpg``, which reads ``~/.gnupg``: showing, copying or editing an entry reads both
  (judged by the filesystem rules, so a policy that keeps ``~/.gnupg`` out denies it);
  listing the entries reads the store's names only.
- **Daemons and vaults** — the desktop keyring (``secret-tool``, ``kwallet-query``), macOS's
  keychain (``security find-*-password``, ``dump-keychain``), the kernel keyring (``keyctl``),
  and the clients of 1Password, Bitwarden, LastPass and aws-vault ask a process or a service
  for the secret (HashiCorp Vault's client is judged with the cluster clients, in
  :mod:`.buildtools`): no file the policy names is read, and what is handed back cannot be
  seen.  Those subcommands are unknown effects; the others (``op --version``, ``bw status``,
  ``keyctl show``) are judged as a program without a model.
"""

from __future__ import annotations

from stockade.analyzer.exec import Invocation
from stockade.analyzer.models import default_model, register

#: pass-style stores: program → subcommands that only list names (every other decrypts an entry)
_GPG_STORES: dict[str, frozenset[str]] = {
    "gopass": frozenset({"ls", "list", "find", "search", "init", "setup", "help", "version", "--help", "--version",
                         "config", "mounts", "recipients", "completion"}),
}

#: daemon and vault clients: program → (what holds the secrets, the subcommand words that read one)
_VAULTS: dict[str, tuple[str, frozenset[str]]] = {
    "secret-tool": ("the desktop keyring", frozenset({"lookup", "search"})),
    "kwallet-query": ("the KDE wallet", frozenset({"-r", "--read-password", "-l", "--list-entries"})),
    "security": ("the macOS keychain", frozenset({"find-generic-password", "find-internet-password",
                                                  "find-certificate", "find-identity", "dump-keychain", "export",
                                                  "find-key"})),
    "keyctl": ("the kernel keyring", frozenset({"print", "read", "pipe"})),
    "op": ("1Password", frozenset({"read", "inject", "run", "item", "document", "signin"})),
    "bw": ("Bitwarden", frozenset({"get", "list", "export", "serve", "unlock"})),
    "lpass": ("LastPass", frozenset({"show", "export", "ls"})),
    "aws-vault": ("aws-vault's keyring", frozenset({"exec", "export", "login"})),
}


def model_gpg_store(inv: Invocation) -> None:
    """``gopass show NAME`` (``gopass NAME``, ``-c``, ``otp``, ``edit``…): reads the store and
    the GPG keys that decrypt it; ``gopass ls``/``find`` read the store's names."""
    words = [(word, index) for index, word in enumerate(inv.argv[1:], start=1) if word[:1] != "-" or
             word in ("--help", "--version")]
    inv.read("~/.password-store", words[0][1] if words else 0, recursive=True)
    if words and words[0][0] in _GPG_STORES[inv.name]:
        return
    if not words and len(inv.argv) == 1:  # (`gopass` alone lists the entries)
        return
    inv.read("~/.gnupg", words[0][1] if words else 0, recursive=True)


def model_vault(inv: Invocation) -> None:
    """A keyring, keychain or vault client: a subcommand that reads a secret asks a daemon or
    a service for it, which cannot be seen into (``op run -- CMD``, ``aws-vault exec PROFILE
    [--] CMD``: CMD runs, modelled, with the secrets in its environment); others as a program
    without a model."""
    holder, reading = _VAULTS[inv.name]
    for index, word in enumerate(inv.argv[1:], start=1):
        if word in reading:
            inv.unknown(f"`{inv.name} {word}` hands out secrets held by {holder}, outside the files the policy "
                        "names: what it reveals cannot be seen", index)
            if "--" in inv.argv[index:] and inv.argv[-1] != "--":  # `op run -- CMD`: CMD runs with them
                inv.run(inv.argv.index("--", index) + 1)
            elif inv.name == "aws-vault" and word == "exec":  # `aws-vault exec PROFILE CMD`
                operands = [at for at in range(index + 1, len(inv.argv)) if inv.argv[at][:1] != "-"]
                if len(operands) > 1:
                    inv.run(operands[1])
            return
        if word[:1] != "-" and inv.name not in ("kwallet-query", "op", "bw"):
            break  # (the first word names the subcommand)
    default_model(inv)


register(" ".join(_GPG_STORES), model_gpg_store)
register(" ".join(_VAULTS), model_vault)
