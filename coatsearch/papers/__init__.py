"""The two papers' claims and their research protocol, a plug-in over analysis/ (which never imports it): the claims
data, the papers' measures, verdicts and judging, registration, earlier looks, test draws, the committed rule
tables, summary.json's reader and the committed-report checks (docs/design.md)."""
