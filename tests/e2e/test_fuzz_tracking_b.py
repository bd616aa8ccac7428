"""Tracking's last four shares fuzzed (:mod:`tests.e2e.fuzzing` says what and how)."""

from tests.e2e.fuzzing import fuzz_module

stack, test_no_generated_request_gets_a_server_error = fuzz_module(("tracking", range(4, 8)))
