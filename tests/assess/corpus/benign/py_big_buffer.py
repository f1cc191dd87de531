import array

# 100 million bytes, once: a sieve large enough to be worth timing
limit = 100_000_000
sieve = bytearray([1]) * (limit + 1)
sieve[0:2] = b"\x00\x00"
for i in range(2, int(limit ** 0.5) + 1):
    if sieve[i]:
        sieve[i * i :: i] = bytes(len(range(i * i, limit + 1, i)))
print(sum(sieve))
counts = array.array("i", [0] * 1000)
print(len(counts))
