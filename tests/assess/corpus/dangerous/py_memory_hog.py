def fill_memory():
    blocks = []
    while True:
        block = bytearray(64 * 1024 * 1024)
        for offset in range(0, len(block), 4096):
            block[offset] = 1
        blocks.append(block)

fill_memory()
