const chunks = [];
function grow() {
  while (true) {
    const buf = Buffer.alloc(16 * 1024 * 1024, 1);
    chunks.push(buf);
  }
}
grow();
