"""Webhooks, the agent-run server and identity fuzzed, identity last (:mod:`tests.e2e.fuzzing`
says what and how); and every share of every service fuzzed by one of the modules."""

# The other modules deal their shares on import.
from tests.e2e import fuzzing, test_fuzz_tracking_a, test_fuzz_tracking_b  # noqa: F401
from tests.e2e.fuzzing import fuzz_module

stack, test_no_generated_request_gets_a_server_error = fuzz_module(
    ("webhooks", range(1)), ("agent-accounts", range(2)), ("identity", range(1))
)


def test_every_share_of_every_service_is_fuzzed_by_one_module() -> None:
    every = [(service, n) for service, shares in fuzzing.SHARES.items() for n in range(shares)]
    assert sorted(fuzzing.DEALT) == sorted(every)
