#!/bin/bash
verbose=0
out=result.txt
while getopts "vo:" opt; do
  case $opt in
    v) verbose=1 ;;
    o) out=$OPTARG ;;
    *) echo "usage: $0 [-v] [-o file]" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ "$verbose" -eq 1 ] && echo "writing $out"
printf '%s\n' "$@" | sort > "$out"
