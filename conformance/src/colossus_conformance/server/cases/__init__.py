"""The server cases, one module per area; importing this package registers them all."""

from . import (  # noqa: F401
    artifacts,
    auth,
    cancel,
    discovery,
    durability,
    hostile,
    http2,
    idempotency,
    interactions,
    isolation,
    lifecycle,
    limits,
    pagination,
    sidecar,
    system,
    tls,
    watch,
)
