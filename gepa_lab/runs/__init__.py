"""What a run keeps in its directory: the run record, the checkpoint and the evaluation cache.
Each module owns its own files; nobody else parses them."""
