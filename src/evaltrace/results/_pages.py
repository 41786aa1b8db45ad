"""What the self-contained HTML pages (the scorecard, the history) share.

Their templates and assets, and the hash that lets a page's own style and script run under
its Content-Security-Policy.
"""

from __future__ import annotations

import base64
import functools
import hashlib
from importlib.resources import files
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    import jinja2

__all__ = ["asset", "environment", "source_hash"]

_TEMPLATES: Final = "templates"


def source_hash(text: str) -> str:
    """The CSP source of an inline style or script: ``sha256-<base64 of its digest>``.

    Example:
        >>> source_hash("")
        'sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU='
    """
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "sha256-" + base64.b64encode(digest).decode("ascii")


@functools.cache
def asset(name: str) -> str:
    """The text of a file of the pages' templates folder (a stylesheet, a script)."""
    return files("evaltrace.results").joinpath(_TEMPLATES, name).read_text(encoding="utf-8")


@functools.cache
def environment() -> jinja2.Environment:
    """The templates' environment: everything escaped, an undefined name an error."""
    # jinja2 is loaded on first render only: ``import evaltrace`` never pays for it.
    import jinja2

    return jinja2.Environment(
        loader=jinja2.PackageLoader("evaltrace.results", _TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
