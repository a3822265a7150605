"""A space's answer page across its studies (`coatsearch answer`), read from their summary.json files alone."""
