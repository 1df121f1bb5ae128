"""Revision governance (docs/revisions.md): a gated revision store in a real database, approval /
publish / rollback / monitor, and the `submitter=store` hand-off from runs.

Modules: `store` (tables, transactions, reads), `gates` (automatic checks on submission),
`service` (submit, approve, reject, rollback, sweep), `publish` (the managed directory),
`monitor` (re-evaluation of the active revision), `submitter` (the Hydra `_target_`), `cli`.
Importing this package is cheap: SQLAlchemy is only loaded by `store`.
"""
