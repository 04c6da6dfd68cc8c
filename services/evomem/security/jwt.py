"""Signed JWTs from a team's identity provider, as an alternative to the token file.

With EVOMEM_JWT_ISSUER, EVOMEM_JWT_AUDIENCE and EVOMEM_JWT_JWKS set, a bearer token that is
a JWT is accepted when PyJWT verifies it: signature by a key of the JWKS (a URL, fetched and
cached by ``PyJWKClient``, or a local JSON file), an asymmetric algorithm only (RS256, ES256,
EdDSA and friends; never ``none`` or HMAC), ``exp``/``nbf``/``iat`` in range, ``iss`` and
``aud`` equal to the settings. The principal comes from configurable claims: the identity
(default ``sub``), the role (``evomem_role``: reader, writer or admin) and the namespaces
(``evomem_namespaces``: a list, or a space-separated string). A token missing any of them
is refused, like a bad signature: the caller gets 401.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jwt

from evomem.app.access import ROLES, Principal

log = logging.getLogger("evomem.jwt")

ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"]
LEEWAY_S = 30


class JwtVerifier:
    def __init__(
        self,
        issuer: str,
        audience: str,
        jwks: str,
        *,
        name_claim: str = "sub",
        role_claim: str = "evomem_role",
        namespaces_claim: str = "evomem_namespaces",
    ) -> None:
        self.issuer = issuer
        self.audience = audience
        self.claims = (name_claim, role_claim, namespaces_claim)
        if jwks.startswith(("https://", "http://")):
            self._client: jwt.PyJWKClient | None = jwt.PyJWKClient(jwks, cache_keys=True, lifespan=300)
            self._keys: jwt.PyJWKSet | None = None
        else:
            self._client = None
            self._keys = jwt.PyJWKSet.from_dict(json.loads(Path(jwks).expanduser().read_text(encoding="utf-8")))

    def _key(self, token: str) -> Any:
        if self._client is not None:
            return self._client.get_signing_key_from_jwt(token).key
        assert self._keys is not None
        kid = jwt.get_unverified_header(token).get("kid")
        for key in self._keys.keys:
            if kid is None or key.key_id == kid:
                return key.key
        raise jwt.InvalidKeyError(f"no key {kid!r} in the JWKS")

    def verify(self, token: str) -> Principal | None:
        try:
            claims = jwt.decode(
                token,
                self._key(token),
                algorithms=ALGORITHMS,
                audience=self.audience,
                issuer=self.issuer,
                leeway=LEEWAY_S,
                options={"require": ["exp", "iss", "aud"]},
            )
        except (jwt.PyJWTError, ValueError, KeyError, TypeError) as exc:  # TypeError: a key of another type
            log.debug("JWT refused: %s", exc)
            return None
        return self._principal(claims)

    def _principal(self, claims: Mapping[str, Any]) -> Principal | None:
        name_claim, role_claim, spaces_claim = self.claims
        name, role, spaces = claims.get(name_claim), claims.get(role_claim), claims.get(spaces_claim)
        if isinstance(spaces, str):
            spaces = spaces.split()
        if not isinstance(name, str) or not name or role not in ROLES:
            return None
        if not isinstance(spaces, list) or not spaces or not all(isinstance(s, str) and s for s in spaces):
            return None
        try:
            return Principal(name[:100], role, tuple(spaces))
        except ValueError:
            return None
