import sys

def main():
    total = 0
    while True:
        line = sys.stdin.readline()
        if not line:
            break
        total += int(line.strip() or 0)
    print("total", total)

main()
