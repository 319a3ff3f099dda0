"""Settings for test stacks whose turns run shell and http_get without a person deciding.

Both tools ask for approval by their own declaration, whatever APPROVAL_TOOLS says; a test
that is not about approval waives that the way a deployment would, explicitly. A test about
approval sets APPROVAL_WAIVED_TOOLS="" (or leaves the stack's defaults out); W222, the person
who starts the tests' sessions, is then the approver, unless the test says who is.
"""

APPROVER = "W222"
# A test's stack also stops in seconds: at teardown a turn may still run a tool, and the default
# drain (20 s) would let it run for 18 of them (tests about the drain set their own).
TEST_DRAIN_S = "4"
UNATTENDED = {
    "APPROVAL_TOOLS": "",
    "APPROVAL_WAIVED_TOOLS": "shell,http_get",
    "SLACK_APPROVERS": APPROVER,
    "WORKER_DRAIN_SECONDS": TEST_DRAIN_S,
}
