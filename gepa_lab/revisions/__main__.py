"""`python -m gepa_lab.revisions ...` (see `gepa_lab.revisions.cli`)."""

from gepa_lab.revisions.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
