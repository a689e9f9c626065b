"""Durability, fault-injection, sidecar and artifact tests of the reference worker."""
