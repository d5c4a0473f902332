"""The fuzzing campaign (issue 36, "Hostile input"): valid requests for every served (API,
version), built from the schemas the broker serves and mutated field by field, then byte by byte,
sent to a live broker on a plaintext and a SASL listener, before and after logging in.

Beside the nemesis suite because it is one more fault a broker must survive — hostile input — and
is run the same way: a short seeded run in the test command (test_fuzz.py), a long one from
scripts/ (scripts/fuzz_long_run.py, results in docs/fuzzing.md)."""
