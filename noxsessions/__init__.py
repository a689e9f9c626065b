"""nox session modules, one per area of the monorepo; noxfile.py imports each of them."""
