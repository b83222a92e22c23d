"""colo's Python side: plots of the results colo writes (plots.py)."""
