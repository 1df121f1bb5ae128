"""Revision governance (docs/revisions.md): a gated revision store in a real database, approval /
publish / rollback / monitor, and the `submitter=store` hand-off from runs.

Modules: `store` (tables, transactions, reads), `schema` (Alembic migrations, `migrations/`),
`gates` (automatic checks on submission), `service` (submit, approve, reject, rollback, sweep),
`publish` (the managed directory), `registry` (the MLflow prompt registry view), `monitor`
(re-evaluation of the active revision), `submitter` (the Hydra `_target_`, `seed.from_store` /
`seed.prefer_store`), `ci` (the CI job summary), `cli`.
Importing this package is cheap: SQLAlchemy and Alembic load with `store`.
"""
