// Groups the words on stdin by their letters (Rust 2021, std only).
use std::collections::BTreeMap;
use std::io::{self, Read};

fn main() {
    let mut text = String::new();
    io::stdin().read_to_string(&mut text).unwrap();
    if text.trim().is_empty() {
        text = "listen silent enlist google elgoog inlets".to_string();
    }
    let mut groups: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for word in text.split_whitespace() {
        let mut key: Vec<char> = word.to_lowercase().chars().collect();
        key.sort_unstable();
        groups.entry(key.into_iter().collect()).or_default().push(word);
    }
    for (_, words) in groups.iter().filter(|(_, w)| w.len() > 1) {
        println!("{}", words.join(" "));
    }
}
