"""``python -m elwb_client``: the command line (elwb_client.cli)."""

from elwb_client.cli import main

raise SystemExit(main())
