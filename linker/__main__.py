"""``python -m linker``: the command line of :mod:`linker.cli`."""

from linker.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
