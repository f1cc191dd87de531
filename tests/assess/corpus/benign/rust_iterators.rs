fn main() {
    let words = ["alpha", "beta", "gamma", "delta"];
    let joined: String = words
        .iter()
        .filter(|w| w.len() > 4)
        .map(|w| w.to_uppercase())
        .collect::<Vec<_>>()
        .join("-");
    let total: usize = words.iter().map(|w| w.len()).sum();
    println!("{joined} {total}");
}
