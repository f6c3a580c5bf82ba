"""The public API: `mcpgen.__all__`, each name loaded on first use, and what the docs import from it."""

import pytest

import mcpgen


def test_all_names_what_the_docs_promise():
    assert sorted(mcpgen.__all__) == [
        "DataToolOutput",
        "DataToolPayload",
        "NeedsInput",
        "Registry",
        "__version__",
        "ask",
        "identity",
        "registry",
    ]
    for name in mcpgen.__all__:
        assert getattr(mcpgen, name) is not None


def test_each_name_is_the_thing_it_stands_for():
    from mcpgen import identity as identity_module
    from mcpgen.answer.results import DataToolOutput, DataToolPayload
    from mcpgen.serve.registry import Registry, default_registry

    assert mcpgen.DataToolOutput is DataToolOutput and mcpgen.DataToolPayload is DataToolPayload
    assert mcpgen.Registry is Registry and mcpgen.registry is default_registry
    assert identity_module.current().subject is None  # anonymous outside a call


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="module 'mcpgen' has no attribute 'Tool'"):
        mcpgen.Tool  # noqa: B018


def test_star_import_gives_exactly_all():
    namespace: dict = {}
    exec("from mcpgen import *", namespace)
    assert sorted(k for k in namespace if not k.startswith("__")) == [
        "DataToolOutput",
        "DataToolPayload",
        "NeedsInput",
        "Registry",
        "ask",
        "identity",
        "registry",
    ]
