"""`python -m gepa_lab.revisions ...` (see `gepa_lab.revisions.cli`)."""

from gepa_lab.core.errors import run_main
from gepa_lab.revisions.cli import main

if __name__ == "__main__":
    run_main(main)
