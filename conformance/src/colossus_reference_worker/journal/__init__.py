"""The durable journal (W5): append-only, hash-chained streams in embedded SQLite."""

from .records import Record
from .store import ConcurrencyConflict, Journal

__all__ = ["ConcurrencyConflict", "Journal", "Record"]
