"""``python -m kubesched.cli``: the ``kubesched`` command (``python -m kubesched`` starts faster:
it pauses the garbage collector before this package's modules load)."""

from kubesched._entry import main

main()
