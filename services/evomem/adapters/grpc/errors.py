"""The error vocabulary over gRPC: domain error -> status code + "[code] message", and back."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any, TypeVar

import grpc

from evomem.app import incidents
from evomem.domain.errors import ERRORS_BY_CODE, GRPC_STATUS, EvoMemError, Unavailable

log = logging.getLogger("evomem.grpc")
F = TypeVar("F", bound=Callable[..., Any])


def servicer_method(fn: F) -> F:
    """Wrap a servicer method: domain errors abort with their status code; crashes are INTERNAL."""

    @functools.wraps(fn)
    def wrapper(self: Any, request: Any, context: grpc.ServicerContext) -> Any:
        try:
            return fn(self, request, context)
        except EvoMemError as exc:
            # A class may name its own status (the code in the message still names the class).
            status = getattr(exc, "grpc_status", None) or GRPC_STATUS.get(exc.code, "INTERNAL")
            context.abort(getattr(grpc.StatusCode, status), incidents.for_caller(exc, logger=log))
        except Exception as exc:  # logged with its stack; the caller gets the reference only
            context.abort(grpc.StatusCode.INTERNAL, incidents.unexpected(fn.__name__, exc, logger=log))

    return wrapper  # type: ignore[return-value]


def from_rpc_error(exc: grpc.RpcError, service: str, address: str = "") -> EvoMemError:
    """Rebuild the domain error a servicer raised, so callers see the same error in both wirings.
    A failure with no domain code (the peer down, a deadline, a crash in the transport) names
    the ``service`` and a reference; its ``address`` and gRPC's detail are in the log only."""
    code = exc.code() if hasattr(exc, "code") else None
    details = exc.details() if hasattr(exc, "details") else str(exc)
    details = details or ""
    if details.startswith("[") and "] " in details:
        name, _, message = details[1:].partition("] ")
        cls = ERRORS_BY_CODE.get(name)
        if cls is not None:
            return cls(message)
    # CANCELLED without a domain code comes from a server shutting down under the call (the
    # client never cancels): the service is going away, which the caller sees as unavailable.
    status = code.name if code is not None else "UNKNOWN"
    ref = incidents.record(f"the {service} service at {address or '?'} answered {status}", details, logger=log)
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED):
        return Unavailable(f"the {service} service is unavailable ({status}); retry in a few seconds (ref {ref})")
    return EvoMemError(f"the {service} service failed ({status}) (ref {ref})")
