"""Grading: tasks with test cases in, verdicts out (docs/batch.md).

tasks.py reads and checks task lines, compare.py judges output, grader.py grades one task
through a `Sandbox`, many.py grades many at once and keeps a results file safe to resume;
schema.py holds the documented JSON Schemas (`python -m hazmat.grade.schema` prints them).
"""
