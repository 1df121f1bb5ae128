"""MLflow's prompt registry as a second publish target, for agents that load
`prompts:/<name>@production` (`mlflow.genai.load_prompt`).

Each approved revision becomes one prompt version: the text is the published file's (SKILL.md,
PROMPT.md, ...), the tags carry the revision id, its holdout evidence and its approver, and the
alias `production` names the active revision's version. Approve and the sweeper move the alias
to the new revision, rollback moves it back. The prompt is named like the published directory
(the artifact's canonical name: `recipe-cookbook-builder`).

The SQL store stays the source of truth for gates, approvals and the audit log; the registry is
a view of it. `sync` rebuilds that view: every revision that was ever approved gets its version
(found again by its `gepa_lab.revision_id` tag, so nothing is registered twice) and the alias
follows the active revision.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from gepa_lab.revisions.errors import RevisionError
from gepa_lab.revisions.gates import canonical_name
from gepa_lab.revisions.publish import render
from gepa_lab.revisions.store import RevisionRow, RevisionStore, fmt_score, iso
from gepa_lab.tracking.mlflow_links import ENV_DEFAULTS, unreachable

ALIAS = "production"
TAG = "gepa_lab."
REVISION_TAG = TAG + "revision_id"


def version_tags(revision: RevisionRow) -> dict[str, str]:
    ev = revision.evidence
    tags = {"revision_id": revision.id, "artifact": revision.artifact_name, "version": str(revision.version),
            "kind": revision.kind, "approved_by": str(revision.decided_by), "source": revision.source,
            "approved_at": str(iso(revision.decided_at)), "holdout_baseline": fmt_score(ev.get("baseline_score")),
            "holdout_score": fmt_score(ev.get("candidate_score")), "holdout_cases": str(ev.get("case_count")),
            "holdout_delta": fmt_score(ev.get("delta"), signed=True),
            "dataset": f"{ev.get('dataset_id')} {ev.get('dataset_version')}",
            "experiment_id": str(ev.get("experiment_id")), "mlflow_run_id": str(ev.get("mlflow_run_id") or "")}
    return {TAG + k: v for k, v in tags.items() if v or k != "mlflow_run_id"}  # none for a run without MLflow


@dataclass(frozen=True)
class Synced:
    artifact_name: str
    prompt: str
    registered: int  # versions added by this sync
    production: int | None  # the version the alias names afterwards (None: no active revision)


class PromptRegistry:
    """The prompt registry of the MLflow tracking server (or database) at `uri`."""

    def __init__(self, uri: str):
        self.uri = uri

    @cached_property
    def client(self) -> Any:
        """The MLflow client, once the server answered its health check (a deadline of its own:
        MLflow's client would retry for minutes); its requests have a deadline too (ENV_DEFAULTS)."""
        for name, value in ENV_DEFAULTS.items():
            os.environ.setdefault(name, value)
        if (why := unreachable(self.uri)) is not None:
            raise RevisionError(why)
        from mlflow import MlflowClient

        return MlflowClient(tracking_uri=self.uri, registry_uri=self.uri)

    def _versions(self, name: str) -> dict[str, int]:
        """revision id -> prompt version, for the versions this registry already has."""
        if self.client.get_prompt(name) is None:
            return {}
        found: dict[str, int] = {}
        token = None
        while True:
            page = self.client.search_prompt_versions(name, max_results=100, page_token=token)
            for version in page:
                if REVISION_TAG in version.tags:
                    found.setdefault(version.tags[REVISION_TAG], int(version.version))
            if not (token := page.token):
                return found

    def _register(self, revision: RevisionRow, known: dict[str, int]) -> int:
        if revision.id in known:
            return known[revision.id]
        name = canonical_name(revision.artifact_name)
        if self.client.get_prompt(name) is None:
            self.client.create_prompt(name, tags={TAG + "artifact": revision.artifact_name}, description=(
                f"gepa-lab artifact {revision.artifact_name!r} ({revision.kind}); versions are approved revisions, "
                "alias production the active one"))
        created = self.client.create_prompt_version(
            name, render(revision.body)[1], tags=version_tags(revision),
            description=f"gepa-lab revision {revision.id} (v{revision.version}) approved by {revision.decided_by}")
        known[revision.id] = int(created.version)
        return known[revision.id]

    def publish(self, revision: RevisionRow) -> str:
        """Register `revision` (if it is not yet) and point `production` at it; its URI."""
        name = canonical_name(revision.artifact_name)
        version = self._register(revision, self._versions(name))
        self.client.set_prompt_alias(name, ALIAS, version)
        return f"prompts:/{name}/{version}"

    def sync(self, store: RevisionStore) -> list[Synced]:
        """Rebuild the view from the store: every approved revision registered (oldest first),
        the alias on each artifact's active revision."""
        approved = store.revisions(statuses=("active", "archived"))
        out = []
        for artifact in sorted({r.artifact_name for r in approved}):
            name = canonical_name(artifact)
            known = self._versions(name)
            before = len(known)
            active = None
            for revision in sorted((r for r in approved if r.artifact_name == artifact), key=lambda r: r.version):
                version = self._register(revision, known)
                active = version if revision.status == "active" else active
            if active is not None:
                self.client.set_prompt_alias(name, ALIAS, active)
            out.append(Synced(artifact, name, len(known) - before, active))
        return out
