"""The server cases, one module per area; importing this package registers them all.

The registry (``catalogue``) knows nothing of the modules that fill it: ``load`` lives here,
above both, so no module imports the package that imports it.
"""

from ..catalogue import CATALOGUE, ServerCase
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


def load() -> list[ServerCase]:
    """Every case, in the order the modules define them."""
    return list(CATALOGUE)
