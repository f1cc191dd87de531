def matmul(a, b):
    return [[sum(x * y for x, y in zip(row, col)) for col in zip(*b)] for row in a]


def identity(n):
    return [[1 if i == j else 0 for j in range(n)] for i in range(n)]


m = [[1, 2], [3, 4]]
print(matmul(m, identity(2)))
print(matmul(m, m))
