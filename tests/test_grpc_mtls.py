"""Mutual TLS between the services (issue 14), with a CA and certificates this test makes:
a client with a certificate from the CA is served; one without, or from another CA, is not."""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from evomem.adapters.grpc.clients import GrpcStorage
from evomem.adapters.sqlite.store import SQLiteStore
from evomem.app.storage import LocalStorage
from evomem.domain.errors import EvoMemError
from evomem.entrypoints.grpc.server import RunningServer, create_server
from evomem.entrypoints.grpc.servicers import StorageServicer
from evomem.ops.runtime import ConfigError
from evomem.security.configure import grpc_listen_peer, grpc_peer
from evomem.security.peer import TlsFiles
from evomem.settings import Settings
from evomem.v1 import storage_pb2_grpc

PEM = serialization.Encoding.PEM


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def make_ca(cn: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(cn))
        .issuer_name(_name(cn))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return key, cert


def issue(ca: tuple[ec.EllipticCurvePrivateKey, x509.Certificate], cn: str, folder: Path) -> TlsFiles:
    ca_key, ca_cert = ca
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(cn))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ca.pem").write_bytes(ca_cert.public_bytes(PEM))
    (folder / "cert.pem").write_bytes(cert.public_bytes(PEM))
    (folder / "key.pem").write_bytes(
        key.private_bytes(PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return TlsFiles.load(str(folder / "ca.pem"), str(folder / "cert.pem"), str(folder / "key.pem"))


@pytest.fixture
def pki(tmp_path: Path) -> dict[str, TlsFiles]:
    ca, rogue = make_ca("evomem test CA"), make_ca("someone else")
    return {
        "server": issue(ca, "storage", tmp_path / "server"),
        "client": issue(ca, "gateway", tmp_path / "client"),
        "rogue": issue(rogue, "gateway", tmp_path / "rogue"),
    }


@pytest.fixture
def storage(tmp_path: Path, pki: dict[str, TlsFiles]) -> Iterator[RunningServer]:
    store = SQLiteStore(tmp_path / "s.db")
    running = create_server(
        "127.0.0.1:0",
        lambda s: storage_pb2_grpc.add_StorageServiceServicer_to_server(StorageServicer(LocalStorage(store)), s),
        ("evomem.v1.StorageService",),
        tls=pki["server"],
        secret="and-a-secret",
    )
    running.set_serving(True)
    yield running
    running.stop(0)
    store.close()


def test_only_a_client_certified_by_the_ca_is_served(storage: RunningServer, pki: dict[str, TlsFiles]) -> None:
    addr = f"127.0.0.1:{storage.port}"
    good = GrpcStorage(addr, timeout_s=5, tls=pki["client"], secret="and-a-secret")
    assert good.stats().schema_version > 0
    good.close()
    refused = [
        GrpcStorage(addr, timeout_s=3, tls=pki["rogue"], secret="and-a-secret"),  # another CA
        GrpcStorage(addr, timeout_s=3, secret="and-a-secret"),  # plaintext
        GrpcStorage(addr, timeout_s=3, tls=pki["client"]),  # the certificate, but not the secret
    ]
    for client in refused:
        with pytest.raises(EvoMemError):
            client.stats()
        client.close()


def test_settings_turn_mutual_tls_on(tmp_path: Path, pki: dict[str, TlsFiles]) -> None:
    folder = tmp_path / "server"
    files = {f"grpc_tls_{k}": str(folder / f"{k}.pem") for k in ("ca", "cert", "key")}
    settings = Settings(grpc_host="0.0.0.0", **files)
    peer = grpc_listen_peer(settings)  # TLS alone is enough to expose a service
    assert peer["tls"] == pki["server"] and peer["secret"] is None
    assert "BEGIN" not in repr(peer["tls"])
    with pytest.raises(ConfigError, match="all three"):
        grpc_peer(Settings(grpc_tls_ca=str(folder / "ca.pem")))
    with pytest.raises(ConfigError, match="cannot read"):
        grpc_peer(Settings(grpc_tls_ca="/nope/ca.pem", grpc_tls_cert="/nope/c.pem", grpc_tls_key="/nope/k.pem"))
