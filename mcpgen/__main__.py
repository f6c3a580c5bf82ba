"""`python -m mcpgen`: the same command line as the `mcpgen` script."""

from .cli import run

__all__ = ["run"]

if __name__ == "__main__":
    run()
