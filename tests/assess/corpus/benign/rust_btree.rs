use std::collections::{BTreeMap, HashSet, VecDeque};

fn main() {
    let mut graph: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for (a, b) in [(1, 2), (1, 3), (2, 4), (3, 4), (4, 5)] {
        graph.entry(a).or_default().push(b);
    }
    let mut seen = HashSet::new();
    let mut queue = VecDeque::from([1]);
    while let Some(n) = queue.pop_front() {
        if !seen.insert(n) {
            continue;
        }
        print!("{n} ");
        for &m in graph.get(&n).map(|v| v.as_slice()).unwrap_or(&[]) {
            queue.push_back(m);
        }
    }
    println!();
}
