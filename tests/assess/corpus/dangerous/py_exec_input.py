import sys

source = sys.stdin.read()
exec(source)
