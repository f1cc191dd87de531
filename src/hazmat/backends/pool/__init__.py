"""The warm pool: sandboxes started ahead of the jobs that take them, and its sizing."""
