"""guardproxy's launcher package.

In a checkout (and an editable install) the code lives in the top-level packages ``proxy``,
``guardrails`` and ``config``. The built wheel puts them under this package instead
(``guardproxy.proxy``, ``guardproxy.guardrails``, ``guardproxy.config``; see ``setup.py``), so an
installed guardproxy adds one name to site-packages, not three common ones (``guardrails`` is also
another project's import name). This package is the entry both layouts share.
"""
