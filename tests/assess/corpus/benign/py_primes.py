def sieve(limit: int) -> list[int]:
    is_prime = [True] * (limit + 1)
    is_prime[0:2] = [False, False]
    for n in range(2, int(limit**0.5) + 1):
        if is_prime[n]:
            is_prime[n * n :: n] = [False] * len(range(n * n, limit + 1, n))
    return [n for n, p in enumerate(is_prime) if p]


print(sieve(100))
