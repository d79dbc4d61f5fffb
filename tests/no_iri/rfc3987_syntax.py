"""Stands in for rfc3987_syntax in the Ray processes the tests start (tests/conftest.py says
why): importing it fails, so jsonschema leaves out its optional "iri" format check, as it does
wherever rfc3987_syntax is not installed."""
raise ImportError("rfc3987_syntax is left out of the test's Ray processes (tests/conftest.py)")
