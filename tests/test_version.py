"""The version has one home: the package metadata and the server's initialize answer read it."""

import importlib.metadata
import re

import anyio
from mcp import Client

import mcpgen
from mcpgen.serve.registry import Registry
from mcpgen.serve.server import ToolServer
from mcpgen.version import __version__


def test_the_package_and_its_metadata_agree():
    assert mcpgen.__version__ == __version__
    assert re.fullmatch(r"\d+\.\d+\.\d+", __version__)
    assert importlib.metadata.version("mcpgen") == __version__


def test_the_server_announces_it():
    async def initialize():
        async with Client(ToolServer(Registry()).server) as client:
            return client.server_info

    info = anyio.run(initialize)
    assert (info.name, info.version) == ("mcpgen", __version__)
