"""Settings for test stacks whose turns run shell and http_get without a person deciding.

Both tools ask for approval by their own declaration, whatever APPROVAL_TOOLS says; a test
that is not about approval waives that the way a deployment would, explicitly. A test about
approval sets APPROVAL_WAIVED_TOOLS="" (or leaves the stack's defaults out); W222, the person
who starts the tests' sessions, is then the approver, unless the test says who is.
"""

APPROVER = "W222"
UNATTENDED = {"APPROVAL_TOOLS": "", "APPROVAL_WAIVED_TOOLS": "shell,http_get", "SLACK_APPROVERS": APPROVER}
