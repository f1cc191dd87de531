#!/bin/bash
: "${THREADS:=2}"
: "${LANG_CODE:=en}"
echo "threads=$THREADS lang=$LANG_CODE home=$HOME"
export RESULT_DIR=./results
mkdir -p "$RESULT_DIR"
date +%Y-%m-%d > "$RESULT_DIR/stamp"
