"""The cases, one module per SPEC section (sNN_*.py); importing registers them."""
import importlib
import pkgutil

for _m in sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name.startswith("s")):
    importlib.import_module(__name__ + "." + _m)
