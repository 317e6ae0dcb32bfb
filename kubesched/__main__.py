"""``python -m kubesched``: the ``kubesched`` command."""

from kubesched._entry import main

main()
