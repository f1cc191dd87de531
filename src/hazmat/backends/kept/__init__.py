"""Kept sandboxes: a session's container between its calls, and a grader's kept build."""
