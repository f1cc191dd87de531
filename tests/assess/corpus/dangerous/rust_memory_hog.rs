fn main() {
    let mut keep: Vec<Vec<u8>> = Vec::new();
    loop {
        keep.push(vec![1u8; 1 << 20]);
    }
}
