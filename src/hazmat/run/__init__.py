"""The pipeline's stages, in the order `Sandbox.execute_in` takes them (sandbox.py):

- intake.py: a caller's options -> an `ExecutionRequest`, checked once: its `Checked` (the
  limits, image, runtime, override reason and hosts it gets) travels with it (the options
  themselves, and the checks on names, paths, env and args, are options/)
- image_choice.py: the image a run gets at its trust level
- module_kind.py: ES module or CommonJS, for JavaScript and TypeScript
- job.py: the backend's `Job` for a plan
- results.py: the backend's report -> an `ExecutionResult` (outcome, notes)
- missing_package.py: the note that says how to get a missing package
- late_semgrep.py: Semgrep after the run, when the policy asks for it

Public: `admit` (intake.py), as `hazmat.admit`, the policy-only admission step. The rest is the
pipeline's own: `Sandbox` (sandbox.py) takes the stages in order, sessions/ admits its calls and
resolves its image here, and grade/'s harness lengthens an interactor's checked request
(`for_harness`); front-ends use `Sandbox`, `Session` and `hazmat.admit`.
"""
