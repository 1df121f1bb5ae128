"""`submitter=store` (conf/submitter/store.yaml): hands eligible winners to the revision store. It
never publishes: a submitted revision waits for a named person's approval.

The constructor's keyword arguments are the config keys. It only checks them (no database is
opened and SQLAlchemy is not imported) because the default submitter is built for every run,
`submit=false` included.
"""

from __future__ import annotations

import logging
from contextlib import suppress
from typing import Any

from gepa_lab.core.artifacts import Artifact, artifact_from_dict
from gepa_lab.core.errors import ConfigError
from gepa_lab.core.submission import Lineage, SubmissionRequest
from gepa_lab.revisions.errors import RevisionStoreError, StoreMissing
from gepa_lab.revisions.urls import DEFAULT_STORE_URL, check_store_url

log = logging.getLogger("gepa_lab")


class StoreSubmitter:
    """Submits to the revision store at `url`; its gates decide pending_approval / pending_eval /
    rejected. `min_holdout_score` is the EffectivenessGate's bar; `artifact_name` names artifacts
    whose kind has no name field (prompt, routing_policy, texts)."""

    def __init__(self, url: str = DEFAULT_STORE_URL, min_holdout_score: float = 0.8,
                 artifact_name: str | None = None):
        self.url = check_store_url(url)
        # The range check also refuses NaN and infinities (every comparison with NaN is false).
        if isinstance(min_holdout_score, bool) or not isinstance(min_holdout_score, int | float) or not (
                0 <= min_holdout_score <= 1):
            raise ValueError(f"submitter.min_holdout_score must be a number between 0 and 1 "
                             f"(got {min_holdout_score!r})")
        if artifact_name is not None and (not isinstance(artifact_name, str) or not artifact_name.strip()):
            raise ValueError(f"submitter.artifact_name must be a non-empty name or null (got {artifact_name!r})")
        self.min_holdout_score = float(min_holdout_score)
        self.artifact_name = artifact_name

    def _name(self, artifact: dict[str, Any]) -> str | None:
        own = artifact.get("name")
        return own if isinstance(own, str) and own.strip() else self.artifact_name

    def preflight(self, seed: Artifact) -> None:
        """Before the run pays for anything: the winner will have a name in the store, and the store
        opens (a store that does not exist yet is created at the first submission, not now)."""
        from gepa_lab.revisions.store import RevisionStore

        if self._name(seed.to_dict()) is None:
            raise ConfigError(f"submit=true needs submitter.artifact_name: a {seed.kind} artifact has no name of its "
                              "own to file its revisions under (set submitter.artifact_name=<name>)")
        with suppress(StoreMissing), RevisionStore(self.url, create=False):
            pass

    def lineage(self, artifact: dict[str, Any], seed_id: str) -> Lineage:
        from gepa_lab.revisions.store import RevisionStore

        with RevisionStore(self.url) as store:
            return store.lineage(seed_id, self._name(artifact))

    def submit(self, request: dict[str, Any]) -> dict[str, Any]:
        from gepa_lab.revisions import service
        from gepa_lab.revisions.store import RevisionStore

        parsed = SubmissionRequest.from_dict(request)
        with RevisionStore(self.url) as store:
            submission = service.submit(store, parsed, artifact_name=self.artifact_name,
                                        min_holdout_score=self.min_holdout_score)
            return {**submission.to_dict(), "store": store.display_url}


def active_seed(artifact_name: str | None, store_url: str | None = None, submitter: object = None, *,
                fallback: Artifact | None = None) -> Artifact:
    """The seed from the revision store: the artifact's active revision, read from `store_url`,
    else the submitter's store, else the default store.

    `seed.from_store=<name>` (no `fallback`): that revision must exist. `seed.prefer_store=true`
    (`fallback` = the seed file's artifact): the active revision of the seed's own artifact if
    the store has one, else the seed file itself, so one setting serves the first run on an
    empty store and every run after it."""
    from gepa_lab.revisions.store import RevisionStore

    name = artifact_name or getattr(fallback, "name", None) or getattr(submitter, "artifact_name", None)
    key = f"seed.from_store={name!r}" if artifact_name else "seed.prefer_store=true"
    if not name:
        raise ConfigError("seed.prefer_store=true needs the artifact's name in the store: the seed has no name field; "
                          "set submitter.artifact_name=<name> or seed.from_store=<name>")
    url = check_store_url(store_url, "seed.store") if store_url else getattr(submitter, "url", None)
    try:
        store = RevisionStore(url or check_store_url(DEFAULT_STORE_URL), create=False)
    except StoreMissing as exc:
        if fallback is not None:
            log.info("%s: %s yet; the seed is the seed file", key, exc)
            return fallback
        raise RevisionStoreError(f"{key}: {exc}; point seed.store=URL or submitter.url=URL at the team's store (or "
                                 "use seed.prefer_store=true to start from the seed file while it has none)") from exc
    with store:
        if (active := store.active(name)) is not None:
            log.info("%s: the seed is revision %s (%s v%d) from %s", key, active.id[:12], name, active.version,
                     store.display_url)
            return artifact_from_dict(active.body)
        if fallback is not None:
            log.info("%s: %s has no active revision of %r; the seed is the seed file", key, store.display_url, name)
            return fallback
        known = ", ".join(repr(n) for n in sorted({r.artifact_name for r in store.revisions()})) or "none"
        raise ConfigError(f"{key}: no active revision of that artifact in {store.display_url} (artifacts: {known})")
