n = int(input())
total = 0
for k in range(1, n + 1):
    total += k
print(total)
