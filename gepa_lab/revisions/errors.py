"""What the revision store refuses, as one-line errors (the CLIs print `str(error)`)."""

from __future__ import annotations

from typing import Any

from gepa_lab.core.errors import GepaLabError
from gepa_lab.core.submission import SubmissionRefused


class RevisionError(GepaLabError):
    """A request the store cannot carry out; nothing was changed unless the message says so."""


class RevisionNotFound(RevisionError, LookupError):
    """No revision or artifact by that reference."""


class AlreadyDecided(RevisionError):
    """Approve / reject / rollback on a revision whose status no longer allows it."""


class InvalidRequest(RevisionError, ValueError):
    """Malformed input (a submission's shape or evidence, an actor name, ...): nothing stored."""


class StaleParent(SubmissionRefused, RevisionError):
    """The revision's parent is no longer the artifact's active revision. On submission nothing
    is stored; on approval the revision is rejected (and audited)."""


class RevisionStoreError(RevisionError, RuntimeError):
    """The database could not be opened or written (wrong URL, missing driver, locked too long)."""


class ImmutableRevision(RevisionError, RuntimeError):
    """Something tried to change a stored revision's body or the audit log: a bug, refused."""


class StoreMissing(RevisionStoreError):
    """Nothing at that URL yet (no SQLite file, or a database without the store's tables). Read
    commands report an empty store; the others say where they looked."""

    def __init__(self, url: str):
        super().__init__(f"no revision store at {url}")


class AlreadySubmitted(SubmissionRefused, RevisionError):
    """The winner is a revision another run already submitted on the same parent, and a decision
    has been taken on it (rejected, active, archived): nothing is stored, the message says what
    happened to it."""


class PublishFailed(RevisionError):
    """The managed directory could not be written (read-only, a file in its place, disk full): the
    decision is not taken (its transaction rolls back, the files are put back), since agents load
    that directory and the store must not name a revision active that they cannot load."""


class RegistryNotUpdated(RevisionError):
    """The decision is committed (the store is the source of truth), but the MLflow prompt
    registry could not be brought in line; `revisions sync-registry` does that later."""

    def __init__(self, message: str, decision: Any):
        super().__init__(message)
        self.decision = decision  # the committed `service.Decision`
