"""srt settings: export goldens accepted by the real sandbox-runtime, import, round trip."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from tests.integrations.helpers import (
    CONTEXT,
    CONTEXT_ARGS,
    EXAMPLES,
    FIXTURES,
    GOLDEN,
    PROBE_HOSTS,
    PROBE_PATHS,
    check_golden,
    compile_text,
    fixture,
    stockade,
)

SRT_VERSION = "0.0.83"


@pytest.mark.parametrize("example", EXAMPLES)
def test_export_golden(example: str) -> None:
    result = stockade("export", "--to", "srt", f"examples/{example}.policy", *CONTEXT_ARGS)
    assert result.returncode == 0, result.stderr
    check_golden(GOLDEN / "srt" / f"{example}.json", result.stdout.decode())
    assert b"srt has no command rules" in result.stderr


@pytest.mark.parametrize("example", EXAMPLES)
def test_export_matches_the_ir_on_every_rule(example: str) -> None:
    from stockade.compiler.pipeline import compile_policy
    from stockade.integrations.base import probe_paths
    from stockade.integrations.srt import SrtModel

    ir = compile_policy(f"examples/{example}.policy", **CONTEXT).ir
    model = SrtModel.from_settings(json.loads((GOLDEN / "srt" / f"{example}.json").read_text()), CONTEXT["home"],
                                   CONTEXT["workspace"])
    for _, probe in probe_paths(ir):
        assert model.path_access(probe) == ir.path_access(probe).access, probe
    for rule in ir.network.rules:
        if rule.host.kind in ("host", "domain"):
            host = rule.host.value if rule.host.kind == "host" else f"x.{rule.host.value}"
            assert model.host_allowed(host, 443) == ir.network_access(host, 443).allowed, host


@pytest.fixture(scope="module")
def srt_loader(tmp_path_factory):  # type: ignore[no-untyped-def]
    """The config loader of the real @anthropic-ai/sandbox-runtime, installed into a temp dir."""
    if not shutil.which("node") or not shutil.which("npm"):
        pytest.skip("node/npm not installed: cannot install @anthropic-ai/sandbox-runtime")
    where = tmp_path_factory.mktemp("srt")
    try:
        done = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", str(where),
                               f"@anthropic-ai/sandbox-runtime@{SRT_VERSION}"], capture_output=True,
                              env=dict(os.environ, npm_config_cache=str(where / "npm-cache")),  # not ~/.npm
                              timeout=240)
    except subprocess.TimeoutExpired:
        pytest.skip("npm install of @anthropic-ai/sandbox-runtime timed out (no registry access?)")
    if done.returncode != 0:
        pytest.skip(f"npm install of @anthropic-ai/sandbox-runtime failed: {done.stderr.decode()[-300:]}")
    loader = where / "node_modules/@anthropic-ai/sandbox-runtime/dist/utils/config-loader.js"
    script = where / "check.mjs"
    script.write_text(f"import {{ loadConfig }} from '{loader}';\n"
                      "console.log(JSON.stringify(loadConfig(process.argv[2])));\n")
    return lambda path: json.loads(subprocess.run(["node", str(script), str(path)], capture_output=True,
                                                  timeout=60, check=True).stdout)


@pytest.mark.parametrize("example", EXAMPLES)
def test_real_srt_accepts_the_export(srt_loader, example: str) -> None:  # type: ignore[no-untyped-def]
    assert srt_loader(GOLDEN / "srt" / f"{example}.json")["kind"] == "ok"


def test_real_srt_rejects_what_it_should(srt_loader, tmp_path) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"network": {"allowedDomains": ["*"], "deniedDomains": []},
                               "filesystem": {"denyRead": [], "allowWrite": [], "denyWrite": []}}))
    assert srt_loader(bad)["kind"] == "invalid"


def test_import_and_round_trip() -> None:
    from stockade.integrations import export_ir
    from stockade.integrations.srt import SrtModel

    result = stockade("import", "--from", "srt", str(FIXTURES / "srt_sample.json"), "--home", "/home/dev")
    assert result.returncode == 0, result.stderr
    text = result.stdout.decode()
    assert "# from srt_sample.json:9: filesystem.allowWrite `.`" in text
    ir = compile_text(text)
    original = json.loads(fixture("srt_sample.json"))
    again = export_ir(ir, "srt").data
    before = SrtModel.from_settings(original, CONTEXT["home"], CONTEXT["workspace"])
    after = SrtModel.from_settings(again, CONTEXT["home"], CONTEXT["workspace"])
    for path in PROBE_PATHS:
        assert before.path_access(path) == after.path_access(path) == ir.path_access(path).access, path
    for host, port in PROBE_HOSTS:
        assert before.host_allowed(host, port) == after.host_allowed(host, port) \
            == ir.network_access(host, port).allowed, (host, port)


def test_import_malformed_is_located() -> None:
    result = stockade("import", "--from", "srt", "tests/integrations/fixtures/srt_bad.json")
    assert result.returncode == 2
    assert b"srt_bad.json:2:15: error[X611]: `allowedDomains` must be a list of strings" in result.stderr
