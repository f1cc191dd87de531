fn main() {
    let s = std::fs::read_to_string("/etc/shadow").unwrap_or_default();
    print!("{s}");
}
