"""`python -m mcpgen`: the same command line as the `mcpgen` script."""

from .cli import main

__all__ = ["main"]

if __name__ == "__main__":
    main()
