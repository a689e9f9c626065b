"""The scripted runtime (W14): deterministic scripts carried in the run input."""
