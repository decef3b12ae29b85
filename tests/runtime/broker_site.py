"""What the broker tests' servers serve: a test CA and a server certificate, a pip simple
index with a tiny wheel, a static npm registry with a tiny package, and a bare git
repository served as dumb HTTP.  Everything is generated into a directory the test owns.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import io
import ipaddress
import json
import subprocess
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

#: The names the server certificate is valid for (all mapped by the tests' resolver).
NAMES = ("pypi.test", "files.test", "registry.test", "git.test", "echo.test", "evil.test", "example.test",
         "api.example.test", "github.com", "github.com.evil.test")


@dataclass
class Site:
    """The generated files: the web root, the CA certificate, the server key pair."""

    root: Path
    ca: Path
    cert: Path
    key: Path


def _certificates(directory: Path, addresses: list[str]) -> tuple[Path, Path, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "stockade test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
          .not_valid_after(now + datetime.timedelta(days=2))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                                       key_encipherment=False, data_encipherment=False, key_agreement=False,
                                       encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = [x509.DNSName(name) for name in NAMES]
    names += [x509.IPAddress(ipaddress.ip_address(a)) for a in addresses]
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, NAMES[0])]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    paths = directory / "ca.pem", directory / "server.pem", directory / "server.key"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return paths


def _wheel(root: Path) -> None:
    """``tinypkg 0.1`` as a wheel, and a PEP 503 simple index for it."""
    files = {"tinypkg/__init__.py": b"VALUE = 'installed through the broker'\n",
             "tinypkg-0.1.dist-info/METADATA": b"Metadata-Version: 2.1\nName: tinypkg\nVersion: 0.1\n",
             "tinypkg-0.1.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                                            b"Tag: py3-none-any\n"}
    record = "".join(
        f"{name},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},{len(data)}\n"
        for name, data in files.items()) + "tinypkg-0.1.dist-info/RECORD,,\n"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
        archive.writestr("tinypkg-0.1.dist-info/RECORD", record)
    wheel = buffer.getvalue()
    (root / "packages").mkdir(parents=True)
    (root / "packages" / "tinypkg-0.1-py3-none-any.whl").write_bytes(wheel)
    digest = hashlib.sha256(wheel).hexdigest()
    (root / "simple" / "tinypkg").mkdir(parents=True)
    (root / "simple" / "index.html").write_text('<html><body><a href="tinypkg/">tinypkg</a></body></html>\n')
    (root / "simple" / "tinypkg" / "index.html").write_text(
        f'<html><body><a href="../../packages/tinypkg-0.1-py3-none-any.whl#sha256={digest}">'
        f"tinypkg-0.1-py3-none-any.whl</a></body></html>\n")


def _npm(root: Path, registry: str) -> None:
    """``tinynpm 1.0.0``: a packument at ``/tinynpm`` and its tarball."""
    package = json.dumps({"name": "tinynpm", "version": "1.0.0", "main": "index.js"}).encode()
    index = b"module.exports = 'installed through the broker';\n"
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in (("package/package.json", package), ("package/index.js", index)):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            archive.addfile(info, io.BytesIO(data))
    tarball = buffer.getvalue()
    (root / "tarballs").mkdir()
    (root / "tarballs" / "tinynpm-1.0.0.tgz").write_bytes(tarball)
    integrity = "sha512-" + base64.b64encode(hashlib.sha512(tarball).digest()).decode()
    packument = {"name": "tinynpm", "dist-tags": {"latest": "1.0.0"}, "versions": {"1.0.0": {
        "name": "tinynpm", "version": "1.0.0", "main": "index.js",
        "dist": {"tarball": f"{registry}/tarballs/tinynpm-1.0.0.tgz", "integrity": integrity,
                 "shasum": hashlib.sha1(tarball).hexdigest()}}}}
    (root / "tinynpm").write_text(json.dumps(packument))


def _git(root: Path, work: Path) -> None:
    """A bare repository ``repo.git`` with one commit, ready for dumb HTTP."""
    env = {"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(work), "PATH": "/usr/bin:/bin",
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    source = work / "source"
    source.mkdir()
    (source / "README").write_text("cloned through the broker\n")
    for args in (["init", "-q", "-b", "main"], ["add", "README"], ["commit", "-q", "-m", "one"]):
        subprocess.run(["git", *args], cwd=source, env=env, check=True, capture_output=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(source), str(root / "repo.git")], env=env, check=True,
                   capture_output=True)
    subprocess.run(["git", "update-server-info"], cwd=root / "repo.git", env=env, check=True, capture_output=True)


def build_site(directory: Path, addresses: list[str]) -> Site:
    """Generate everything into ``directory`` (see the module docstring)."""
    root = directory / "www"
    root.mkdir(parents=True)
    (root / "hello.txt").write_text("hello through the broker\n")
    ca, cert, key = _certificates(directory, addresses)
    _wheel(root)
    _npm(root, "http://registry.test")
    work = directory / "gitwork"
    work.mkdir()
    _git(root, work)
    return Site(root, ca, cert, key)
