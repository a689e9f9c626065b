"""The Colossus reference worker: a durable server for colossus.api.v1alpha1."""

__version__ = "0.1.0"
