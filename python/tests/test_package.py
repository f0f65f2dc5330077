"""The package imports, exposes its API with docstrings, and ships type stubs."""

import pathlib

import subevict


def test_import_and_version():
    assert subevict.__version__ == "0.1.0"
    assert set(subevict.__all__) <= set(dir(subevict))


def test_every_public_callable_has_a_docstring():
    for name in subevict.__all__:
        obj = getattr(subevict, name)
        assert obj.__doc__, name


def test_type_stubs_ship_beside_the_module():
    stub = pathlib.Path(subevict._subevict.__file__).with_name("_subevict.pyi")
    text = stub.read_text()
    assert "def offline_optimum(" in text and "class Workload" in text
    assert (pathlib.Path(subevict.__file__).parent / "py.typed").is_file()


def test_presets_and_policies_are_listed():
    names = [p["name"] for p in subevict.presets()]
    assert "llama2-7b" in names and "tiny" in names
    assert "h2o" in subevict.policy_names()
    keys = [p["key"] for p in subevict.policy_parameters("h2o")]
    assert keys == ["heavy", "recent"]
