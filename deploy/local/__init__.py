"""The local stack launcher: ``python -m deploy.local`` (what ``make run`` runs)."""
