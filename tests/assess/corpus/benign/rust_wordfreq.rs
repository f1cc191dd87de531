use std::collections::HashMap;
use std::fs;

fn main() {
    let text = fs::read_to_string("input.txt").expect("input.txt");
    let mut freq: HashMap<String, usize> = HashMap::new();
    for w in text.split_whitespace() {
        *freq.entry(w.to_lowercase()).or_insert(0) += 1;
    }
    let mut top: Vec<_> = freq.into_iter().collect();
    top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    for (w, n) in top.iter().take(10) {
        println!("{w} {n}");
    }
}
