#!/usr/bin/env bash
# The five most frequent words on stdin, with coreutils and awk (hazmat run wordfreq.sh --stdin FILE)
tr -cs '[:alpha:]' '\n' | tr '[:upper:]' '[:lower:]' | awk 'length > 2' \
    | sort | uniq -c | sort -rn | head -n 5
printf '%s\n' '{"tool": "jq", "ok": true}' | jq -c '.ok'
