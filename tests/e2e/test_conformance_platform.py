"""Our platform document's shares, identity's last (:mod:`tests.e2e.conformance` says what
and how)."""

from tests.e2e.conformance import conformance_module, every_share

stack, plans, test_conforms = conformance_module(("platform", every_share("platform")))
