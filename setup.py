"""How the distribution maps the checkout's packages (everything else is in pyproject.toml).

A checkout, and ``pip install -e .``, keep ``proxy``, ``guardrails`` and ``config`` as top-level
packages. A built wheel (``python -m build``) nests them under ``guardproxy`` and rewrites their
absolute imports (``from proxy.x`` -> ``from guardproxy.proxy.x``) and the few strings that name a
module (a uvicorn factory path, ``resources.files``, ``import_module``), so site-packages gains one
name. Why a rewrite and not relative imports: ``proxy``, ``guardrails`` and ``config`` import each
other, and relative imports cannot cross top-level packages in a checkout. ``tests/project/test_wheel.py``
builds the wheel, installs it alone in a fresh virtual environment and serves a guarded stream.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

NESTED = ("proxy", "guardrails", "config")
_NAMES = "|".join(NESTED)
_IMPORT = re.compile(rf"^(\s*)(from|import) ({_NAMES})(?=[.\s])", re.MULTILINE)
_PLAIN_IMPORT = re.compile(rf"^\s*import ({_NAMES})(\.[\w.]+)?\s*$", re.MULTILINE)
_STRINGS = [
    re.compile(rf"(resources\.files\()([\"'])({_NAMES})\b"),
    re.compile(rf"(import_module\(f?)([\"'])({_NAMES})(?=\.)"),
    re.compile(rf"()([\"'])({_NAMES})(?=(?:\.\w+)+:\w+[\"'])"),  # "module.path:attribute"
]


def nest(source: str) -> str:
    """``source`` with its references to the three packages moved under ``guardproxy``."""
    if _PLAIN_IMPORT.search(source):  # ``import proxy.x`` binds ``proxy``: a rewrite would rebind it
        raise ValueError("use 'from ... import' or 'import ... as' for guardproxy's own packages")
    source = _IMPORT.sub(r"\1\2 guardproxy.\3", source)
    for pattern in _STRINGS:
        source = pattern.sub(r"\1\2guardproxy.\3", source)
    return source


class NestedBuild(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        root = Path(self.build_lib)
        for name in NESTED:
            if (root / name).exists():
                shutil.move(str(root / name), str(root / "guardproxy" / name))
        for path in (root / "guardproxy").rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            nested = nest(text)
            if nested != text:
                path.write_text(nested, encoding="utf-8")


setup(cmdclass={"build_py": NestedBuild})
