"""subevict.models (python/subevict/models/, pure Python) imported from this checkout, for the
scripts that run before the compiled package is built (scripts/export_gguf.py): the same model
code the installed package runs, under the module name `subevict_models`."""

import importlib.util
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(ROOT, "python", "subevict", "models")


def load():
    """The models package of this checkout (imported once)."""
    if "subevict_models" in sys.modules:
        return sys.modules["subevict_models"]
    spec = importlib.util.spec_from_file_location(
        "subevict_models", os.path.join(PACKAGE, "__init__.py"),
        submodule_search_locations=[PACKAGE])
    module = importlib.util.module_from_spec(spec)
    sys.modules["subevict_models"] = module
    spec.loader.exec_module(module)
    return module
