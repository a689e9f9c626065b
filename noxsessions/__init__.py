"""nox session modules, one per area of the monorepo; noxfile.py imports every one of them."""
