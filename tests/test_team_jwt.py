"""JWTs from an identity provider (issue 14): issuer, audience and JWKS from settings, the
principal from configurable claims. Keys are generated here; PyJWT verifies."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from test_team_auth import INIT, JSON_HEADERS, start_server, stop

from evomem.app.access import Principal
from evomem.ops.runtime import ConfigError
from evomem.security.configure import build_gate
from evomem.security.jwt import JwtVerifier
from evomem.settings import Settings

ISSUER, AUDIENCE = "https://idp.example", "evomem-team"


@pytest.fixture
def keys(tmp_path: Path) -> tuple[rsa.RSAPrivateKey, Path]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    public["kid"] = "k1"
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps({"keys": [public]}))
    return key, path


def sign(key: object, **claims: object) -> str:
    now = int(time.time())
    body = {"iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "iat": now, "exp": now + 300}
    body.update({"evomem_role": "writer", "evomem_namespaces": ["team-a", "shared"]})
    body.update(claims)
    return jwt.encode({k: v for k, v in body.items() if v is not None}, key, algorithm="RS256", headers={"kid": "k1"})


def test_good_tokens_give_their_principal_and_bad_ones_nothing(keys: tuple[rsa.RSAPrivateKey, Path]) -> None:
    key, path = keys
    verifier = JwtVerifier(ISSUER, AUDIENCE, str(path))
    assert verifier.verify(sign(key)) == Principal("alice", "writer", ("team-a", "shared"))
    assert verifier.verify(sign(key, evomem_namespaces="ops shared")) == Principal("alice", "writer", ("ops", "shared"))
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    now = int(time.time())
    ec_key = ec.generate_private_key(ec.SECP256R1())
    bad = [
        sign(key, exp=now - 120),  # expired (beyond the 30 s leeway)
        sign(key, aud="someone-else"),  # wrong audience
        sign(key, iss="https://evil.example"),  # wrong issuer
        sign(other),  # wrong signature
        sign(key, evomem_role="owner"),  # no such role
        sign(key, evomem_role=None),  # no role
        sign(key, evomem_namespaces=[]),  # no namespace
        sign(key, exp=None),  # no expiry
        sign(key, nbf=now + 600),  # not yet valid
        jwt.encode({"iss": ISSUER, "aud": AUDIENCE, "sub": "x", "exp": now + 60, "evomem_role": "admin",
                    "evomem_namespaces": ["*"]}, "an-hmac-secret-nobody-configured-at-all", algorithm="HS256"),
        jwt.encode({"iss": ISSUER, "aud": AUDIENCE, "sub": "x", "exp": now + 60}, ec_key, algorithm="ES256",
                   headers={"kid": "k1"}),  # another key type under the same kid
        "not.a.jwt",
        sign(key)[:-4] + "AAAA",
    ]  # fmt: skip
    assert [verifier.verify(t) for t in bad] == [None] * len(bad)


def test_settings_name_the_claims_and_need_all_three(keys: tuple[rsa.RSAPrivateKey, Path]) -> None:
    key, path = keys
    settings = Settings(
        jwt_issuer=ISSUER, jwt_audience=AUDIENCE, jwt_jwks=str(path), jwt_name_claim="email",
        jwt_role_claim="team_role", jwt_namespaces_claim="spaces",
    )  # fmt: skip
    gate = build_gate(settings, "127.0.0.1", 8765)
    assert gate is not None and gate.verifier.registry is None
    token = sign(key, email="bob@example.com", team_role="reader", spaces=["ops"])
    assert gate.verifier.principal(token) == Principal("bob@example.com", "reader", ("ops",))
    with pytest.raises(ConfigError, match="all three"):
        build_gate(Settings(jwt_issuer=ISSUER), "127.0.0.1", 8765)


def test_the_http_server_accepts_a_signed_jwt_and_refuses_a_wrong_audience(
    tmp_path: Path, keys: tuple[rsa.RSAPrivateKey, Path]
) -> None:
    key, path = keys
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVOMEM_")}
    env.update(EVOMEM_LOG_LEVEL="WARNING", EVOMEM_JWT_ISSUER=ISSUER, EVOMEM_JWT_AUDIENCE=AUDIENCE)
    env["EVOMEM_JWT_JWKS"] = str(path)
    server = start_server(tmp_path, env)
    try:

        def status(token: str) -> int:
            headers = {**JSON_HEADERS, "Authorization": f"Bearer {token}"}
            return httpx2.post(server.url, json=INIT, headers=headers).status_code

        assert status(sign(key)) == 200
        assert status(sign(key, aud="other")) == 401
        assert status(sign(key, exp=int(time.time()) - 3600)) == 401
    finally:
        stop(server)
