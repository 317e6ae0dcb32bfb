"""``python -m kubesched.testing``: the local API server in its own process (see
:func:`kubesched.testing.apiserver.main`). Run as the package, not as ``-m
kubesched.testing.apiserver``, whose package ``__init__`` imports the module first (runpy then
warns that it was already imported)."""

from kubesched.testing.apiserver import main

if __name__ == "__main__":  # pragma: no cover - exercised by the live benches
    main()
