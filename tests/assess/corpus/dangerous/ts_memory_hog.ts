const hoard: Uint8Array[] = [];

function consume(): void {
  while (true) {
    const block = new Uint8Array(32 * 1024 * 1024);
    block.fill(1);
    hoard.push(block);
  }
}
consume();
